// Every error a user can act on: its class and a message naming the
// argument, the expected and the given value; the instance stays usable.
import { expectMatchesGolden, goldenCaseNames, loadGoldenCase, mhaArguments, pytorchState }
  from './support/golden.mjs';
import { createAttentionModule, disposeSymbol, track } from './support/modules.mjs';
import { expectError } from './support/errors.mjs';

const module = await createAttentionModule();
// A small self-attention case with batch 1 and a cross case.
const selfCase = loadGoldenCase(goldenCaseNames('mha').find((n) => {
  const c = loadGoldenCase(n);
  return c.config.self_attention && c.config.batch === 1 && c.config.d_model <= 16;
}));
const crossCase = loadGoldenCase(goldenCaseNames('mha').find((n) => {
  const c = loadGoldenCase(n).config;
  return !c.self_attention && c.kdim !== c.d_model;
}));

const E = 8;
const H = 2;
const ones = (n) => new Float32Array(n).fill(0.5);
const weights = () => ({
  wQ: ones(E * E), wK: ones(E * E), wV: ones(E * E), wO: ones(E * E),
  bQ: ones(E), bK: ones(E), bV: ones(E), bO: ones(E),
});
const x = (b, t, e = E) => ({ data: ones(b * t * e), shape: [b, t, e] });

function ready(config = { dModel: E, numHeads: H }) {
  const mha = track(new module.MultiHeadAttention(config));
  if (config.bias === false) {
    const { bQ, bK, bV, bO, ...w } = weights();
    mha.setWeights(w);
  } else {
    mha.setWeights(weights());
  }
  return mha;
}

// The instance still computes a golden case right after an error.
function expectStillUsable() {
  const a = mhaArguments(selfCase);
  const mha = track(new module.MultiHeadAttention(a.config));
  mha.setWeights(a.weights);
  expectMatchesGolden(mha.forward(a.query, a.key, a.value, a.options), selfCase);
}

afterEach(expectStillUsable);

describe('wrong shape or length', () => {
  test('query features differ from dModel (checked in C++)', () => {
    expectError(() => ready().forward(x(1, 5, 4)), RangeError,
      'MultiHeadAttention.forward: query.features: expected 8 (dModel), got 4');
  });
  test('data length does not match the shape', () => {
    expectError(() => ready().forward({ data: ones(41), shape: [5, 8] }), RangeError,
      'MultiHeadAttention.forward: query: expected 40 values for shape [1, 5, 8], got 41');
  });
  test('shape of the wrong rank', () => {
    expectError(() => ready().forward({ data: ones(40), shape: [40] }), RangeError,
      'MultiHeadAttention.forward: query.shape: expected [batch, tokens, features] or ' +
      '[tokens, features], got [40]');
  });
  test('shape that is not an array', () => {
    expectError(() => ready().forward({ data: ones(40), shape: '5x8' }), TypeError,
      'MultiHeadAttention.forward: query.shape: expected an array [batch, tokens, features] ' +
      'or [tokens, features], got "5x8"');
  });
  test('negative or fractional dimension', () => {
    expectError(() => ready().forward({ data: ones(40), shape: [5, 8.5] }), RangeError,
      'MultiHeadAttention.forward: query.shape[1]: expected a non-negative integer, got 8.5');
  });
  test('zero tokens (checked in C++)', () => {
    expectError(() => ready().forward(x(1, 0)), RangeError,
      'MultiHeadAttention.forward: query.tokens: must be > 0, got 0');
  });
  test('key batch differs from query batch', () => {
    expectError(() => ready().forward(x(2, 3), x(1, 4)), RangeError,
      'MultiHeadAttention.forward: key.batch: expected 2 (query.batch), got 1');
  });
  test('value tokens differ from key tokens', () => {
    expectError(() => ready().forward(x(1, 3), x(1, 4), x(1, 5)), RangeError,
      'MultiHeadAttention.forward: value.tokens: expected 4 (key.tokens), got 5');
  });
  test('cross-attention key of the wrong width', () => {
    const a = mhaArguments(crossCase);
    const mha = track(new module.MultiHeadAttention(a.config));
    mha.setWeights(a.weights);
    const [b, t] = a.key.shape;
    expectError(() => mha.forward(a.query, x(b, t, a.config.dModel)), RangeError,
      `MultiHeadAttention.forward: key.features: expected ${a.config.kDim} (kDim), ` +
      `got ${a.config.dModel}`);
  });
});

describe('data that is not a Float32Array', () => {
  test('plain array', () => {
    expectError(() => ready().forward({ data: [...ones(40)], shape: [5, 8] }), TypeError,
      'MultiHeadAttention.forward: query.data: expected a Float32Array, got Array(40)');
  });
  test('Float64Array key', () => {
    expectError(() => ready().forward(x(1, 5), { data: new Float64Array(40), shape: [5, 8] }),
      TypeError,
      'MultiHeadAttention.forward: key.data: expected a Float32Array, got Float64Array(40)');
  });
  test('tensor that is not an object', () => {
    expectError(() => ready().forward(new Float32Array(40)), TypeError,
      'MultiHeadAttention.forward: query: expected a tensor { data: Float32Array, ' +
      'shape: number[] }, got Float32Array(40)');
  });
  test('weights as plain arrays', () => {
    expectError(() => ready().setWeights({ ...weights(), wK: Array(64).fill(0) }), TypeError,
      "MultiHeadAttention.setWeights: wK: expected a Float32Array (or, for config.weights 'f16' " +
      "or 'bf16', a Uint16Array of their bits; for 'int8', { values: Int8Array, scales: " +
      "Float32Array }; for 'q4', { q4: Uint8Array }), got Array(64)");
  });
  test('non-finite input values (checked in C++)', () => {
    const q = x(1, 5);
    q.data[7] = NaN;
    expectError(() => ready().forward(q), RangeError,
      'MultiHeadAttention.forward: query: element 7 is NaN');
  });
});

describe('masks of the wrong size or type', () => {
  // [name, batch of the 5-token query, options, error class, message]
  test.each([
    ['keyPaddingMask length', 2, { keyPaddingMask: new Uint8Array(3) }, RangeError,
      'MultiHeadAttention.forward: options.keyPaddingMask: expected 10 values for shape ' +
      '[2, 5], got 3'],
    ['keyPaddingMask type', 1, { keyPaddingMask: [1, 1, 1, 1, 0] }, TypeError,
      'MultiHeadAttention.forward: options.keyPaddingMask: expected a Uint8Array ' +
      '(1 = real token, 0 = padding), got [1, 1, 1, 1, 0]'],
    ['attnMask length', 2, { attnMask: new Float32Array(7) }, RangeError,
      'MultiHeadAttention.forward: options.attnMask: expected 25 values for [5, 5] or ' +
      '100 for [2, 2, 5, 5], got 7'],
    ['attnMask type', 1, { attnMask: new Float64Array(25) }, TypeError,
      'MultiHeadAttention.forward: options.attnMask: expected a Float32Array, got ' +
      'Float64Array(25)'],
  ])('%s', (name, batch, options, Class, message) => {
    expectError(() => ready().forward(x(batch, 5), undefined, undefined, options), Class, message);
  });
  test('attnMask with NaN (-Infinity is allowed)', () => {
    const mask = new Float32Array(25).fill(-Infinity);
    for (let i = 0; i < 5; i++) mask[i * 6] = 0;
    expect(ready().forward(x(1, 5), undefined, undefined, { attnMask: mask }).output.shape)
      .toEqual([1, 5, E]);
    mask[3] = NaN;
    expectError(() => ready().forward(x(1, 5), undefined, undefined, { attnMask: mask }),
      RangeError, 'MultiHeadAttention.forward: options.attnMask: element 3 is NaN');
  });
  test('unknown option', () => {
    expectError(() => ready().forward(x(1, 5), undefined, undefined, { needWeights: true }),
      TypeError, "MultiHeadAttention.forward: options: unknown key 'needWeights' (expected " +
      'causal, keyPaddingMask, kvLengths, attnMask, boolMask, returnAttnWeights, returnScores, ' +
      'returnPerHeadOutput, returnIntermediates, window, scale, softcap, queryOffset, ' +
      'positionOffset, training)');
  });
  test('option of the wrong type', () => {
    expectError(() => ready().forward(x(1, 5), undefined, undefined, { causal: 1 }),
      TypeError, 'MultiHeadAttention.forward: options.causal: expected a boolean or ' +
      "'none', 'top-left' or 'bottom-right', got 1");
  });
  test('value without key', () => {
    expectError(() => ready().forward(x(1, 5), undefined, x(1, 5)), TypeError,
      'MultiHeadAttention.forward: value given without key; pass key too ' +
      '(value omitted means value = key)');
  });
});

describe('weights of the wrong size', () => {
  const mha = () => track(new module.MultiHeadAttention({ dModel: E, numHeads: H }));
  test('wQ length (checked in C++)', () => {
    expectError(() => mha().setWeights({ ...weights(), wQ: ones(63) }), RangeError,
      'MultiHeadAttention.setWeights: wQ: expected 64 values for shape [8, 8], got 63');
  });
  test('bias length', () => {
    expectError(() => mha().setWeights({ ...weights(), bO: ones(4) }), RangeError,
      'MultiHeadAttention.setWeights: bO: expected 8 values for shape [8], got 4');
  });
  test('missing bias', () => {
    const { bV, ...w } = weights();
    expectError(() => mha().setWeights(w), TypeError,
      'MultiHeadAttention.setWeights: bV: expected a Float32Array (config.bias is true), ' +
      'got undefined');
  });
  test('bias given with bias: false', () => {
    const m = track(new module.MultiHeadAttention({ dModel: E, numHeads: H, bias: false }));
    expectError(() => m.setWeights(weights()), RangeError,
      'MultiHeadAttention.setWeights: bQ: config.bias is false, so no bias may be given; ' +
      'got 8 values');
  });
  test('non-finite weight', () => {
    const w = weights();
    w.wO[5] = Infinity;
    expectError(() => mha().setWeights(w), RangeError,
      'MultiHeadAttention.setWeights: wO: element 5 is +Infinity');
  });
  test('unknown weight name', () => {
    expectError(() => mha().setWeights({ ...weights(), wq: ones(64) }), TypeError,
      "MultiHeadAttention.setWeights: weights: unknown key 'wq' (expected wQ, wK, wV, wO, " +
      'bQ, bK, bV, bO, qNorm, kNorm)');
  });
  test('a failed setWeights keeps the previous weights', () => {
    const m = ready();
    const before = m.forward(x(1, 3)).output.data;
    expect(() => m.setWeights({ ...weights(), wQ: ones(3) })).toThrow(RangeError);
    expect(m.forward(x(1, 3)).output.data).toEqual(before);
  });
});

describe('PyTorch state of the wrong size or kind', () => {
  const a = mhaArguments(selfCase);
  const mha = () => track(new module.MultiHeadAttention(a.config));
  const e = a.config.dModel;
  test('in_proj_weight length', () => {
    expectError(() => mha().setWeightsFromPyTorch({ ...pytorchState(selfCase),
      in_proj_weight: ones(e * e) }), RangeError,
    `MultiHeadAttention.setWeightsFromPyTorch: in_proj_weight: expected ${3 * e * e} values ` +
      `for shape [${3 * e}, ${e}] (PyTorch layout), got ${e * e}`);
  });
  test('in_proj_weight when kDim differs', () => {
    const c = mhaArguments(crossCase).config;
    const m = track(new module.MultiHeadAttention(c));
    expectError(() => m.setWeightsFromPyTorch({ in_proj_weight: ones(3 * c.dModel * c.dModel),
      'out_proj.weight': ones(c.dModel * c.dModel) }), RangeError,
    'MultiHeadAttention.setWeightsFromPyTorch: in_proj_weight: PyTorch packs q, k and v only ' +
      `when kDim == vDim == dModel (here kDim = ${c.kDim}, vDim = ${c.vDim}, dModel = ` +
      `${c.dModel}); pass q_proj_weight, k_proj_weight and v_proj_weight`);
  });
  test('missing out_proj.weight', () => {
    const { 'out_proj.weight': _, ...state } = pytorchState(selfCase);
    expectError(() => mha().setWeightsFromPyTorch(state), RangeError,
      'MultiHeadAttention.setWeightsFromPyTorch: out_proj.weight: missing (the output ' +
      'projection is always needed)');
  });
  test('missing in_proj_bias', () => {
    const { in_proj_bias: _, ...state } = pytorchState(selfCase);
    expectError(() => mha().setWeightsFromPyTorch(state), RangeError,
      'MultiHeadAttention.setWeightsFromPyTorch: in_proj_bias: missing (config.bias is true)');
  });
  test('packed and separate weights together', () => {
    expectError(() => mha().setWeightsFromPyTorch({ ...pytorchState(selfCase),
      q_proj_weight: ones(e * e) }), RangeError,
    'MultiHeadAttention.setWeightsFromPyTorch: in_proj_weight: given together with ' +
      'q_proj_weight/k_proj_weight/v_proj_weight; pass either the packed or the separate ' +
      'weights');
  });
  test('add_bias_kv', () => {
    expectError(() => mha().setWeightsFromPyTorch({ ...pytorchState(selfCase),
      bias_k: ones(e) }), RangeError,
    'MultiHeadAttention.setWeightsFromPyTorch: bias_k: add_bias_kv=True is not supported');
  });
  test('both spellings of out_proj.weight', () => {
    const state = pytorchState(selfCase);
    expectError(() => mha().setWeightsFromPyTorch({ ...state,
      out_proj_weight: state['out_proj.weight'] }), TypeError,
    "MultiHeadAttention.setWeightsFromPyTorch: state: both 'out_proj_weight' and " +
      "'out_proj.weight' given; pass one");
  });
  test('unknown state_dict key', () => {
    expectError(() => mha().setWeightsFromPyTorch({ ...pytorchState(selfCase),
      'self_attn.in_proj_weight': ones(1) }), TypeError,
    "MultiHeadAttention.setWeightsFromPyTorch: state: unknown key 'self_attn.in_proj_weight' " +
      '(expected the nn.MultiheadAttention state_dict names: in_proj_weight, q_proj_weight, ' +
      'k_proj_weight, v_proj_weight, in_proj_bias, out_proj_weight, out_proj.weight, ' +
      'out_proj_bias, out_proj.bias)');
  });
});

describe('call order and life cycle', () => {
  test('forward before setWeights', () => {
    const mha = track(new module.MultiHeadAttention({ dModel: E, numHeads: H }));
    expectError(() => mha.forward(x(1, 5)), Error,
      'MultiHeadAttention.forward: no weights yet; call setWeights() or ' +
      'setWeightsFromPyTorch() first');
  });
  test('forward before setWeights after a failed setWeights', () => {
    const mha = track(new module.MultiHeadAttention({ dModel: E, numHeads: H }));
    expect(() => mha.setWeights({ ...weights(), wV: ones(1) })).toThrow(RangeError);
    expect(() => mha.forward(x(1, 5))).toThrow('no weights yet');
  });
  test('use after dispose()', () => {
    const mha = ready();
    mha.dispose();
    expect(mha.disposed).toBe(true);
    const gone = 'this MultiHeadAttention was disposed; create a new one';
    expectError(() => mha.forward(x(1, 5)), Error, `MultiHeadAttention.forward: ${gone}`);
    expectError(() => mha.setWeights(weights()), Error,
      `MultiHeadAttention.setWeights: ${gone}`);
    expectError(() => mha.setWeightsFromPyTorch({}), Error,
      `MultiHeadAttention.setWeightsFromPyTorch: ${gone}`);
    expect(() => mha.dispose()).not.toThrow();
    expect(() => mha[disposeSymbol]()).not.toThrow();
  });
  test('[Symbol.dispose]() disposes; Symbol.for(\'Symbol.dispose\') is the fallback key', () => {
    const mha = ready();
    expect(typeof mha[Symbol.for('Symbol.dispose')]).toBe('function');
    if (typeof Symbol.dispose === 'symbol') {
      expect(mha[Symbol.for('Symbol.dispose')]).toBe(mha[Symbol.dispose]);
    }
    mha[disposeSymbol]();
    expect(mha.disposed).toBe(true);
  });
  test('constructor without new', () => {
    expectError(() => module.MultiHeadAttention({ dModel: E, numHeads: H }), TypeError,
      "Class constructor MultiHeadAttention cannot be invoked without 'new'");
  });
});

describe('config and backend', () => {
  test('unknown backend in the config (checked in C++)', () => {
    expectError(() => new module.MultiHeadAttention({ dModel: E, numHeads: H, backend: 'avx' }),
      RangeError, "MultiHeadAttention: backend: expected 'highway', 'xsimd' or 'scalar', " +
      "got 'avx'");
  });
  test('unknown backend for the module', async () => {
    await expect(createAttentionModule({ backend: 'neon' })).rejects.toThrow(new RangeError(
      "createAttentionModule: backend: expected 'highway', 'xsimd' or 'scalar', got 'neon'"));
  });
  test('backend that is not a string', async () => {
    await expect(createAttentionModule({ backend: 1 })).rejects.toThrow(new TypeError(
      'createAttentionModule: options.backend: expected a string, got 1'));
  });
  test('numHeads does not divide dModel (checked in C++)', () => {
    expectError(() => new module.MultiHeadAttention({ dModel: 10, numHeads: 3 }), RangeError,
      'MultiHeadAttention: config.dModel: must be divisible by numHeads (3), got 10');
  });
  test('dModel 0 (checked in C++)', () => {
    expectError(() => new module.MultiHeadAttention({ dModel: 0, numHeads: 1 }), RangeError,
      'MultiHeadAttention: config.dModel: must be > 0, got 0');
  });
  test('dModel missing', () => {
    expectError(() => new module.MultiHeadAttention({ numHeads: 1 }), TypeError,
      'MultiHeadAttention: config.dModel: required, expected a positive integer');
  });
  test('negative numHeads', () => {
    expectError(() => new module.MultiHeadAttention({ dModel: 8, numHeads: -2 }), RangeError,
      'MultiHeadAttention: config.numHeads: expected a non-negative integer, got -2');
  });
  test('dModel as a string', () => {
    expectError(() => new module.MultiHeadAttention({ dModel: '8', numHeads: 2 }), TypeError,
      'MultiHeadAttention: config.dModel: expected an integer, got "8"');
  });
  test('unknown config key', () => {
    expectError(() => new module.MultiHeadAttention({ dModel: 8, numHeads: 2, heads: 2 }),
      TypeError, "MultiHeadAttention: config: unknown key 'heads' (expected dModel, numHeads, " +
      'kDim, vDim, headDim, headDimV, numKvHeads, rope, qkNorm, bias, backend, threads, weights, ' +
      'cacheType)');
  });
  test('module options of the wrong type', async () => {
    await expect(createAttentionModule({ simd: 'yes' })).rejects.toThrow(new TypeError(
      'createAttentionModule: options.simd: expected a boolean, got "yes"'));
    await expect(createAttentionModule({ relaxedSimd: 1 })).rejects.toThrow(new TypeError(
      'createAttentionModule: options.relaxedSimd: expected a boolean, got 1'));
    await expect(createAttentionModule({ wasmPath: 3 })).rejects.toThrow(new TypeError(
      'createAttentionModule: options.wasmPath: expected a string or URL, got 3'));
    await expect(createAttentionModule({ threads: '4' })).rejects.toThrow(new TypeError(
      'createAttentionModule: options.threads: expected an integer, got "4"'));
    await expect(createAttentionModule({ thread: 4 })).rejects.toThrow(new TypeError(
      "createAttentionModule: options: unknown key 'thread' (expected backend, simd, " +
      'relaxedSimd, threads, wasmPath, training)'));
  });
});

describe('a heap that cannot grow', () => {
  test('attention weights larger than the 2 GiB heap', () => {
    // [1, 1, 30000, 30000] floats = 3.4 GiB: refused before anything is allocated.
    const m = track(new module.MultiHeadAttention({ dModel: 1, numHeads: 1 }));
    m.setWeights({ wQ: ones(1), wK: ones(1), wV: ones(1), wO: ones(1),
      bQ: ones(1), bK: ones(1), bV: ones(1), bO: ones(1) });
    const t = 30000;
    let error;
    try {
      m.forward({ data: ones(t), shape: [1, t, 1] }, undefined, undefined,
        { returnAttnWeights: true });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RangeError);
    expect(error.message).toBe('MultiHeadAttention.forward: attention weights: batch * ' +
      'numHeads * query tokens * key tokens = 1 * 1 * 30000 * 30000 = 900000000 floats ' +
      '(3.35276 GiB) exceeds the 2 GiB a wasm32 module can hold');
    // The same object still works with sizes that fit.
    expect(m.forward({ data: ones(100), shape: [1, 100, 1] }, undefined, undefined,
      { returnAttnWeights: true }).attnWeights.shape).toEqual([1, 1, 100, 100]);
  });
});

describe('a method called on another kind of object', () => {
  test('is a TypeError naming the method and what it was called on', () => {
    const mha = track(new module.MultiHeadAttention({ dModel: E, numHeads: H }));
    mha.setWeights(weights());
    const layer = track(new module.TransformerDecoderLayer({ dModel: E, numHeads: H, ffnDim: 4 }));
    const cache = track(mha.createKVCache({ batch: 1, maxLength: 2 }));
    const x = { data: ones(E), shape: [1, E] };
    expectError(() => module.MultiHeadAttention.prototype.forwardIncremental.call(layer, x, cache),
      TypeError, 'MultiHeadAttention.forwardIncremental: called on an object ' +
      '(TransformerDecoderLayer), not a MultiHeadAttention');
    expectError(() => module.TransformerDecoderLayer.prototype.createKVCache.call(mha,
      { batch: 1, maxLength: 2 }), TypeError, 'TransformerDecoderLayer.createKVCache: called on ' +
      'an object (MultiHeadAttention), not a TransformerDecoderLayer');
    expectError(() => Object.getPrototypeOf(cache).append.call(mha, x, x), TypeError,
      'KVCache.append: called on an object (MultiHeadAttention), not a KVCache');
    expectError(() => module.MultiHeadAttention.prototype.dispose.call(cache), TypeError,
      'MultiHeadAttention.dispose: called on an object (KVCache), not a MultiHeadAttention');
    // Both still work.
    expect(mha.forwardIncremental(x, cache).output.shape).toEqual([1, E]);
  });
});

describe('eps that float32 cannot hold', () => {
  // 1e-60 is 0 in float32, the type LayerNorm adds it in: a constant row
  // would be 0 / 0. Every eps is judged as that float32, in C++.
  const expected = (name, given) => `${name}: expected a finite number > 0 that float32 can ` +
    `hold (1.4e-45 to 3.4e38), got ${given}`;
  test.each([[1e-60, '1e-60'], [5e-46, '5e-46'], [1e40, '1e+40']])('%s in every eps', (eps, given) => {
    for (const Layer of [module.TransformerEncoderLayer, module.TransformerDecoderLayer]) {
      expectError(() => new Layer({ dModel: E, numHeads: H, ffnDim: 8, eps }), RangeError,
        `${Layer.name}: ${expected('config.eps', given)}`);
    }
    const row = { data: new Float32Array(E).fill(3), shape: [1, E] };
    const gammaBeta = { gamma: ones(E), beta: new Float32Array(E).fill(0.25) };
    expectError(() => module.layerNorm(row, { ...gammaBeta, eps }), RangeError,
      `layerNorm: ${expected('options.eps', given)}`);
  });

  test('the smallest float32 > 0 is accepted: a constant row gives beta', () => {
    const row = { data: new Float32Array(E).fill(3), shape: [1, E] };
    const beta = new Float32Array(E).fill(0.25);
    expect(Array.from(module.layerNorm(row, { gamma: ones(E), beta, eps: 1e-45 }).data))
      .toEqual(Array.from(beta));
    const layer = track(new module.TransformerEncoderLayer({ dModel: E, numHeads: H, ffnDim: 8,
      eps: 1e-45 }));
    expect(layer.config.eps).toBe(1e-45);
  });
});
