// Weights held as float16, bfloat16, int8 and q4 (config.weights) through the
// package, on every backend of every build: the golden cases against the
// float32 result of the same build and backend, decoding through a KV cache,
// weights given already in their type (bits, int8 values and scales) against
// float32 input of the same values, quantizeInt8 against the documented rule
// and as setWeights quantizes, errors, memoryStats' bytes, the threaded
// builds and a safetensors round trip that keeps F16/BF16 tensors as bits.
//
// The bounds per type: support/weight-types.mjs.
import { expectError } from './support/errors.mjs';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff, mhaArguments, pytorchState }
  from './support/golden.mjs';
import { decoderArguments, encoderArguments, sliceTokens } from './support/layers.mjs';
import { backendMatrix, createAttentionModule, loadBuilds, loadCheckpoint, parseSafetensors, track }
  from './support/modules.mjs';
import { floatToBfloat16, floatToHalf, roundTo, writeSafetensors }
  from './support/safetensors-writer.mjs';
import { CHAINED_PRODUCTS, encoderSafetensors, exactInt8, expectWithin, inScope, NARROW }
  from './support/weight-types.mjs';

const builds = await loadBuilds();
const mhaCases = goldenCaseNames('mha').map(loadGoldenCase);
const encoderCases = goldenCaseNames('encoder_layer').map(loadGoldenCase);
const decoderCases = goldenCaseNames('decoder_layer').map(loadGoldenCase);
const matrix = backendMatrix(builds);

function mhaOutput(module, backend, c, weights, { weightsOf = (a) => a.weights } = {}) {
  const a = mhaArguments(c);
  const mha = track(new module.MultiHeadAttention({ ...a.config, backend, weights }));
  mha.setWeights(weightsOf(a));
  return mha.forward(a.query, a.key, a.value, a.options).output.data;
}

function encoderOutput(module, backend, c, weights, weightsOf = (a) => a.weights) {
  const a = encoderArguments(c);
  const layer = track(new module.TransformerEncoderLayer({ ...a.config, backend, weights }));
  layer.setWeights(weightsOf(a));
  return layer.forward(a.input).data;
}

function decoderOutput(module, backend, c, weights) {
  const a = decoderArguments(c);
  const layer = track(new module.TransformerDecoderLayer({ ...a.config, backend, weights }));
  layer.setWeights(a.weights);
  return layer.forward(a.input, a.memory).data;
}

describe.each(matrix)('%s build, %s backend', (_, backend, module) => {
  test.each(mhaCases.map((c) => [c.name, c]))('%s: every type within its bound of float32', (__, c) => {
    const want = mhaOutput(module, backend, c, 'f32');
    for (const type of NARROW.filter((t) => inScope(c.name, t))) {
      expectWithin(c.name, type, mhaOutput(module, backend, c, type), want, CHAINED_PRODUCTS.mha);
    }
  });

  test('layers: every type within its bound of float32', () => {
    for (const c of encoderCases) {
      const want = encoderOutput(module, backend, c, 'f32');
      for (const type of NARROW) {
        expectWithin(c.name, type, encoderOutput(module, backend, c, type), want,
          CHAINED_PRODUCTS.encoder);
      }
    }
    for (const c of decoderCases) {
      const want = decoderOutput(module, backend, c, 'f32');
      for (const type of NARROW) {
        expectWithin(c.name, type, decoderOutput(module, backend, c, type), want,
          CHAINED_PRODUCTS.decoder);
      }
    }
  });

  test('decoding token by token through a KV cache equals the full causal forward, per type', () => {
    for (const c of mhaCases.filter((x) => x.config.self_attention)) {
      const a = mhaArguments(c);
      const [batch, tokens] = a.query.shape;
      for (const type of NARROW) {
        const mha = track(new module.MultiHeadAttention({ ...a.config, backend, weights: type }));
        mha.setWeights(a.weights);
        const full = mha.forward(a.query, undefined, undefined, { causal: true }).output;
        const cache = track(mha.createKVCache({ batch, maxLength: tokens }));
        for (let t = 0; t < tokens; ++t) {
          const step = mha.forwardIncremental(sliceTokens(a.query, t, t + 1), cache).output.data;
          const diff = maxAbsDiff(step, sliceTokens(full, t, t + 1).data);
          if (!(diff <= c.tolerance)) {
            throw new Error(`${c.name} ${type}: token ${t} differs by ${diff} > ${c.tolerance}`);
          }
        }
      }
    }
  });
});

// ---------------------------------------------------------------------------
// Weights given in their storage type
// ---------------------------------------------------------------------------

const MATRICES = ['wQ', 'wK', 'wV', 'wO'];
const toBits = { f16: floatToHalf, bf16: floatToBfloat16 };
const dtypeOf = { f16: 'F16', bf16: 'BF16' };

// The documented int8 rule, in float32: scale = max |w[:, c]| / 127 over
// the column (1 for an all-zero one), value = w / scale rounded to nearest,
// ties to even (a Float32Array rounds each quotient to float32 once, as
// float32 division does).
function quantizeReference(w, rows, cols) {
  const scales = new Float32Array(cols);
  for (let c = 0; c < cols; ++c) {
    let largest = 0;
    for (let r = 0; r < rows; ++r) largest = Math.max(largest, Math.abs(w[r * cols + c]));
    scales[c] = largest > 0 ? largest / 127 : 1;
  }
  const quotients = Float32Array.from(w, (v, i) => v / scales[i % cols]);
  const values = Int8Array.from(quotients, (x) => {
    const r = Math.round(x); // halves up
    return Math.max(-127, Math.min(127, Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r));
  });
  return { values, scales };
}

// Each attention matrix's [rows, cols] for a golden case's config.
function matrixShapes({ d_model: d, num_heads: h, kdim, vdim, head_dim: dk, head_dim_v: dv }) {
  return { wQ: [d, h * dk], wK: [kdim, h * dk], wV: [vdim, h * dv], wO: [h * dv, d] };
}

// A Float16Array holding `bits`: the engine's own where it has one, else a
// Uint16Array that says it is one (what the package reads is the bits).
class Float16Stand extends Uint16Array {
  get [Symbol.toStringTag]() { return 'Float16Array'; }
}
const float16Array = (bits) => (typeof globalThis.Float16Array === 'function'
  ? new globalThis.Float16Array(bits.buffer) : new Float16Stand(bits.buffer));

describe.each(matrix)('stored forms, %s build, %s backend', (_, backend, module) => {
  test.each(mhaCases.map((c) => [c.name, c]))('%s: 16-bit bits equal float32 input, also as a Float16Array', (__, c) => {
    for (const type of ['f16', 'bf16']) {
      const fromFloats = mhaOutput(module, backend, c, type);
      const rounded = mhaOutput(module, backend, c, type, { weightsOf: (a) => ({ ...a.weights,
        ...Object.fromEntries(MATRICES.map((k) => [k, roundTo(dtypeOf[type], a.weights[k])])) }) });
      const bits = (a) => Object.fromEntries(MATRICES.map((k) =>
        [k, Uint16Array.from(a.weights[k], toBits[type])]));
      const fromBits = mhaOutput(module, backend, c, type,
        { weightsOf: (a) => ({ ...a.weights, ...bits(a) }) });
      const fromHalf = mhaOutput(module, backend, c, type, { weightsOf: (a) => ({ ...a.weights,
        ...Object.fromEntries(Object.entries(bits(a)).map(([k, v]) => [k, float16Array(v)])) }) });
      expect(fromBits).toEqual(rounded);
      expect(fromBits).toEqual(fromFloats); // the package rounds to nearest even too
      expect(fromHalf).toEqual(fromBits);
    }
  });

  test('int8 values and scales equal float32 input of the same values', () => {
    const config = { dModel: 16, numHeads: 2, backend, weights: 'int8' };
    const w = MATRICES.map((_k, i) => exactInt8(16, 16, 11 + i));
    const biases = { bQ: new Float32Array(16).fill(0.1), bK: new Float32Array(16),
      bV: new Float32Array(16).fill(-0.2), bO: new Float32Array(16).fill(0.3) };
    const x = { data: Float32Array.from({ length: 2 * 5 * 16 }, (_v, i) => Math.sin(i)), shape: [2, 5, 16] };
    const run = (form) => {
      const mha = track(new module.MultiHeadAttention(config));
      mha.setWeights({ ...biases, ...Object.fromEntries(MATRICES.map((k, i) => [k, w[i][form]])) });
      return mha.forward(x).output.data;
    };
    expect(run('stored')).toEqual(run('floats'));
  });

  test('quantizeInt8: the documented rule, and setWeights given it holds what float32 input gives', () => {
    // Columns: ties (2.5, -3.5, 0.5 at scale 1), all zeros, a negative largest.
    const ties = Float32Array.of(127, 0, -0.5, 2.5, 0, 3, -3.5, 0, 6.35, 0.5, 0, 1);
    for (const [w, rows, cols] of [[ties, 4, 3],
      ...mhaCases.flatMap((c) => Object.entries(matrixShapes(c.config)).map(([k, [r, n]]) =>
        [mhaArguments(c).weights[k], r, n]))]) {
      const got = module.quantizeInt8(w, rows, cols);
      const want = quantizeReference(w, rows, cols);
      expect(got.values).toBeInstanceOf(Int8Array);
      expect(got.scales).toBeInstanceOf(Float32Array);
      expect(Array.from(got.values)).toEqual(Array.from(want.values));
      expect(Array.from(got.scales)).toEqual(Array.from(want.scales));
    }
    for (const c of mhaCases) {
      const quantized = (a) => ({ ...a.weights, ...Object.fromEntries(Object.entries(
        matrixShapes(c.config)).map(([k, [r, n]]) => [k, module.quantizeInt8(a.weights[k], r, n)])) });
      expect(mhaOutput(module, backend, c, 'int8', { weightsOf: quantized }))
        .toEqual(mhaOutput(module, backend, c, 'int8'));
    }
  });

  test('a layer\'s six matrices, FFN included, as bits and as int8', () => {
    const c = encoderCases[0];
    for (const type of ['f16', 'bf16']) {
      const bits = (m) => Uint16Array.from(m, toBits[type]);
      const out = encoderOutput(module, backend, c, type, (a) => ({ ...a.weights,
        attention: { ...a.weights.attention,
          ...Object.fromEntries(MATRICES.map((k) => [k, bits(a.weights.attention[k])])) },
        ffn: { ...a.weights.ffn, w1: bits(a.weights.ffn.w1), w2: bits(a.weights.ffn.w2) } }));
      expect(out).toEqual(encoderOutput(module, backend, c, type));
    }
    const a = encoderArguments(c);
    const { dModel: d, ffnDim: f } = a.config;
    const q = [...MATRICES.map((_k, i) => exactInt8(d, d, 3 + i)), exactInt8(d, f, 8),
      exactInt8(f, d, 9)];
    const int8 = (form) => encoderOutput(module, backend, c, 'int8', (x) => ({ ...x.weights,
      attention: { ...x.weights.attention,
        ...Object.fromEntries(MATRICES.map((k, i) => [k, q[i][form]])) },
      ffn: { ...x.weights.ffn, w1: q[4][form], w2: q[5][form] } }));
    expect(int8('stored')).toEqual(int8('floats'));
  });
});

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

describe('errors name the argument, the expected and the given', () => {
  const m = builds.simd;
  const filled = (n, v = 0.1) => new Float32Array(n).fill(v);
  const weights = () => ({ wQ: filled(64), wK: filled(64, -0.2), wV: filled(64, 0.3),
    wO: filled(64, 0.05), bQ: filled(8), bK: filled(8), bV: filled(8), bO: filled(8) });
  const x = { data: Float32Array.from({ length: 24 }, (_v, i) => Math.cos(i)), shape: [3, 8] };
  const where = 'MultiHeadAttention.setWeights';

  test('config.weights: an unknown name (C++) and a value that is not a string (JS)', () => {
    expectError(() => new m.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'fp16' }),
      RangeError, "MultiHeadAttention: config.weights: expected 'f32', 'f16', 'bf16', 'int8' " +
      "or 'q4', got 'fp16'");
    expectError(() => new m.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8,
      weights: 'float16' }), RangeError, "TransformerEncoderLayer: config.weights: expected " +
      "'f32', 'f16', 'bf16', 'int8' or 'q4', got 'float16'");
    expectError(() => new m.TransformerDecoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8,
      weights: 3 }), TypeError, "TransformerDecoderLayer: config.weights: expected a string " +
      "(a name of module.choices.weights), got 3");
  });

  test('refused weights leave the object as it was', () => {
    const f16 = track(new m.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'f16' }));
    f16.setWeights(weights());
    const before = f16.forward(x).output.data;
    const huge = filled(64, 0.3);
    huge[5] = 70000;
    expectError(() => f16.setWeights({ ...weights(), wV: huge }), RangeError,
      `${where}: wV: element 5 is 70000, beyond float16's range (magnitudes up to 65504), ` +
      'which config.weights asks for');
    expectError(() => f16.setWeights({ ...weights(),
      wQ: { values: new Int8Array(64), scales: filled(8) } }), RangeError,
    `${where}: wQ: int8 values given, but config.weights is float16`);
    expectError(() => f16.setWeights({ ...weights(), wO: new Uint16Array(63) }), RangeError,
      `${where}: wO: expected 64 values for shape [8, 8], got 63`);
    const infinite = new Uint16Array(64);
    infinite[3] = 0x7c00;
    expectError(() => f16.setWeights({ ...weights(), wK: infinite }), RangeError,
      `${where}: wK: element 3 is +Infinity`);
    expectError(() => f16.setWeights({ ...weights(), wQ: [1, 2] }), TypeError,
      `${where}: wQ: expected a Float32Array (or, for config.weights 'f16' or 'bf16', a ` +
      "Uint16Array of their bits; for 'int8', { values: Int8Array, scales: Float32Array }; " +
      "for 'q4', { q4: Uint8Array }), got [1, 2]");
    expect(f16.forward(x).output.data).toEqual(before);

    const f32 = track(new m.MultiHeadAttention({ dModel: 8, numHeads: 2 }));
    expectError(() => f32.setWeights({ ...weights(), wQ: new Uint16Array(64) }), RangeError,
      `${where}: wQ: 16-bit weights given, but config.weights is float32`);
    const int8 = track(new m.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'int8' }));
    expectError(() => int8.setWeights({ ...weights(), wQ: new Uint16Array(64) }), RangeError,
      `${where}: wQ: 16-bit weights given, but config.weights is int8`);
    expectError(() => int8.setWeights({ ...weights(),
      wQ: { values: new Int8Array(64), scales: filled(7) } }), RangeError,
    `${where}: wQ.scales: expected 8 values for shape [8], got 7`);
    expectError(() => int8.setWeights({ ...weights(),
      wQ: { values: new Int8Array(63), scales: filled(8) } }), RangeError,
    `${where}: wQ: expected 64 values for shape [8, 8], got 63`);
    expectError(() => int8.setWeights({ ...weights(),
      wQ: { values: new Uint8Array(64), scales: filled(8) } }), TypeError,
    `${where}: wQ.values: expected an Int8Array, got Uint8Array(64)`);
    expectError(() => int8.setWeights({ ...weights(), wQ: { values: new Int8Array(64) } }),
      TypeError, `${where}: wQ.scales: expected a Float32Array, got undefined`);
  });

  test("q4 refuses int8 values, 16-bit bits and floats past its scales' range; it stays", () => {
    const q4 = track(new m.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'q4' }));
    q4.setWeights(weights());
    const before = q4.forward(x).output.data;
    expectError(() => q4.setWeights({ ...weights(),
      wQ: { values: new Int8Array(64), scales: filled(8) } }), RangeError,
    `${where}: wQ: int8 values given, but config.weights is q4`);
    expectError(() => q4.setWeights({ ...weights(), wK: new Uint16Array(64) }), RangeError,
      `${where}: wK: 16-bit weights given, but config.weights is q4`);
    const huge = filled(64, 0.3);
    huge[5] = 600000;
    expectError(() => q4.setWeights({ ...weights(), wV: huge }), RangeError,
      `${where}: wV: element 5 is 600000, beyond q4's range (magnitudes up to 524032), ` +
      'which config.weights asks for');
    expect(q4.forward(x).output.data).toEqual(before);
  });

  test('quantizeInt8: lengths, values and sizes (C++), types (JS); the module stays usable', () => {
    const q = (...args) => () => m.quantizeInt8(...args);
    expectError(q(filled(63), 8, 8), RangeError,
      'quantizeInt8: matrix: expected 64 values for shape [8, 8], got 63');
    const bad = filled(64);
    bad[3] = NaN;
    expectError(q(bad, 8, 8), RangeError, 'quantizeInt8: matrix: element 3 is NaN');
    bad[3] = -Infinity;
    expectError(q(bad, 8, 8), RangeError, 'quantizeInt8: matrix: element 3 is -Infinity');
    expectError(q(new Float32Array(0), 0, 8), RangeError, 'quantizeInt8: rows: must be > 0, got 0');
    expectError(q(filled(8), 8, 0), RangeError, 'quantizeInt8: cols: must be > 0, got 0');
    // 65536 * 65536 wraps wasm's 32-bit size_t: refused, nothing allocated.
    expectError(q(filled(4), 65536, 65536), RangeError,
      'quantizeInt8: matrix: expected 4294967296 values for shape [65536, 65536], got 4');
    expectError(q([1, 2], 1, 2), TypeError,
      'quantizeInt8: matrix: expected a Float32Array, got [1, 2]');
    expectError(q(filled(4), 2.5, 2), RangeError,
      'quantizeInt8: rows: expected a non-negative integer, got 2.5');
    expectError(q(filled(4), 2), TypeError,
      'quantizeInt8: cols: required, expected a positive integer');
    expect(Array.from(m.quantizeInt8(Float32Array.of(0.5, -1), 1, 2).values)).toEqual([127, -127]);
  });

  test('a layer names its FFN matrices; PyTorch state_dicts take bits for matrices only', () => {
    const layer = track(new m.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 16,
      weights: 'f16' }));
    const norm = { gamma: filled(8, 1), beta: filled(8, 0) };
    const ffn = { w1: filled(128), b1: filled(16), w2: filled(128), b2: filled(8) };
    const huge = filled(128);
    huge[9] = -1e5;
    expectError(() => layer.setWeights({ attention: weights(), norm1: norm, norm2: norm,
      ffn: { ...ffn, w2: huge } }), RangeError, 'TransformerEncoderLayer.setWeights: ffn.w2: ' +
      "element 9 is -100000, beyond float16's range (magnitudes up to 65504), which config.weights " +
      'asks for');
    expectError(() => layer.setWeights({ attention: weights(), norm1: norm, norm2: norm,
      ffn: { ...ffn, w1: { values: new Int8Array(128), scales: filled(16) } } }), RangeError,
    'TransformerEncoderLayer.setWeights: ffn.w1: int8 values given, but config.weights is ' +
      'float16');
    const bf16 = track(new m.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'bf16' }));
    const state = { in_proj_weight: new Uint16Array(192), in_proj_bias: filled(24),
      'out_proj.weight': filled(64), 'out_proj.bias': filled(8) };
    const torchWhere = 'MultiHeadAttention.setWeightsFromPyTorch';
    expectError(() => bf16.setWeightsFromPyTorch({ ...state, in_proj_weight: new Uint16Array(191) }),
      RangeError, `${torchWhere}: in_proj_weight: expected 192 values for shape [24, 8] ` +
      '(PyTorch layout), got 191');
    expectError(() => bf16.setWeightsFromPyTorch({ ...state, in_proj_bias: new Uint16Array(24) }),
      TypeError, `${torchWhere}: in_proj_bias: expected a Float32Array, got Uint16Array(24)`);
    const f32 = track(new m.MultiHeadAttention({ dModel: 8, numHeads: 2 }));
    expectError(() => f32.setWeightsFromPyTorch(state), RangeError,
      `${torchWhere}: wQ: 16-bit weights given, but config.weights is float32`);
  });
});

// ---------------------------------------------------------------------------
// memoryStats
// ---------------------------------------------------------------------------

describe('memoryStats() counts the weight bytes held, by type', () => {
  const m = builds.relaxed;
  const d = 64;
  const rand = (n, seed) => Float32Array.from({ length: n }, (_v, i) => Math.sin(seed + i * 0.37) / 4);
  const weights = () => ({ wQ: rand(d * d, 1), wK: rand(d * d, 2), wV: rand(d * d, 3),
    wO: rand(d * d, 4), bQ: rand(d, 5), bK: rand(d, 6), bV: rand(d, 7), bO: rand(d, 8) });
  const held = () => m.memoryStats().weightBytes;
  const added = (type, make) => {
    const before = held();
    const object = make(type);
    const after = held();
    object.dispose();
    expect(held()).toEqual(before);
    return Object.fromEntries(Object.keys(after).map((k) => [k, after[k] - before[k]]));
  };

  test('a MultiHeadAttention: float16/bfloat16 half of float32, int8 a quarter plus its scales, q4 4.5 bits', () => {
    const make = (type) => {
      const before = held();
      const mha = new m.MultiHeadAttention({ dModel: d, numHeads: 4, weights: type });
      expect(held()).toEqual(before); // nothing until the weights are set
      mha.setWeights(weights());
      mha.setWeights(weights()); // set again: counted once
      return mha;
    };
    const bytes = Object.fromEntries(['f32', ...NARROW].map((type) => [type, added(type, make)]));
    const f32 = bytes.f32.f32;
    expect(f32).toBeGreaterThanOrEqual(4 * d * d * 4);
    expect(bytes.f32).toEqual({ f32, f16: 0, bf16: 0, int8: 0, q4: 0 });
    expect(bytes.f16).toEqual({ f32: 0, f16: f32 / 2, bf16: 0, int8: 0, q4: 0 });
    expect(bytes.bf16).toEqual({ f32: 0, f16: 0, bf16: f32 / 2, int8: 0, q4: 0 });
    // q4: 18 bytes per 32 weights (GGUF q4_0's blocks); 64 rows are whole
    // blocks and 64 columns whole panels, so nothing is padded.
    expect(bytes.q4).toEqual({ f32: 0, f16: 0, bf16: 0, int8: 0, q4: f32 / 32 * 4.5 });
    // int8: one float scale per (padded) column of each of the four matrices.
    const scales = bytes.int8.int8 - f32 / 4;
    expect(scales).toBeGreaterThanOrEqual(4 * d * 4);
    expect(scales).toBeLessThan(f32 / 4 / 8);
  });

  test('layers count every matrix, FFN included; the cache bytes are float32', () => {
    const c = encoderCases[0];
    const make = (type) => {
      const a = encoderArguments(c);
      const layer = new m.TransformerEncoderLayer({ ...a.config, weights: type });
      layer.setWeights(a.weights);
      return layer;
    };
    const f32 = added('f32', make).f32;
    const { dModel: e, ffnDim: f } = encoderArguments(c).config;
    expect(f32).toBeGreaterThanOrEqual((4 * e * e + 2 * e * f) * 4);
    expect(added('bf16', make).bf16).toBe(f32 / 2);
    expect(added('f16', make).f16).toBe(f32 / 2);
    expect(Object.keys(m.memoryStats().cacheBytes)).toEqual(['f32', 'f16', 'bf16', 'int8']);
  });
});

// ---------------------------------------------------------------------------
// Threaded builds (highway only) take every type
// ---------------------------------------------------------------------------

describe('threaded builds', () => {
  const threaded = {};
  beforeAll(async () => {
    threaded.simd = await createAttentionModule({ relaxedSimd: false, threads: 2 });
    threaded.relaxed = await createAttentionModule({ relaxedSimd: true, threads: 2 });
  });
  afterAll(() => { for (const module of Object.values(threaded)) module.dispose(); });

  test('every type, bit-identical to the single-thread build of the same kind', () => {
    for (const kind of ['simd', 'relaxed']) {
      expect(threaded[kind].threads).toBe(2);
      for (const c of mhaCases) {
        for (const type of NARROW) {
          expect(mhaOutput(threaded[kind], 'highway', c, type))
            .toEqual(mhaOutput(builds[kind], 'highway', c, type));
        }
      }
      const c = encoderCases[0];
      for (const type of NARROW) {
        expect(encoderOutput(threaded[kind], 'highway', c, type))
          .toEqual(encoderOutput(builds[kind], 'highway', c, type));
      }
      const { wO } = mhaArguments(mhaCases[0]).weights;
      const [rows, cols] = matrixShapes(mhaCases[0].config).wO;
      expect(threaded[kind].quantizeInt8(wO, rows, cols))
        .toEqual(builds[kind].quantizeInt8(wO, rows, cols));
    }
  });
});

// ---------------------------------------------------------------------------
// Checkpoints kept 16-bit
// ---------------------------------------------------------------------------

describe('safetensors F16/BF16 round trip with keep16Bit', () => {
  const m = builds.simd;
  const c = encoderCases[0];

  // setWeights with every tensor rounded through dtype, as float32.
  function roundedWeights(dtype) {
    const a = encoderArguments(c);
    return Object.fromEntries(Object.entries(a.weights).map(([group, keys]) => [group,
      Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, roundTo(dtype, v)]))]));
  }

  test.each([['F16', 'f16'], ['BF16', 'bf16']])('%s into a %s layer: the bits reach it unwidened', (dtype, type) => {
    const bytes = encoderSafetensors(encoderArguments(c).weights, dtype);
    const file = parseSafetensors(bytes, { keep16Bit: true });
    expect(file.keep16Bit).toBe(true);
    const tensor = file.tensor('linear1.weight');
    expect(tensor.data).toBeInstanceOf(Uint16Array);
    expect(tensor.dtype).toBe(dtype);
    expect(parseSafetensors(bytes).tensor('linear1.weight').data).toBeInstanceOf(Float32Array);

    const a = encoderArguments(c);
    const layer = track(new m.TransformerEncoderLayer({ ...a.config, weights: type }));
    let seen;
    const setWeightsFromPyTorch = layer.setWeightsFromPyTorch.bind(layer);
    layer.setWeightsFromPyTorch = (state) => { seen = state; return setWeightsFromPyTorch(state); };
    loadCheckpoint(layer, file);
    for (const name of ['self_attn.in_proj_weight', 'self_attn.out_proj.weight', 'linear1.weight',
      'linear2.weight']) {
      expect(seen[name]).toBeInstanceOf(Uint16Array);
    }
    for (const name of ['self_attn.in_proj_bias', 'norm1.weight', 'linear2.bias']) {
      expect(seen[name]).toBeInstanceOf(Float32Array);
    }
    const want = track(new m.TransformerEncoderLayer({ ...a.config, weights: type }));
    want.setWeights(roundedWeights(dtype));
    expect(layer.forward(a.input).data).toEqual(want.forward(a.input).data);

    // Into a float32 layer the same file is widened, exactly.
    const wide = track(new m.TransformerEncoderLayer(a.config));
    loadCheckpoint(wide, file);
    const wideWant = track(new m.TransformerEncoderLayer(a.config));
    wideWant.setWeights(roundedWeights(dtype));
    expect(wide.forward(a.input).data).toEqual(wideWant.forward(a.input).data);
  });

  test('a MultiHeadAttention takes PyTorch bits through its C++ conversion', () => {
    const mc = mhaCases.find((x) => x.config.self_attention && x.config.bias);
    const a = mhaArguments(mc);
    const state = pytorchState(mc);
    for (const [dtype, type] of [['F16', 'f16'], ['BF16', 'bf16']]) {
      const entries = Object.fromEntries(Object.entries(state).map(([name, data]) =>
        [name, { data, shape: [data.length], dtype }]));
      const file = parseSafetensors(writeSafetensors(entries), { keep16Bit: true });
      const flat = Object.fromEntries(file.names.map((name) => [name, file.tensor(name).data]));
      const bits = track(new m.MultiHeadAttention({ ...a.config, weights: type }));
      // Biases come widened from the loader; here by hand.
      bits.setWeightsFromPyTorch({ ...flat, in_proj_bias: roundTo(dtype, state.in_proj_bias),
        'out_proj.bias': roundTo(dtype, state['out_proj.bias']) });
      const want = track(new m.MultiHeadAttention({ ...a.config, weights: type }));
      want.setWeightsFromPyTorch(Object.fromEntries(Object.entries(state).map(([k, v]) =>
        [k, roundTo(dtype, v)])));
      expect(bits.forward(a.query).output.data).toEqual(want.forward(a.query).output.data);
    }
  });
});

// ---------------------------------------------------------------------------
// KV cache storage types (config.cacheType)
// ---------------------------------------------------------------------------

// The narrow types a cache holds, as the module lists them.
const CACHE_TYPES = builds.simd.choices.cacheType.filter((t) => t !== 'f32');

describe.each(matrix)('cacheType, %s build, %s backend', (_, backend, module) => {
  test('decoding through a float16/bfloat16/int8 cache within 2x3u of float32', () => {
    for (const c of mhaCases.filter((x) => x.config.self_attention)) {
      const a = mhaArguments(c);
      const [batch, tokens] = a.query.shape;
      const f32 = track(new module.MultiHeadAttention({ ...a.config, backend }));
      f32.setWeights(a.weights);
      const want = f32.forward(a.query, undefined, undefined, { causal: true }).output.data;
      for (const cacheType of CACHE_TYPES) {
        const mha = track(new module.MultiHeadAttention({ ...a.config, backend, cacheType }));
        expect(mha.config.cacheType).toBe(cacheType);
        mha.setWeights(a.weights);
        const cache = track(mha.createKVCache({ batch, maxLength: tokens }));
        const steps = [];
        for (let t = 0; t < tokens; ++t) {
          steps.push(mha.forwardIncremental(sliceTokens(a.query, t, t + 1), cache).output);
        }
        const got = new Float32Array(want.length);
        const d = a.config.dModel;
        steps.forEach((s, t) => {
          for (let b = 0; b < batch; ++b) {
            got.set(s.data.subarray(b * d, (b + 1) * d), (b * tokens + t) * d);
          }
        });
        expectWithin(`${c.name} cache`, cacheType, got, want, CHAINED_PRODUCTS.mha);
      }
    }
  });

  test('cross-attention over float16/bfloat16/int8 precomputed keys/values within 2x3u', () => {
    for (const c of mhaCases.filter((x) => !x.config.self_attention)) {
      const a = mhaArguments(c);
      const f32 = track(new module.MultiHeadAttention({ ...a.config, backend }));
      f32.setWeights(a.weights);
      const want = f32.forward(a.query, a.key, a.key, a.options).output.data;
      for (const cacheType of CACHE_TYPES) {
        const mha = track(new module.MultiHeadAttention({ ...a.config, backend, cacheType }));
        mha.setWeights(a.weights);
        const kv = track(mha.precomputeKeyValue(a.key,
          a.options.keyPaddingMask ? { keyPaddingMask: a.options.keyPaddingMask } : undefined));
        const got = mha.forward(a.query, kv, undefined, { causal: a.options.causal }).output.data;
        expectWithin(`${c.name} precomputed`, cacheType, got, want, CHAINED_PRODUCTS.mha);
      }
    }
  });
});

describe('cacheType: bytes and errors', () => {
  const m = builds.simd;
  const held = () => m.memoryStats().cacheBytes;

  test('memoryStats().cacheBytes: float16/bfloat16 half of float32, int8 a quarter plus its row scales, back to 0 when disposed', () => {
    const before = held();
    const bytes = {};
    for (const cacheType of ['f32', ...CACHE_TYPES]) {
      const mha = track(new m.MultiHeadAttention({ dModel: 64, numHeads: 4, cacheType }));
      const cache = mha.createKVCache({ batch: 2, maxLength: 32 });
      bytes[cacheType] = held()[cacheType] - before[cacheType];
      const other = Object.keys(before).filter((k) => k !== cacheType);
      expect(other.map((k) => held()[k])).toEqual(other.map((k) => before[k]));
      cache.dispose();
      expect(held()).toEqual(before);
    }
    expect(bytes.f32).toBeGreaterThanOrEqual(2 * 2 * 32 * 64 * 4);
    expect(bytes.f16).toBe(bytes.f32 / 2);
    expect(bytes.bf16).toBe(bytes.f32 / 2);
    // A float scale per key row and value row: 2 x batch x maxLength x heads.
    expect(bytes.int8).toBe(bytes.f32 / 4 + 2 * 2 * 32 * 4 * 4);

    const layer = track(new m.TransformerDecoderLayer({ dModel: 16, numHeads: 2, ffnDim: 32,
      cacheType: 'bf16' }));
    const cache = track(layer.createKVCache({ batch: 1, maxLength: 8 }));
    expect(held().bf16 - before.bf16).toBeGreaterThanOrEqual(2 * 8 * 16 * 2);
    cache.dispose();
    expect(held()).toEqual(before);
  });

  test('an unknown cacheType (C++) or one that is not a string (JS)', () => {
    expectError(() => new m.MultiHeadAttention({ dModel: 8, numHeads: 2, cacheType: 'q4' }),
      RangeError, "MultiHeadAttention: config.cacheType: expected 'f32', 'f16', 'bf16' or " +
      "'int8', got 'q4'");
    expectError(() => new m.TransformerDecoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8,
      cacheType: true }), TypeError, "TransformerDecoderLayer: config.cacheType: expected a " +
      "string (a name of module.choices.cacheType), got true");
  });
});
