// A plain JavaScript implementation over Float32Array: what a web developer
// writes without a library. Cache-friendly loop orders (i-k-j GEMM rows, one
// query row of scores at a time), buffers allocated once at setup.

function gemmBias(x, m, k, w, n, b, out) {
  for (let i = 0; i < m; i++) {
    const o = i * n;
    for (let j = 0; j < n; j++) out[o + j] = b[j];
    for (let p = 0; p < k; p++) {
      const a = x[i * k + p];
      const r = p * n;
      for (let j = 0; j < n; j++) out[o + j] += a * w[r + j];
    }
  }
}

export async function createPlainJs(data) {
  const { d, heads: H, tq, tk, causal, cacheLen } = data;
  const dh = d / H;
  const scale = 1 / Math.sqrt(dh);
  const tkNew = tk - cacheLen; // tokens projected per call
  const q = new Float32Array(tq * d);
  const k = new Float32Array(tk * d);
  const v = new Float32Array(tk * d);
  const z = new Float32Array(tq * d);
  const scores = new Float32Array(tk);
  const out = new Float32Array(tq * d);
  if (cacheLen > 0) {
    k.set(data.pastK);
    v.set(data.pastV);
  }
  const kNew = k.subarray(cacheLen * d);
  const vNew = v.subarray(cacheLen * d);
  const xkv = data.cross ? data.xkv : data.xq;
  return {
    name: 'plain JS',
    run() {
      gemmBias(data.xq, tq, d, data.wq, d, data.bq, q);
      gemmBias(xkv, tkNew, d, data.wk, d, data.bk, kNew);
      gemmBias(xkv, tkNew, d, data.wv, d, data.bv, vNew);
      z.fill(0);
      for (let h = 0; h < H; h++) {
        const c0 = h * dh;
        for (let i = 0; i < tq; i++) {
          const limit = causal ? Math.min(tk, i + (tk - tq) + 1) : tk;
          const qo = i * d + c0;
          let max = -Infinity;
          for (let j = 0; j < limit; j++) {
            const ko = j * d + c0;
            let s = 0;
            for (let c = 0; c < dh; c++) s += q[qo + c] * k[ko + c];
            s *= scale;
            scores[j] = s;
            if (s > max) max = s;
          }
          let sum = 0;
          for (let j = 0; j < limit; j++) {
            const e = Math.exp(scores[j] - max);
            scores[j] = e;
            sum += e;
          }
          const inv = 1 / sum;
          for (let j = 0; j < limit; j++) {
            const p = scores[j] * inv;
            const vo = j * d + c0;
            for (let c = 0; c < dh; c++) z[qo + c] += p * v[vo + c];
          }
        }
      }
      gemmBias(z, tq, d, data.wo, d, data.bo, out);
      return out;
    },
    dispose() {},
  };
}
