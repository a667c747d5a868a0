// MultiHeadAttention with grouped-query heads, rotary positions and key
// windows on every `kind: mha_variant` golden case through every backend of
// every wasm build, and token by token through a KV cache of only the
// key/value heads.
import { expectError } from './support/errors.mjs';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff } from './support/golden.mjs';
import { backendMatrix, loadBuilds, track } from './support/modules.mjs';

const builds = await loadBuilds();
const cases = goldenCaseNames('mha_variant').map(loadGoldenCase);

// A golden case as constructor config, weights and forward options.
function variantArguments(c) {
  const cfg = c.config;
  const t = c.tensors;
  return {
    config: {
      dModel: cfg.d_model, numHeads: cfg.num_heads, numKvHeads: cfg.num_kv_heads,
      headDim: cfg.head_dim, headDimV: cfg.head_dim_v, bias: cfg.bias,
      ...(cfg.rope ? { rope: { style: cfg.rope.style, base: cfg.rope.base,
        rotaryDim: cfg.rope.rotary_dim } } : {}),
    },
    weights: { wQ: t.w_q.data, wK: t.w_k.data, wV: t.w_v.data, wO: t.w_o.data,
      ...(cfg.bias ? { bQ: t.b_q.data, bK: t.b_k.data, bV: t.b_v.data, bO: t.b_o.data } : {}) },
    options: {
      causal: cfg.causal === 'bottom_right',
      ...(cfg.window ? { window: cfg.window } : {}),
      ...(cfg.softcap > 0 ? { softcap: cfg.softcap } : {}),
      ...(cfg.scale !== null ? { scale: cfg.scale } : {}),
      positionOffset: cfg.position_offset,
    },
  };
}

test('the golden folder has mha_variant cases with GQA, RoPE of both styles and a window', () => {
  expect(cases.some((c) => c.config.num_kv_heads < c.config.num_heads)).toBe(true);
  expect(new Set(cases.map((c) => c.config.rope?.style)).size).toBeGreaterThanOrEqual(3);
  expect(cases.some((c) => c.config.window)).toBe(true);
});

const matrix = backendMatrix(builds);

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  test.each(cases.map((c) => [c.name, c]))('%s', (name, c) => {
    expect(c.config.self_attention).toBe(true);
    const a = variantArguments(c);
    const mha = track(new module.MultiHeadAttention({ ...a.config, backend }));
    expect(mha.config.numKvHeads).toBe(c.config.num_kv_heads);
    mha.setWeights(a.weights);
    const r = mha.forward(c.tensors.query, undefined, undefined,
      { ...a.options, returnAttnWeights: true });
    expect(maxAbsDiff(r.output.data, c.tensors.output.data)).toBeLessThanOrEqual(c.tolerance);
    expect(maxAbsDiff(r.attnWeights.data, c.tensors.attn_weights.data))
      .toBeLessThanOrEqual(c.tolerance);
    if (c.config.position_offset !== 0) return;
    // Token by token through a cache of numKvHeads heads.
    const [batch, tokens, d] = c.tensors.query.shape;
    const cache = track(mha.createKVCache({ batch, maxLength: tokens }));
    const { positionOffset, causal, ...stepOptions } = a.options;
    for (let t = 0; t < tokens; ++t) {
      const x = new Float32Array(batch * d);
      for (let b = 0; b < batch; ++b) {
        x.set(c.tensors.query.data.subarray((b * tokens + t) * d, (b * tokens + t + 1) * d), b * d);
      }
      const step = mha.forwardIncremental({ data: x, shape: [batch, 1, d] }, cache, stepOptions);
      for (let b = 0; b < batch; ++b) {
        const row = r.output.data.subarray((b * tokens + t) * d, (b * tokens + t + 1) * d);
        expect(maxAbsDiff(step.output.data.subarray(b * d, (b + 1) * d), row))
          .toBeLessThanOrEqual(1e-5);
      }
    }
    expect(cache.keys().shape).toEqual([batch, tokens, c.config.num_kv_heads * c.config.head_dim]);
  });
});

describe.each(Object.keys(builds))('%s build', (build) => {
  test("causal 'top-left' sees keys j <= i, 'bottom-right' is causal: true", () => {
    const module = builds[build];
    const mha = track(new module.MultiHeadAttention({ dModel: 8, numHeads: 2 }));
    const values = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(seed + i));
    mha.setWeights({ wQ: values(64, 1), wK: values(64, 2), wV: values(64, 3), wO: values(64, 4),
      bQ: values(8, 5), bK: values(8, 6), bV: values(8, 7), bO: values(8, 8) });
    const q = { data: values(3 * 8, 9), shape: [3, 8] };
    const kv = { data: values(5 * 8, 10), shape: [5, 8] };
    const mask = (diagonal) => Float32Array.from({ length: 15 },
      (_, i) => (i % 5 <= Math.floor(i / 5) + diagonal ? 0 : -Infinity));
    const run = (options) => mha.forward(q, kv, kv, options).output.data;
    expect(run({ causal: 'top-left' })).toEqual(run({ attnMask: mask(0) }));
    expect(run({ causal: 'bottom-right' })).toEqual(run({ causal: true }));
    expect(run({ causal: 'bottom-right' })).toEqual(run({ attnMask: mask(2) }));
    expect(run({ causal: 'none' })).toEqual(run({}));
    expectError(() => run({ causal: 'top' }), RangeError, "MultiHeadAttention.forward: " +
      "options.causal: expected 'none', 'top-left' or 'bottom-right', got 'top'");
    expectError(() => run({ causal: 1 }), TypeError, 'MultiHeadAttention.forward: ' +
      "options.causal: expected a boolean or 'none', 'top-left' or 'bottom-right', got 1");
  });
});

describe.each(Object.keys(builds))('%s build: layers', (build) => {
  test('a decoder layer with 2 kv heads and rotary positions decodes as its full forward', () => {
    const module = builds[build];
    const d = 12, heads = 6, kv = 2, ffn = 16, batch = 2, tokens = 4, memoryTokens = 3;
    const values = (n, seed) => Float32Array.from({ length: n }, (_, i) => 0.3 * Math.sin(seed + 1.7 * i));
    const layer = track(new module.TransformerDecoderLayer({ dModel: d, numHeads: heads,
      ffnDim: ffn, numKvHeads: kv, rope: { style: 'half', base: 100 } }));
    expect(layer.config.numKvHeads).toBe(kv);
    expect(layer.config.rope).toEqual({ style: 'half', base: 100, rotaryDim: d / heads });
    const kvWidth = kv * (d / heads);
    const attention = (seed) => ({ wQ: values(d * d, seed), wK: values(d * kvWidth, seed + 1),
      wV: values(d * kvWidth, seed + 2), wO: values(d * d, seed + 3), bQ: values(d, seed + 4),
      bK: values(kvWidth, seed + 5), bV: values(kvWidth, seed + 6), bO: values(d, seed + 7) });
    const norm = (seed) => ({ gamma: values(d, seed).map((x) => 1 + x), beta: values(d, seed + 1) });
    layer.setWeights({ selfAttention: attention(1), crossAttention: attention(11),
      ffn: { w1: values(d * ffn, 21), b1: values(ffn, 22), w2: values(ffn * d, 23), b2: values(d, 24) },
      norm1: norm(31), norm2: norm(33), norm3: norm(35) });
    const x = { data: values(batch * tokens * d, 41), shape: [batch, tokens, d] };
    const memory = { data: values(batch * memoryTokens * d, 42), shape: [batch, memoryTokens, d] };
    const full = layer.forward(x, memory).data;
    const cache = track(layer.createKVCache({ batch, maxLength: tokens }));
    const kvMemory = track(layer.precomputeMemory(memory));
    for (let t = 0; t < tokens; ++t) {
      const step = new Float32Array(batch * d);
      for (let b = 0; b < batch; ++b) {
        step.set(x.data.subarray((b * tokens + t) * d, (b * tokens + t + 1) * d), b * d);
      }
      const out = layer.forwardIncremental({ data: step, shape: [batch, 1, d] }, cache, kvMemory);
      for (let b = 0; b < batch; ++b) {
        expect(maxAbsDiff(out.data.subarray(b * d, (b + 1) * d),
          full.subarray((b * tokens + t) * d, (b * tokens + t + 1) * d))).toBeLessThanOrEqual(1e-5);
      }
    }
    expect(cache.keys().shape).toEqual([batch, tokens, kvWidth]);
  });
});

describe('bad variants', () => {
  const sa = builds.simd;
  test('numKvHeads, rope and the window are checked', () => {
    expectError(() => new sa.MultiHeadAttention({ dModel: 8, numHeads: 4, numKvHeads: 3 }),
      RangeError, 'MultiHeadAttention: config.numKvHeads: must divide numHeads (4), got 3');
    expectError(() => new sa.MultiHeadAttention({ dModel: 8, numHeads: 2,
      rope: { style: 'half', rotaryDim: 3 } }), RangeError, 'MultiHeadAttention: ' +
      'config.rope.rotaryDim: expected an even number <= headDim (4), got 3');
    expectError(() => new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, rope: { style: 'x' } }),
      TypeError, "MultiHeadAttention: config.rope.style: expected 'half' or 'interleaved', " +
      'got "x"');
    const mha = track(new sa.MultiHeadAttention({ dModel: 8, numHeads: 2 }));
    const ones = (n) => new Float32Array(n).fill(0.1);
    mha.setWeights({ wQ: ones(64), wK: ones(64), wV: ones(64), wO: ones(64), bQ: ones(8),
      bK: ones(8), bV: ones(8), bO: ones(8) });
    const x = { data: ones(16), shape: [2, 8] };
    expectError(() => mha.forward(x, undefined, undefined, { window: [-2, 0] }), RangeError,
      'MultiHeadAttention.forward: options.window[0]: expected -1 (unbounded) or a number >= 0, ' +
      'got -2');
    expectError(() => mha.forward(x, undefined, undefined, { softcap: 0 }), RangeError,
      'MultiHeadAttention.forward: options.softcap: expected a finite number > 0, got 0');
    expectError(() => mha.forward(x, undefined, undefined, { window: [1] }), TypeError,
      'MultiHeadAttention.forward: options.window: expected an array of 2 integers, got [1]');
  });
});
