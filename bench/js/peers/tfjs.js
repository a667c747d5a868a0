// @tensorflow/tfjs-core + @tensorflow/tfjs-backend-wasm composing the same
// math (matMul, add, reshape, transpose, softmax), single-threaded: the
// non-threaded SIMD .wasm (WASM_HAS_MULTITHREAD_SUPPORT = false) and
// setThreadsCount(1). Weights, inputs and masks are tensors created once
// (resident in the backend's heap); each call reads the output back with
// dataSync(), as a caller would. `attention` is also what training.js
// differentiates.
import { once, packageDir } from './loading.js';

export const loadTf = once(async () => {
  const tf = await import('@tensorflow/tfjs-core');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  wasm.setWasmPaths(packageDir('@tensorflow/tfjs-backend-wasm'));
  wasm.setThreadsCount(1);
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  tf.env().set('WASM_HAS_SIMD_SUPPORT', true);
  await tf.setBackend('wasm');
  await tf.ready();
  return tf;
});

export async function createTfjs(data) {
  const tf = await loadTf();
  const { d, heads: H, tq, tk, causal, cacheLen } = data;
  const dh = d / H;
  const t = {
    wq: tf.tensor2d(data.wq, [d, d]),
    wk: tf.tensor2d(data.wk, [d, d]),
    wv: tf.tensor2d(data.wv, [d, d]),
    wo: tf.tensor2d(data.wo, [d, d]),
    bq: tf.tensor1d(data.bq),
    bk: tf.tensor1d(data.bk),
    bv: tf.tensor1d(data.bv),
    bo: tf.tensor1d(data.bo),
    xq: tf.tensor2d(data.xq, [tq, d]),
    xkv: data.cross ? tf.tensor2d(data.xkv, [tk, d]) : null,
    pastK: cacheLen > 0 ? tf.tensor2d(data.pastK, [cacheLen, d]) : null,
    pastV: cacheLen > 0 ? tf.tensor2d(data.pastV, [cacheLen, d]) : null,
    scale: tf.scalar(1 / Math.sqrt(dh)),
    mask: null,
  };
  if (causal) {
    const m = new Float32Array(tq * tk);
    for (let i = 0; i < tq; i++) for (let j = i + (tk - tq) + 1; j < tk; j++) m[i * tk + j] = -1e9;
    t.mask = tf.tensor2d(m, [tq, tk]);
  }
  const forward = () => tf.tidy(() => attention(tf, t, data));
  return {
    name: 'tfjs-wasm',
    run() {
      const out = forward();
      const values = out.dataSync();
      out.dispose();
      return values;
    },
    dispose() {
      for (const x of Object.values(t)) x?.dispose();
    },
    backendInfo: () => ({ backend: tf.getBackend(), threads: 1 }),
  };
}

// The attention of `t`'s tensors (xq, xkv (or none: self-attention), the
// weights and biases, scale, mask, pastK/pastV) as tfjs ops; `shape` has
// d, heads, tq and tk.
export function attention(tf, t, { d, heads: H, tq, tk }) {
  const dh = d / H;
  const xkv = t.xkv ?? t.xq;
  const q = tf.add(tf.matMul(t.xq, t.wq), t.bq);
  let k = tf.add(tf.matMul(xkv, t.wk), t.bk);
  let v = tf.add(tf.matMul(xkv, t.wv), t.bv);
  if (t.pastK) {
    k = tf.concat([t.pastK, k], 0);
    v = tf.concat([t.pastV, v], 0);
  }
  const qh = tf.transpose(tf.reshape(q, [tq, H, dh]), [1, 0, 2]); // [H, tq, dh]
  const kh = tf.transpose(tf.reshape(k, [tk, H, dh]), [1, 0, 2]); // [H, tk, dh]
  const vh = tf.transpose(tf.reshape(v, [tk, H, dh]), [1, 0, 2]);
  let s = tf.mul(tf.matMul(qh, kh, false, true), t.scale); // [H, tq, tk]
  if (t.mask) s = tf.add(s, t.mask);
  const p = tf.softmax(s);
  const z = tf.reshape(tf.transpose(tf.matMul(p, vh), [1, 0, 2]), [tq, d]);
  return tf.add(tf.matMul(z, t.wo), t.bo);
}
