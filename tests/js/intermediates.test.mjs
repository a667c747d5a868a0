// returnIntermediates: the per-head q, k, v and headOutput (z_h = P_h V_h)
// of forward() and forwardIncremental(). On every golden `mha` case, every
// backend of every build, each stage is recomputed here with plain loops (in
// float64) from the case's weights, never copied from anywhere:
//   q = query W_q + b_q split into heads, k and v likewise from key / value;
//   softmax(q kᵀ / √d_k, masked) = attnWeights;
//   headOutput = attnWeights v;
//   perHeadOutput head h = headOutput_h W_O rows h*d_v ...
// Plus: off by default, 2-D queries, precomputed K/V, the KV cache.
import { goldenCaseNames, loadGoldenCase, maxAbsDiff, mhaArguments } from './support/golden.mjs';
import { sliceTokens } from './support/layers.mjs';
import { backendMatrix, loadBuilds, track } from './support/modules.mjs';

const builds = await loadBuilds();
const cases = goldenCaseNames('mha').map(loadGoldenCase);
const INTERMEDIATES = ['q', 'k', 'v', 'headOutput'];

const matrix = backendMatrix(builds);

// |actual - expected| <= tolerance, scaled up for values larger than 1
// (self_large_scores has large projections).
function expectClose(name, actual, expected, tolerance) {
  expect({ name, length: actual.length }).toEqual({ name, length: expected.length });
  let scale = 1;
  for (const x of expected) scale = Math.max(scale, Math.abs(x));
  const diff = maxAbsDiff(actual, expected);
  if (!(diff <= tolerance * scale)) {
    throw new Error(`${name}: differs by ${diff} > ${tolerance} * ${scale}`);
  }
}

// x [B, T, F] W [F, H*d] + b, split into heads: [B, H, T, d].
function projectHeads(x, w, b, heads, d) {
  const [batch, tokens, features] = x.shape;
  const out = new Float64Array(batch * heads * tokens * d);
  for (let bi = 0; bi < batch; bi++) {
    for (let t = 0; t < tokens; t++) {
      for (let h = 0; h < heads; h++) {
        for (let j = 0; j < d; j++) {
          const col = h * d + j;
          let acc = b ? b[col] : 0;
          for (let f = 0; f < features; f++) {
            acc += x.data[(bi * tokens + t) * features + f] * w[f * heads * d + col];
          }
          out[((bi * heads + h) * tokens + t) * d + j] = acc;
        }
      }
    }
  }
  return out;
}

// softmax(q kᵀ / √d_k) per head, with the case's causal and key padding
// masks: [B, H, Tq, Tk]; a row with every key masked is all zeros.
function probabilities(q, k, batch, heads, tq, tk, dk, { causal, keyPaddingMask }) {
  const out = new Float64Array(batch * heads * tq * tk);
  const scale = 1 / Math.sqrt(dk);
  for (let bi = 0; bi < batch; bi++) {
    for (let h = 0; h < heads; h++) {
      const bh = bi * heads + h;
      for (let i = 0; i < tq; i++) {
        const s = new Float64Array(tk).fill(-Infinity);
        for (let j = 0; j < tk; j++) {
          if (causal && j > i + (tk - tq)) continue;
          if (keyPaddingMask && !keyPaddingMask[bi * tk + j]) continue;
          let acc = 0;
          for (let c = 0; c < dk; c++) acc += q[(bh * tq + i) * dk + c] * k[(bh * tk + j) * dk + c];
          s[j] = acc * scale;
        }
        const max = Math.max(...s);
        if (max === -Infinity) continue;
        let sum = 0;
        for (let j = 0; j < tk; j++) sum += (s[j] = Math.exp(s[j] - max));
        for (let j = 0; j < tk; j++) out[(bh * tq + i) * tk + j] = s[j] / sum;
      }
    }
  }
  return out;
}

// a [N, m, p] @ b [N, p, n] for N = B*H matrices.
function batchedMatmul(a, b, count, m, p, n) {
  const out = new Float64Array(count * m * n);
  for (let x = 0; x < count; x++) {
    for (let i = 0; i < m; i++) {
      for (let c = 0; c < p; c++) {
        const s = a[(x * m + i) * p + c];
        for (let j = 0; j < n; j++) out[(x * m + i) * n + j] += s * b[(x * p + c) * n + j];
      }
    }
  }
  return out;
}

// z [B, H, Tq, d_v] -> [B, H, Tq, dModel]: head h times rows h*d_v.. of wO.
function perHeadProjection(z, wO, batch, heads, tq, dv, dModel) {
  const out = new Float64Array(batch * heads * tq * dModel);
  for (let bh = 0; bh < batch * heads; bh++) {
    const h = bh % heads;
    for (let i = 0; i < tq; i++) {
      for (let c = 0; c < dv; c++) {
        const s = z[(bh * tq + i) * dv + c];
        const row = (h * dv + c) * dModel;
        for (let j = 0; j < dModel; j++) out[(bh * tq + i) * dModel + j] += s * wO[row + j];
      }
    }
  }
  return out;
}

function run(module, backend, c, options = {}) {
  const a = mhaArguments(c);
  const mha = track(new module.MultiHeadAttention({ ...a.config, backend }));
  mha.setWeights(a.weights);
  return {
    a,
    mha,
    r: mha.forward(a.query, a.key, a.value, { ...a.options, returnIntermediates: true, ...options }),
  };
}

test('the golden folder has mha cases, self and cross, with d_v != d_k and a mask', () => {
  expect(cases.length).toBeGreaterThanOrEqual(5);
  expect(cases.some((c) => !c.config.self_attention && c.config.kdim !== c.config.d_model)).toBe(true);
  expect(cases.some((c) => c.config.head_dim_v !== c.config.head_dim)).toBe(true);
  expect(cases.some((c) => c.tensors.key_padding_mask)).toBe(true);
  expect(cases.some((c) => c.config.causal)).toBe(true);
});

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  test.each(cases.map((c) => [c.name, c]))('%s: q, k, v, scores, headOutput, perHeadOutput', (_, c) => {
    const cfg = c.config;
    const { batch, tq, tk, num_heads: heads, head_dim: dk, head_dim_v: dv, d_model: dModel } = cfg;
    const { a, r } = run(module, backend, c, { returnAttnWeights: true, returnPerHeadOutput: true });
    expect(r.q.shape).toEqual([batch, heads, tq, dk]);
    expect(r.k.shape).toEqual([batch, heads, tk, dk]);
    expect(r.v.shape).toEqual([batch, heads, tk, dv]);
    expect(r.headOutput.shape).toEqual([batch, heads, tq, dv]);
    for (const name of INTERMEDIATES) {
      expect(r[name].data).toBeInstanceOf(Float32Array);
      // A copy of its own, not a view onto the wasm heap.
      expect(r[name].data.buffer.byteLength).toBe(r[name].data.length * 4);
    }

    const t = c.tensors;
    const keyInput = cfg.self_attention ? t.query : t.key;
    const valueInput = cfg.self_attention ? t.query : t.value;
    const q = projectHeads(t.query, t.w_q.data, t.b_q?.data, heads, dk);
    const k = projectHeads(keyInput, t.w_k.data, t.b_k?.data, heads, dk);
    const v = projectHeads(valueInput, t.w_v.data, t.b_v?.data, heads, dv);
    expectClose('q = query W_q + b_q, per head', r.q.data, q, c.tolerance);
    expectClose('k = key W_k + b_k, per head', r.k.data, k, c.tolerance);
    expectClose('v = value W_v + b_v, per head', r.v.data, v, c.tolerance);

    // From the library's own q and k: the probabilities it returned.
    const p = probabilities(r.q.data, r.k.data, batch, heads, tq, tk, dk, a.options);
    expectClose('softmax(q kᵀ / √d_k) = attnWeights', r.attnWeights.data, p, c.tolerance);

    const z = batchedMatmul(r.attnWeights.data, r.v.data, batch * heads, tq, tk, dv);
    expectClose('headOutput = attnWeights v', r.headOutput.data, z, c.tolerance);

    const contributions = perHeadProjection(r.headOutput.data, t.w_o.data, batch, heads, tq, dv, dModel);
    expectClose('perHeadOutput = headOutput W_O^h', r.perHeadOutput.data, contributions, c.tolerance);
  });
});

describe('off by default', () => {
  const c = cases.find((x) => !x.config.self_attention && x.config.kdim === x.config.vdim);
  const a = mhaArguments(c);

  test.each(Object.entries(builds))('%s build: forward, precomputed forward, forwardIncremental', (_, module) => {
    const mha = track(new module.MultiHeadAttention(a.config));
    mha.setWeights(a.weights);
    const withoutIntermediates = (r) => expect(Object.keys(r).filter((k) => INTERMEDIATES.includes(k)))
      .toEqual([]);
    withoutIntermediates(mha.forward(a.query, a.key, a.value));
    withoutIntermediates(mha.forward(a.query, a.key, a.value,
      { returnAttnWeights: true, returnPerHeadOutput: true }));
    withoutIntermediates(mha.forward(a.query, a.key, a.value, { returnIntermediates: false }));
    const kv = track(mha.precomputeKeyValue(a.key));
    withoutIntermediates(mha.forward(a.query, kv));
    const s = mhaArguments(loadGoldenCase('self_causal'));
    const self = track(new module.MultiHeadAttention(s.config));
    self.setWeights(s.weights);
    const cache = track(self.createKVCache({ batch: s.query.shape[0], maxLength: 4 }));
    withoutIntermediates(self.forwardIncremental(sliceTokens(s.query, 0, 1), cache));
    withoutIntermediates(self.forwardIncremental(sliceTokens(s.query, 1, 2), cache,
      { returnAttnWeights: true, returnIntermediates: false }));
  });

  test('a non-boolean is a TypeError', () => {
    const mha = track(new builds.simd.MultiHeadAttention(a.config));
    mha.setWeights(a.weights);
    expect(() => mha.forward(a.query, a.key, a.value, { returnIntermediates: 1 })).toThrow(
      new TypeError('MultiHeadAttention.forward: options.returnIntermediates: expected a boolean, got 1'));
  });
});

test.each(Object.entries(builds))('%s build: a 2-D query gives unbatched shapes, same values', (_, module) => {
  const c = cases.find((x) => x.config.self_attention && x.config.batch === 1 &&
    x.config.head_dim_v !== x.config.head_dim);
  const { tq, num_heads: heads, head_dim: dk, head_dim_v: dv } = c.config;
  const { a, mha, r } = run(module, module.backend, c);
  const unbatched = mha.forward({ data: a.query.data, shape: a.query.shape.slice(1) }, undefined,
    undefined, { ...a.options, returnIntermediates: true });
  expect(unbatched.output.shape).toEqual(r.output.shape.slice(1));
  expect(unbatched.q.shape).toEqual([heads, tq, dk]);
  expect(unbatched.k.shape).toEqual([heads, tq, dk]);
  expect(unbatched.v.shape).toEqual([heads, tq, dv]);
  expect(unbatched.headOutput.shape).toEqual([heads, tq, dv]);
  for (const name of INTERMEDIATES) expect(unbatched[name].data).toEqual(r[name].data);
});

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  test('precomputed keys/values give the intermediates of direct cross-attention', () => {
    const c = cases.find((x) => !x.config.self_attention && x.config.kdim === x.config.vdim);
    const { a, mha, r } = run(module, backend, c);
    const kv = track(mha.precomputeKeyValue(a.key));
    const pre = mha.forward(a.query, kv, undefined, { returnIntermediates: true });
    for (const name of INTERMEDIATES) {
      expect(pre[name].shape).toEqual(r[name].shape);
      expectClose(`precomputed ${name}`, pre[name].data, r[name].data, 1e-6);
    }
  });

  test('forwardIncremental: q and headOutput of the new tokens, k and v of the whole cache', () => {
    const c = loadGoldenCase('self_causal');
    const { batch, tq: t, num_heads: heads, head_dim: dk, head_dim_v: dv } = c.config;
    const { a, mha, r: full } = run(module, backend, c, { causal: true });
    const cache = track(mha.createKVCache({ batch, maxLength: t }));
    // Rows [from, to) of token axis 2 of a [B, H, T, d] tensor.
    const rows = (x, from, to) => {
      const [b, h, tokens, d] = x.shape;
      const out = [];
      for (let bh = 0; bh < b * h; bh++) out.push(...x.data.subarray((bh * tokens + from) * d, (bh * tokens + to) * d));
      return Float32Array.from(out);
    };
    for (const [from, to] of [[0, 5], [5, 6], [6, t]]) {
      const r = mha.forwardIncremental(sliceTokens(a.query, from, to), cache, { returnIntermediates: true });
      expect(r.q.shape).toEqual([batch, heads, to - from, dk]);
      expect(r.k.shape).toEqual([batch, heads, to, dk]);
      expect(r.v.shape).toEqual([batch, heads, to, dv]);
      expect(r.headOutput.shape).toEqual([batch, heads, to - from, dv]);
      expectClose(`q of tokens ${from}..${to}`, r.q.data, rows(full.q, from, to), c.tolerance);
      expectClose(`k of the cache at ${to}`, r.k.data, rows(full.k, 0, to), c.tolerance);
      expectClose(`v of the cache at ${to}`, r.v.data, rows(full.v, 0, to), c.tolerance);
      expectClose(`headOutput of tokens ${from}..${to}`, r.headOutput.data,
        rows(full.headOutput, from, to), c.tolerance);
    }
  });
});
