// The mixture-of-experts mixer ('moe', Mixtral's sparse MoE block) through
// the package: a block of it against a float64 computation of its
// definition on every build and backend (the router's softmax, each token's
// top k in expert order, renormalized or not), a Mixtral-like block decoding
// token by token as its causal forward, its experts in every storage type,
// its config in info(), the pool's block (whole in one worker) equal to the
// synchronous one and its stack refusing what the synchronous one does, its
// gradients in the training build against central differences and an
// optimizer fitting it, and the errors of its config and weights, after
// which the block stays usable.
import { rejection, thrown } from './support/errors.mjs';
import { maxAbsDiff } from './support/golden.mjs';
import { matmul, randomFloats, referenceRmsNorm } from './support/layers.mjs';
import { backendMatrix, createAttentionModule, createAttentionPool, loadBuilds, track }
  from './support/modules.mjs';
import { expectCentralDifferences, fitLosses } from './support/training-llama.mjs';

const builds = await loadBuilds();
const matrix = backendMatrix(builds);

const D = 16;
const F = 24;
const EPS = 1e-6;
const E = 4;

const moeConfig = (extra = {}) => ({ dModel: D, numHeads: 4, ffnDim: F, activation: 'silu',
  norm: 'rms_norm', eps: EPS, numExperts: E, sublayers: [{ mixer: 'moe' }], ...extra });

// A moe sublayer's weights: the router wide enough that its choices stand
// apart, each expert a SwiGLU's.
function moeWeights(seed, experts = E) {
  const m = (n, s, scale = 0.3) => randomFloats(n, seed + s, scale);
  return { norm: { gamma: m(D, 1).map((v) => 1 + v) },
    moe: { router: m(D * experts, 2, 1),
      experts: Array.from({ length: experts }, (_, e) => ({ wGate: m(D * F, 10 + 3 * e),
        wUp: m(D * F, 11 + 3 * e), wDown: m(F * D, 12 + 3 * e) })) } };
}

const rmsNorm = (x, rows, gamma) => referenceRmsNorm(x, rows, D, gamma, EPS);

// x + moe(rmsNorm(x)) in float64, as MixtralSparseMoeBlock defines it.
function referenceMoeBlock(x, rows, w, k, normalize) {
  const n = rmsNorm(x, rows, w.norm.gamma);
  const experts = w.moe.experts.length;
  const logits = matmul(n, rows, w.moe.router, D, experts);
  const outputs = w.moe.experts.map((e) => {
    const gate = matmul(n, rows, e.wGate, D, F);
    const up = matmul(n, rows, e.wUp, D, F);
    return matmul(gate.map((g, i) => g / (1 + Math.exp(-g)) * up[i]), rows, e.wDown, F, D);
  });
  const y = Float64Array.from(x);
  for (let r = 0; r < rows; r++) {
    const l = logits.slice(r * experts, (r + 1) * experts);
    const top = Math.max(...l);
    const e = l.map((v) => Math.exp(v - top));
    const sum = e.reduce((a, b) => a + b, 0);
    const p = e.map((v) => v / sum);
    const chosen = [...p.keys()].sort((a, b) => p[b] - p[a] || a - b).slice(0, k);
    const total = chosen.reduce((s, j) => s + p[j], 0);
    for (const j of chosen.sort((a, b) => a - b)) {
      const weight = normalize ? p[j] / total : p[j];
      for (let i = 0; i < D; i++) y[r * D + i] += weight * outputs[j][r * D + i];
    }
  }
  return y;
}

// `fn` throws exactly `Class` with a message holding `part`.
function expectError(fn, Class, part) {
  const error = thrown(fn);
  expect([error.constructor.name, error.message])
    .toEqual([Class.name, expect.stringContaining(part)]);
}

const ROWS = 7;
const input = (seed, tokens = ROWS) => ({ data: randomFloats(tokens * D, seed, 1),
  shape: [1, tokens, D] });

describe.each(matrix)('%s build, %s backend', (_, backend, module) => {
  test.each([[2, true], [3, false], [1, false]])('top %i of 4, normalizeTopK %s: its float64 ' +
    'definition', (k, normalize) => {
    const block = track(new module.TransformerBlock(moeConfig({ backend, expertsPerToken: k,
      normalizeTopK: normalize })));
    const w = moeWeights(10);
    block.setWeights({ sublayers: [w] });
    const x = input(20);
    const y = block.forward(x);
    expect(maxAbsDiff(y.data, referenceMoeBlock(x.data, ROWS, w, k, normalize)))
      .toBeLessThan(2e-5);
  });

  test('a Mixtral-like block decodes token by token as its causal forward', () => {
    const kv = 2 * 4;
    const m = (n, s) => randomFloats(n, 40 + s, 0.3);
    const block = track(new module.TransformerBlock(moeConfig({ backend, numKvHeads: 2,
      rope: { style: 'half' },
      sublayers: [{ mixer: 'self_attention' }, { mixer: 'moe' }] })));
    block.setWeights({ sublayers: [
      { norm: { gamma: m(D, 1).map((v) => 1 + v) },
        attention: { wQ: m(D * D, 2), wK: m(D * kv, 3), wV: m(D * kv, 4), wO: m(D * D, 5) } },
      moeWeights(50),
    ] });
    const x = input(60);
    const y = block.forward(x, { causal: true });
    const cache = track(block.createKVCache({ batch: 1, maxLength: ROWS }));
    const stepped = new Float32Array(ROWS * D);
    for (let t = 0; t < ROWS; t++) {
      const step = { data: x.data.slice(t * D, (t + 1) * D), shape: [1, 1, D] };
      stepped.set(block.forwardIncremental(step, cache).data, t * D);
    }
    expect(maxAbsDiff(stepped, y.data)).toBeLessThan(1e-5);
  });
});

test('info() reports the experts, Mixtral\'s defaults where not given', () => {
  const block = track(new builds.simd.TransformerBlock(moeConfig()));
  expect(block.config).toMatchObject({ numExperts: E, expertsPerToken: 2, normalizeTopK: true,
    ffnDim: F, sublayers: [{ mixer: 'moe', norm: 'pre', parallel: false }] });
  expect(builds.simd.choices.mixer).toContain('moe');
});

test('the experts in every storage type: near float32\'s, the router float32', () => {
  const sa = builds.simd;
  const w = moeWeights(70);
  const x = input(80);
  const f32 = track(new sa.TransformerBlock(moeConfig({ ffnDim: 64 })));
  const wide = { ...w, moe: { ...w.moe, experts: w.moe.experts.map((_, e) => ({
    wGate: randomFloats(D * 64, 90 + e, 0.3), wUp: randomFloats(D * 64, 95 + e, 0.3),
    wDown: randomFloats(64 * D, 99 + e, 0.2) })) } };
  f32.setWeights({ sublayers: [wide] });
  const expected = f32.forward(x).data;
  for (const [weights, tol] of [['f16', 1e-2], ['bf16', 3e-2], ['int8', 3e-2], ['q4', 0.2]]) {
    const block = track(new sa.TransformerBlock(moeConfig({ ffnDim: 64, weights })));
    block.setWeights({ sublayers: [wide] });
    expect([weights, maxAbsDiff(block.forward(x).data, expected) < tol]).toEqual([weights, true]);
  }
});

test('config and weight errors name the field; the block stays usable', () => {
  const sa = builds.simd;
  expectError(() => new sa.TransformerBlock(moeConfig({ numExperts: 0 })), RangeError,
    'config.numExperts');
  expectError(() => new sa.TransformerBlock(moeConfig({ numExperts: undefined })), RangeError,
    'config.numExperts');
  expectError(() => new sa.TransformerBlock(moeConfig({ expertsPerToken: 5 })), RangeError,
    'config.expertsPerToken: expected 1 to config.numExperts (4), got 5');
  expectError(() => new sa.TransformerBlock(moeConfig({ normalizeTopK: 1 })), TypeError,
    'config.normalizeTopK');
  const block = track(new sa.TransformerBlock(moeConfig()));
  const w = moeWeights(100);
  const set = (moe) => block.setWeights({ sublayers: [{ ...w, moe }] });
  expectError(() => set({ ...w.moe, experts: w.moe.experts.slice(1) }), RangeError,
    'sublayers[0] (moe): experts (one gated FFN per expert): expected 4 (config.numExperts), ' +
    'got 3');
  expectError(() => set({ ...w.moe, router: w.moe.router.slice(1) }), RangeError,
    'sublayers[0] (moe): router');
  expectError(() => set({ ...w.moe, experts: w.moe.experts.map((e, i) => (i === 2
    ? { ...e, wUp: e.wUp.slice(1) } : e)) }), RangeError, 'sublayers[0] (moe): experts[2].');
  expectError(() => set({ ...w.moe, experts: 'all' }), TypeError,
    'weights.sublayers[0].moe.experts: expected an array');
  expectError(() => set({ ...w.moe, gate: w.moe.router }), TypeError, "unknown key 'gate'");
  expectError(() => block.forward(input(1)), Error, 'setWeights');
  block.setWeights({ sublayers: [w] });
  expect(block.forward(input(1)).shape).toEqual([1, ROWS, D]);
});

test('the pool runs a moe block whole in one worker, as the synchronous block', async () => {
  const pool = await createAttentionPool({ workers: 2, build: 'simd' });
  try {
    const config = moeConfig({ sublayers: [{ mixer: 'self_attention' }, { mixer: 'moe' }] });
    const m = (n, s) => randomFloats(n, 110 + s, 0.3);
    const weights = { sublayers: [{ norm: { gamma: m(D, 1).map((v) => 1 + v) },
      attention: { wQ: m(D * D, 2), wK: m(D * D, 3), wV: m(D * D, 4), wO: m(D * D, 5) } },
    moeWeights(120)] };
    const sync = track(new builds.simd.TransformerBlock(config));
    sync.setWeights(weights);
    const pooled = await pool.TransformerBlock(config);
    expect(pooled.placement).toBe('whole');
    expect(pooled.config).toEqual(sync.config);
    await pooled.setWeights(weights);
    const x = input(130);
    const y = await pooled.forward(x, { causal: true });
    expect(maxAbsDiff(y.data, sync.forward(x, { causal: true }).data)).toBe(0);
    await pooled.dispose();
    // A pooled stack of such blocks refuses what the synchronous one does
    // (a cache given twice), from its stand-in's zero weights.
    const stack = await pool.TransformerStack({ ...config, numLayers: 2 });
    await stack.setWeights({ layers: [weights, weights] });
    const caches = await stack.createKVCaches({ batch: 1, maxLength: 2 });
    const syncStack = track(new builds.simd.TransformerStack({ ...config, numLayers: 2 }));
    syncStack.setWeights({ layers: [weights, weights] });
    const syncCaches = syncStack.createKVCaches({ batch: 1, maxLength: 2 }).map(track);
    const step = input(140, 1);
    const want = thrown(() => syncStack.forwardIncremental(step, [syncCaches[0], syncCaches[0]]));
    const got = await rejection(stack.forwardIncremental(step, [caches[0], caches[0]]));
    expect([got.constructor.name, got.message]).toEqual([want.constructor.name, want.message]);
    await stack.dispose();
  } finally {
    await pool.dispose();
  }
});

describe('the training build', () => {
  let sa;
  beforeAll(async () => {
    sa = await createAttentionModule({ training: true });
  });

  test('gradients: the router\'s, each expert\'s and the input\'s match central differences',
    () => {
      const block = track(new sa.TransformerBlock(moeConfig({ expertsPerToken: 2 })));
      const w = moeWeights(140);
      const weights = { sublayers: [w] };
      block.setWeights(weights);
      const x = { data: randomFloats(2 * 5 * D, 150, 1), shape: [2, 5, D] };
      const dOutput = randomFloats(2 * 5 * D, 160, 1);
      block.forward(x, { training: true });
      const g = block.backward({ data: dOutput, shape: [2, 5, D] });
      const moe = g.sublayers[0].moe;
      expect(Object.keys(moe).sort()).toEqual(['dRouter', 'experts']);
      expect(moe.experts.length).toBe(E);
      expect(Object.keys(moe.experts[0]).sort())
        .toEqual(['dBDown', 'dBGate', 'dBUp', 'dWDown', 'dWGate', 'dWUp']);
      expectCentralDifferences(block, weights, x, {}, dOutput, [
        ['moe.router', w.moe.router, moe.dRouter],
        ['moe.experts[0].wGate', w.moe.experts[0].wGate, moe.experts[0].dWGate],
        ['moe.experts[3].wDown', w.moe.experts[3].wDown, moe.experts[3].dWDown],
        ['norm.gamma', w.norm.gamma, g.sublayers[0].norm.dGamma],
        ['x', x.data, g.dInput.data],
      ]);
    });

  test('Adam fits it to a target: the loss goes down', () => {
    const block = track(new sa.TransformerBlock(moeConfig()));
    block.setWeights({ sublayers: [moeWeights(170)] });
    const x = { data: randomFloats(6 * D, 180, 1), shape: [1, 6, D] };
    const target = randomFloats(6 * D, 190, 1);
    const losses = fitLosses(block, track(new sa.Adam({ lr: 1e-2 })), x, {}, target, 20);
    expect(losses[19]).toBeLessThan(losses[0] * 0.9);
  });
});
