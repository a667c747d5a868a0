// TransformerBlock and TransformerStack through the package, on every build
// and backend: a Llama-shaped block against the float64 reference of its
// sublayers (support/layers.mjs), a post-LN block equal to the encoder
// layer it describes, a stack equal to its layers chained and decoding
// token by token equal to its causal forward, the names the configs take
// (module.choices, judged by C++), and the errors of configs, weights and
// calls, after which the object stays usable. The Hugging Face blocks
// themselves are pretrained.test.mjs's.
import { expectError } from './support/errors.mjs';
import { maxAbsDiff } from './support/golden.mjs';
import { matmul, randomFloats, referenceRmsNorm } from './support/layers.mjs';
import { backendMatrix, loadBuilds, track } from './support/modules.mjs';

const builds = await loadBuilds();
const matrix = backendMatrix(builds);

const D = 16;
const HEADS = 4;
const KV_HEADS = 2;
const HEAD_DIM = D / HEADS;
const F = 24;
const EPS = 1e-6;

const llamaConfig = (extra = {}) => ({ dModel: D, numHeads: HEADS, numKvHeads: KV_HEADS, ffnDim: F,
  activation: 'silu', norm: 'rms_norm', eps: EPS, rope: { style: 'half' },
  sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }], ...extra });

// Random weights of a Llama block (no biases), each matrix X @ W.
function llamaWeights(seed) {
  const m = (n, s) => randomFloats(n, seed + s, 0.3);
  const kv = KV_HEADS * HEAD_DIM;
  return { sublayers: [
    { norm: { gamma: m(D, 1).map((v) => 1 + v) },
      attention: { wQ: m(D * D, 2), wK: m(D * kv, 3), wV: m(D * kv, 4), wO: m(D * D, 5) } },
    { norm: { gamma: m(D, 6).map((v) => 1 + v) },
      gatedFfn: { wGate: m(D * F, 7), wUp: m(D * F, 8), wDown: m(F * D, 9) } },
  ] };
}

const rmsNorm = (x, rows, gamma) => referenceRmsNorm(x, rows, D, gamma, EPS);

// Causal GQA attention with rotate-half RoPE, one batch item, in float64.
function attention(x, t, w) {
  const kv = KV_HEADS * HEAD_DIM;
  const q = matmul(x, t, w.wQ, D, D);
  const k = matmul(x, t, w.wK, D, kv);
  const v = matmul(x, t, w.wV, D, kv);
  const rotate = (a, heads) => {
    for (let p = 0; p < t; p++) {
      for (let h = 0; h < heads; h++) {
        const at = p * heads * HEAD_DIM + h * HEAD_DIM;
        for (let i = 0; i < HEAD_DIM / 2; i++) {
          const angle = p * 10000 ** (-2 * i / HEAD_DIM);
          const [a0, a1] = [a[at + i], a[at + i + HEAD_DIM / 2]];
          a[at + i] = a0 * Math.cos(angle) - a1 * Math.sin(angle);
          a[at + i + HEAD_DIM / 2] = a0 * Math.sin(angle) + a1 * Math.cos(angle);
        }
      }
    }
  };
  rotate(q, HEADS);
  rotate(k, KV_HEADS);
  const z = new Float64Array(t * D);
  for (let h = 0; h < HEADS; h++) {
    const g = Math.floor(h / (HEADS / KV_HEADS));
    for (let i = 0; i < t; i++) {
      const s = [];
      for (let j = 0; j <= i; j++) {
        let dot = 0;
        for (let c = 0; c < HEAD_DIM; c++) dot += q[i * D + h * HEAD_DIM + c] * k[j * kv + g * HEAD_DIM + c];
        s.push(dot / Math.sqrt(HEAD_DIM));
      }
      const max = Math.max(...s);
      const e = s.map((v) => Math.exp(v - max));
      const sum = e.reduce((a, b) => a + b, 0);
      for (let c = 0; c < HEAD_DIM; c++) {
        z[i * D + h * HEAD_DIM + c] = e.reduce((acc, p, j) => acc + p / sum * v[j * kv + g * HEAD_DIM + c], 0);
      }
    }
  }
  return matmul(z, t, w.wO, D, D);
}

function referenceLlama(x, t, w) {
  const [a, m] = w.sublayers;
  const h = x.map((v, i) => v + attention(rmsNorm(x, t, a.norm.gamma), t, a.attention)[i]);
  const n = rmsNorm(h, t, m.norm.gamma);
  const gate = matmul(n, t, m.gatedFfn.wGate, D, F);
  const up = matmul(n, t, m.gatedFfn.wUp, D, F);
  const hidden = gate.map((g, i) => g / (1 + Math.exp(-g)) * up[i]);
  const down = matmul(hidden, t, m.gatedFfn.wDown, F, D);
  return h.map((v, i) => v + down[i]);
}

const T = 5;
const input = (seed, tokens = T) => ({ data: randomFloats(tokens * D, seed), shape: [1, tokens, D] });

describe.each(matrix)('%s build, %s backend', (_, backend, module) => {
  test('a Llama block against its float64 reference; token by token its causal forward', () => {
    const block = track(new module.TransformerBlock(llamaConfig({ backend })));
    const w = llamaWeights(10);
    block.setWeights(w);
    const x = input(20);
    const y = block.forward(x, { causal: true });
    expect(y.shape).toEqual([1, T, D]);
    expect(maxAbsDiff(y.data, referenceLlama(x.data, T, w))).toBeLessThan(2e-5);
    const cache = track(block.createKVCache({ batch: 1, maxLength: T }));
    const stepped = new Float32Array(T * D);
    for (let t = 0; t < T; t++) {
      const step = { data: x.data.slice(t * D, (t + 1) * D), shape: [1, 1, D] };
      stepped.set(block.forwardIncremental(step, cache).data, t * D);
    }
    expect(cache.length).toBe(T);
    expect(maxAbsDiff(stepped, y.data)).toBeLessThan(1e-5);
  });

  test('a stack: its layers chained, a final norm, decoding with a cache per layer', () => {
    const layers = [llamaWeights(30), llamaWeights(40), llamaWeights(50)];
    const finalGamma = randomFloats(D, 60).map((v) => 1 + v);
    const stack = track(new module.TransformerStack({ ...llamaConfig({ backend }), numLayers: 3,
      finalNorm: true, layerWindows: [[2, 0], [-1, -1], [2, 0]] }));
    stack.setWeights({ layers, finalNorm: { gamma: finalGamma } });
    expect(stack.config).toMatchObject({ numLayers: 3, finalNorm: true,
      layerWindows: [[2, 0], [-1, -1], [2, 0]], norm: 'rms_norm', activation: 'silu' });
    const x = input(70);
    const y = stack.forward(x, { causal: true });
    let h = x;
    layers.forEach((w, i) => {
      const block = track(new module.TransformerBlock(llamaConfig({ backend })));
      block.setWeights(w);
      h = block.forward(h, { causal: true, window: stack.config.layerWindows[i] });
    });
    const expected = rmsNorm(h.data, T, finalGamma);
    expect(maxAbsDiff(y.data, expected)).toBeLessThan(1e-5);
    const caches = stack.createKVCaches({ batch: 1, maxLength: T }).map(track);
    const stepped = new Float32Array(T * D);
    for (let t = 0; t < T; t++) {
      const step = { data: x.data.slice(t * D, (t + 1) * D), shape: [1, 1, D] };
      stepped.set(stack.forwardIncremental(step, caches).data, t * D);
    }
    expect(maxAbsDiff(stepped, y.data)).toBeLessThan(1e-5);
    // A failed step leaves every cache as it was.
    const bad = { data: new Float32Array(D).fill(NaN), shape: [1, 1, D] };
    expect(() => stack.forwardIncremental(bad, caches)).toThrow(RangeError);
    expect(caches.map((c) => c.length)).toEqual([T, T, T]);
  });
});

test("a sublayer with norm 'none' adds its mixer's output to its input: x + FFN(x)", () => {
  const sa = builds.simd;
  const w = (s, n) => randomFloats(n, s, 0.3);
  const ffn = { w1: w(21, D * F), b1: w(22, F), w2: w(23, F * D), b2: w(24, D) };
  const block = track(new sa.TransformerBlock({ dModel: D, numHeads: HEADS, ffnDim: F,
    sublayers: [{ mixer: 'ffn', norm: 'none' }] }));
  block.setWeights({ sublayers: [{ ffn }] });
  const rows = 5;
  const x = randomFloats(rows * D, 25, 1);
  const hidden = matmul(x, rows, ffn.w1, D, F).map((v, i) => Math.max(0, v + ffn.b1[i % F]));
  const expected = matmul(hidden, rows, ffn.w2, F, D).map((v, i) => x[i] + v + ffn.b2[i % D]);
  const y = block.forward({ data: x, shape: [1, rows, D] });
  expect(maxAbsDiff(y.data, expected)).toBeLessThan(1e-5);
  // Norm weights, as the pool's stand-ins give, are ignored.
  block.setWeights({ sublayers: [{ norm: { gamma: w(26, D) }, ffn }] });
  expect(block.forward({ data: x, shape: [1, rows, D] }).data).toEqual(y.data);
});

test('a post-LN block of an attention and an FFN is the encoder layer', () => {
  const sa = builds.simd;
  const w = (s, n) => randomFloats(n, s, 0.3);
  const attentionWeights = { wQ: w(1, D * D), wK: w(2, D * D), wV: w(3, D * D), wO: w(4, D * D),
    bQ: w(5, D), bK: w(6, D), bV: w(7, D), bO: w(8, D) };
  const ffn = { w1: w(9, D * F), b1: w(10, F), w2: w(11, F * D), b2: w(12, D) };
  const norm1 = { gamma: w(13, D).map((v) => 1 + v), beta: w(14, D) };
  const norm2 = { gamma: w(15, D).map((v) => 1 + v), beta: w(16, D) };
  const layer = track(new sa.TransformerEncoderLayer({ dModel: D, numHeads: HEADS, ffnDim: F,
    activation: 'gelu' }));
  layer.setWeights({ attention: attentionWeights, ffn, norm1, norm2 });
  const block = track(new sa.TransformerBlock({ dModel: D, numHeads: HEADS, ffnDim: F,
    activation: 'gelu', sublayers: [{ mixer: 'self_attention', norm: 'post' },
      { mixer: 'ffn', norm: 'post' }] }));
  block.setWeights({ sublayers: [{ norm: norm1, attention: attentionWeights },
    { norm: norm2, ffn }] });
  const x = input(3);
  expect(block.forward(x).data).toEqual(layer.forward(x).data);
});

test('an FFN given without its biases adds zeros, as one given zero biases', () => {
  const sa = builds.simd;
  const w = (s, n) => randomFloats(n, s, 0.3);
  const make = () => track(new sa.TransformerBlock({ dModel: D, numHeads: HEADS, ffnDim: F,
    activation: 'relu', sublayers: [{ mixer: 'ffn', norm: 'pre' }] }));
  const norm = { gamma: w(1, D).map((v) => 1 + v), beta: w(2, D) };
  const ffn = { w1: w(3, D * F), w2: w(4, F * D) };
  const without = make();
  without.setWeights({ sublayers: [{ norm, ffn }] });
  const zeros = make();
  zeros.setWeights({ sublayers: [{ norm,
    ffn: { ...ffn, b1: new Float32Array(F), b2: new Float32Array(D) } }] });
  const x = input(3);
  const out = without.forward(x).data;
  expect(out).toEqual(zeros.forward(x).data);
  expect(maxAbsDiff(out, x.data)).toBeGreaterThan(1e-3);
});

test('a LayerNorm given without its shift adds zeros (LayerNorm(bias=False))', () => {
  const sa = builds.simd;
  const w = (s, n) => randomFloats(n, s, 0.3);
  const make = () => track(new sa.TransformerBlock({ dModel: D, numHeads: HEADS, ffnDim: F,
    sublayers: [{ mixer: 'ffn' }] }));
  const ffn = { w1: w(3, D * F), w2: w(4, F * D) };
  const gamma = w(1, D).map((v) => 1 + v);
  const without = make();
  without.setWeights({ sublayers: [{ norm: { gamma }, ffn }] });
  const zeros = make();
  zeros.setWeights({ sublayers: [{ norm: { gamma, beta: new Float32Array(D) }, ffn }] });
  const x = input(4);
  expect(without.forward(x).data).toEqual(zeros.forward(x).data);
});

// Nemotron's LayerNorm1P: the stored scale is gamma - 1.
test.each(matrix)("norm 'layer_norm_1p' is a LayerNorm scaling by 1 + gamma (%s, %s)",
  (_, backend, sa) => {
    const w = (s, n) => randomFloats(n, s, 0.3);
    const make = (norm) => track(new sa.TransformerBlock({ dModel: D, numHeads: HEADS, ffnDim: F,
      activation: 'relu', norm, backend, sublayers: [{ mixer: 'ffn', norm: 'pre' }] }));
    const ffn = { w1: w(3, D * F), w2: w(4, F * D) };
    const stored = w(1, D);
    const beta = w(2, D);
    const onePlus = make('layer_norm_1p');
    onePlus.setWeights({ sublayers: [{ norm: { gamma: stored, beta }, ffn }] });
    const plain = make('layer_norm');
    plain.setWeights({ sublayers: [{ norm: { gamma: stored.map((v) => 1 + v), beta }, ffn }] });
    const x = input(3);
    expect(onePlus.forward(x).data).toEqual(plain.forward(x).data);
    expect(onePlus.config.norm).toBe('layer_norm_1p');
  });

test('module.choices: the names C++ takes, in the order its messages list them', () => {
  const { choices } = builds.simd;
  expect(choices.activation).toEqual(['relu', 'gelu', 'gelu_erf', 'gelu_tanh', 'silu', 'swish']);
  expect(choices.norm).toEqual(['layer_norm', 'rms_norm', 'gemma_rms_norm', 'layer_norm_1p']);
  expect(choices.mixer).toEqual(['self_attention', 'cross_attention', 'ffn', 'gated_ffn', 'moe']);
  expect(choices.normPlacement).toEqual(['pre', 'post', 'sandwich', 'none']);
  expect(Object.isFrozen(choices) && Object.isFrozen(choices.activation)).toBe(true);
});

describe('errors name the field, the expected and the given value', () => {
  const sa = builds.simd;
  test.each([
    [{ sublayers: [{ mixer: 'attention' }] }, RangeError,
      "TransformerBlock: config.sublayers[0].mixer: expected 'self_attention', " +
      "'cross_attention', 'ffn', 'gated_ffn' or 'moe', got 'attention'"],
    [{ sublayers: [{ mixer: 'ffn', norm: 'before' }] }, RangeError,
      "TransformerBlock: config.sublayers[0].norm: expected 'pre', 'post', 'sandwich' or 'none', " +
      "got 'before'"],
    [{ norm: 'rmsnorm' }, RangeError, "TransformerBlock: config.norm: expected 'layer_norm', " +
      "'rms_norm', 'gemma_rms_norm' or 'layer_norm_1p', got 'rmsnorm'"],
    [{ activation: 'mish' }, RangeError, "TransformerBlock: config.activation: expected 'relu', " +
      "'gelu' (or 'gelu_erf'), 'gelu_tanh' or 'silu' (or 'swish'), got 'mish'"],
    [{ sublayers: 'ffn' }, TypeError, 'TransformerBlock: config.sublayers: expected an array of ' +
      '{ mixer, norm?, parallel? }, got "ffn"'],
    [{ sublayers: [] }, RangeError, 'TransformerBlock: config.sublayers: expected at least one ' +
      'sublayer, got none'],
    [{ sublayers: [{ mixer: 'ffn', parallel: true }] }, RangeError, 'TransformerBlock: ' +
      'config.sublayers[0].parallel: the first sublayer has none before it to run beside, ' +
      'expected false, got true'],
    [{ qkNorm: { kind: 'layer_norm' } }, RangeError, "TransformerBlock: config.qkNorm.kind: " +
      "expected 'rms_norm' or 'gemma_rms_norm', got 'layer_norm'"],
    [{ ffnDim: 0 }, RangeError, 'TransformerBlock: config.ffnDim: must be > 0, got 0'],
  ])('config %o', (edit, Class, message) => {
    expectError(() => new sa.TransformerBlock(llamaConfig(edit)), Class, message);
  });

  test('weights: a count, a norm shift RMSNorm lacks, a short matrix; the block stays usable', () => {
    const block = track(new sa.TransformerBlock(llamaConfig()));
    const w = llamaWeights(1);
    expectError(() => block.setWeights({ sublayers: [w.sublayers[0]] }), RangeError,
      'TransformerBlock.setWeights: weights (one entry per sublayer): expected 2 ' +
      '(config.sublayers.length), got 1');
    const shifted = { sublayers: [w.sublayers[0], { ...w.sublayers[1],
      norm: { ...w.sublayers[1].norm, beta: new Float32Array(D) } }] };
    expectError(() => block.setWeights(shifted), RangeError, 'TransformerBlock.setWeights: ' +
      'sublayers[1] (gated_ffn): norm.beta: rms_norm has no shift, so none may be given; got ' +
      `${D} values`);
    expectError(() => block.forward(input(1)), Error,
      'TransformerBlock.forward: no weights yet; call setWeights() first');
    const short = { sublayers: [w.sublayers[0], { ...w.sublayers[1], gatedFfn: {
      ...w.sublayers[1].gatedFfn, wDown: new Float32Array(3) } }] };
    expect(() => block.setWeights(short)).toThrow(/sublayers\[1\] \(gated_ffn\): gated_ffn.w_down/);
    block.setWeights(w);
    expect(block.forward(input(1), { causal: true }).shape).toEqual([1, T, D]);
    expectError(() => block.setWeights({ sublayers: [{ norm: {}, attention: { wQ: [1] } }] }),
      TypeError, 'TransformerBlock.setWeights: weights.sublayers[0].attention.wQ: expected a ' +
      "Float32Array (or, for config.weights 'f16' or 'bf16', a Uint16Array of their bits; for " +
      "'int8', { values: Int8Array, scales: Float32Array }; for 'q4', { q4: Uint8Array }), " +
      'got [1]');
  });

  test('a stack refuses the same cache twice and a wrong count of caches', () => {
    const stack = track(new sa.TransformerStack({ ...llamaConfig(), numLayers: 2 }));
    stack.setWeights({ layers: [llamaWeights(2), llamaWeights(3)] });
    const [a] = stack.createKVCaches({ batch: 1, maxLength: 4 }).map(track);
    const step = input(5, 1);
    expectError(() => stack.forwardIncremental(step, [a, a]), RangeError,
      'TransformerStack.forwardIncremental: caches[1]: the same cache as caches[0], expected ' +
      'one cache per layer');
    expect(() => stack.forwardIncremental(step, [a])).toThrow(TypeError);
    expect(a.length).toBe(0);
  });
});

test('memoryStats counts a block\'s weights while it lives', () => {
  const sa = builds.simd;
  const before = sa.memoryStats().weightBytes.f32;
  const block = new sa.TransformerBlock(llamaConfig());
  block.setWeights(llamaWeights(4));
  expect(sa.memoryStats().weightBytes.f32).toBeGreaterThan(before);
  block.dispose();
  expect(sa.memoryStats().weightBytes.f32).toBe(before);
});
