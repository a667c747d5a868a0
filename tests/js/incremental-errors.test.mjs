// Errors of the KV cache, precomputed K/V and layer APIs: class and exact
// message (naming the argument, the expected and the given value), and what
// stays unchanged afterwards.
import { loadGoldenCase, mhaArguments } from './support/golden.mjs';
import { decoderArguments, encoderArguments, sliceTokens } from './support/layers.mjs';
import { createAttentionModule, disposeSymbol, track } from './support/modules.mjs';
import { expectError } from './support/errors.mjs';

const module = await createAttentionModule();
const causalCase = loadGoldenCase('self_causal');
const encoderCase = loadGoldenCase('encoder_layer_small');
const decoderCase = loadGoldenCase('decoder_layer_small');

const E = 8;
const H = 2;
const ones = (n) => new Float32Array(n).fill(0.5);
const weights = (e = E) => ({
  wQ: ones(e * e), wK: ones(e * e), wV: ones(e * e), wO: ones(e * e),
  bQ: ones(e), bK: ones(e), bV: ones(e), bO: ones(e),
});
const x = (b, t, e = E) => ({ data: ones(b * t * e), shape: [b, t, e] });

// An attention with constant weights of the right sizes for its config.
function ready(config = { dModel: E, numHeads: H }) {
  const mha = track(new module.MultiHeadAttention(config));
  const { dModel: d, kDim, vDim, headDim, headDimV, numHeads } = mha.config;
  const hk = numHeads * headDim;
  const hv = numHeads * headDimV;
  mha.setWeights({
    wQ: ones(d * hk), wK: ones(kDim * hk), wV: ones(vDim * hv), wO: ones(hv * d),
    bQ: ones(hk), bK: ones(hk), bV: ones(hv), bO: ones(d),
  });
  return mha;
}

describe('KV cache', () => {
  test('a full cache is a RangeError naming the numbers; the cache is unchanged', () => {
    const a = mhaArguments(causalCase);
    const mha = track(new module.MultiHeadAttention(a.config));
    mha.setWeights(a.weights);
    const cache = track(mha.createKVCache({ batch: 1, maxLength: 5 }));
    mha.forwardIncremental(sliceTokens(a.query, 0, 4), cache);
    const keys = cache.keys();
    const values = cache.values();
    expectError(() => mha.forwardIncremental(sliceTokens(a.query, 4, 6), cache), RangeError,
      'MultiHeadAttention.forwardIncremental: KV cache full: holds 4 of 5 tokens, cannot add ' +
      '2; create the cache with a larger maxLength, or truncate or reset it');
    expect(cache.length).toBe(4);
    expect(cache.keys()).toEqual(keys);
    expect(cache.values()).toEqual(values);
    expectError(() => cache.append(sliceTokens(keys, 0, 2), sliceTokens(values, 0, 2)),
      RangeError, 'KVCache.append: KV cache full: holds 4 of 5 tokens, cannot add 2; create ' +
      'the cache with a larger maxLength, or truncate or reset it');
    expect(cache.length).toBe(4);
    // It still takes what fits, and then continues the straight run.
    mha.forwardIncremental(sliceTokens(a.query, 4, 5), cache);
    expect(cache.length).toBe(5);
  });

  test('the batch of x differs from the cache\'s', () => {
    const mha = ready();
    const cache = track(mha.createKVCache({ batch: 2, maxLength: 4 }));
    expectError(() => mha.forwardIncremental(x(1, 1), cache), RangeError,
      'MultiHeadAttention.forwardIncremental: x.batch: expected 2 (batch of the KV cache), got 1');
    expect(cache.length).toBe(0);
  });

  test('a disposed cache', () => {
    const mha = ready();
    const cache = mha.createKVCache({ batch: 1, maxLength: 4 });
    cache.dispose();
    expect(cache.disposed).toBe(true);
    expectError(() => mha.forwardIncremental(x(1, 1), cache), Error,
      'MultiHeadAttention.forwardIncremental: cache: the KVCache was disposed; create a new one');
    expectError(() => cache.length, Error, 'KVCache.length: this KVCache was disposed; create a new one');
    expectError(() => cache.keys(), Error, 'KVCache.keys: this KVCache was disposed; create a new one');
    expectError(() => cache.append(x(1, 1), x(1, 1)), Error,
      'KVCache.append: this KVCache was disposed; create a new one');
    expectError(() => cache.truncate(0), Error,
      'KVCache.truncate: this KVCache was disposed; create a new one');
    expectError(() => cache.reset(), Error, 'KVCache.reset: this KVCache was disposed; create a new one');
    expect([cache.batch, cache.maxLength]).toEqual([1, 4]);
    expect(() => cache.dispose()).not.toThrow();
    expect(() => cache[disposeSymbol]()).not.toThrow();
  });

  test('a cache of an attention with another head layout', () => {
    const mha = ready();
    const other = ready({ dModel: E, numHeads: 4 });
    const cache = track(other.createKVCache({ batch: 1, maxLength: 4 }));
    expectError(() => mha.forwardIncremental(x(1, 1), cache), RangeError,
      'MultiHeadAttention.forwardIncremental: KV cache: made by an attention with 4 heads of ' +
      `d_k 2, d_v 2 (padded ${other.kernels === 'scalar' ? 2 : 4}), this one has 2 heads of ` +
      `d_k 4, d_v 4 (padded 4)`);
    expect(cache.length).toBe(0);
  });

  test('a cache of another module (wasm instance)', async () => {
    const second = await createAttentionModule({ simd: !module.simd });
    const mha = ready();
    const foreign = new second.MultiHeadAttention({ dModel: E, numHeads: H });
    const cache = foreign.createKVCache({ batch: 1, maxLength: 4 });
    try {
      expectError(() => mha.forwardIncremental(x(1, 1), cache), Error,
        'MultiHeadAttention.forwardIncremental: cache: this KVCache belongs to another module ' +
        '(another createAttentionModule() call, i.e. another wasm instance); it can only be used ' +
        'with the objects of the module that created it');
    } finally {
      cache.dispose();
      foreign.dispose();
    }
  });

  test('something that is not a cache', () => {
    const mha = ready();
    const kv = track(mha.precomputeKeyValue(x(1, 3)));
    expectError(() => mha.forwardIncremental(x(1, 1), kv), TypeError,
      'MultiHeadAttention.forwardIncremental: cache: expected a KVCache (from createKVCache()), ' +
      'got a PrecomputedKeyValue');
    expectError(() => mha.forwardIncremental(x(1, 1), { length: 0 }), TypeError,
      'MultiHeadAttention.forwardIncremental: cache: expected a KVCache (from createKVCache()), ' +
      'got an object (Object)');
    const cache = track(mha.createKVCache({ batch: 1, maxLength: 2 }));
    expectError(() => new cache.constructor({}), TypeError,
      'KVCache: not constructible; use createKVCache() of a MultiHeadAttention or a ' +
      'TransformerDecoderLayer');
  });

  test('createKVCache options', () => {
    const mha = ready();
    expectError(() => mha.createKVCache({ batch: 1, maxLength: 0 }), RangeError,
      'MultiHeadAttention.createKVCache: maxLength: must be > 0, got 0');
    expectError(() => mha.createKVCache({ batch: 1 }), TypeError,
      'MultiHeadAttention.createKVCache: options.maxLength: required, expected a positive integer');
    expectError(() => mha.createKVCache({ batch: 1, maxLength: 4, length: 2 }), TypeError,
      "MultiHeadAttention.createKVCache: options: unknown key 'length' (expected batch, maxLength)");
    expectError(() => mha.createKVCache(), TypeError,
      'MultiHeadAttention.createKVCache: options: expected an object, got undefined');
  });

  test('append of the wrong shapes', () => {
    const mha = ready({ dModel: E, numHeads: H, headDimV: 3 });
    const cache = track(mha.createKVCache({ batch: 2, maxLength: 4 }));
    expectError(() => cache.append(x(1, 2, 8), x(1, 2, 6)), RangeError,
      'KVCache.append: keys.batch: expected 2 (batch of the KV cache), got 1');
    expectError(() => cache.append(x(2, 2, 6), x(2, 2, 6)), RangeError,
      'KVCache.append: keys.features: expected 8 (heads * key head width), got 6');
    expectError(() => cache.append(x(2, 2, 8), x(2, 3, 6)), RangeError,
      'KVCache.append: values.tokens: expected 2 (keys.tokens), got 3');
    expectError(() => cache.append(x(2, 2, 8), x(2, 2, 8)), RangeError,
      'KVCache.append: values.features: expected 6 (heads * value head width), got 8');
    const bad = x(2, 2, 6);
    bad.data[3] = NaN;
    expectError(() => cache.append(x(2, 2, 8), bad), RangeError,
      'KVCache.append: values: element 3 is NaN');
    expectError(() => cache.append(x(2, 2, 8)), TypeError,
      'KVCache.append: values: expected a tensor { data: Float32Array, shape: number[] }, got ' +
      'undefined');
    expect(cache.length).toBe(0);
  });

  test('truncate out of range', () => {
    const mha = ready();
    const cache = track(mha.createKVCache({ batch: 1, maxLength: 4 }));
    mha.forwardIncremental(x(1, 2), cache);
    expectError(() => cache.truncate(3), RangeError,
      "KVCache.truncate: n: expected at most the cache's length (2), got 3");
    expectError(() => cache.truncate(-1), RangeError,
      "KVCache.truncate: n: expected a non-negative integer, got -1");
    expectError(() => cache.truncate('1'), TypeError,
      "KVCache.truncate: n: expected an integer, got \"1\"");
    expect(cache.length).toBe(2);
  });

  test('forwardIncremental options, weights and widths', () => {
    const mha = ready();
    const cache = track(mha.createKVCache({ batch: 1, maxLength: 4 }));
    expectError(() => mha.forwardIncremental(x(1, 1), cache, { causal: false }), TypeError,
      "MultiHeadAttention.forwardIncremental: options: unknown key 'causal' (expected " +
      'keyPaddingMask, kvLengths, attnMask, boolMask, returnAttnWeights, returnScores, ' +
      'returnPerHeadOutput, returnIntermediates, window, scale, softcap)');
    mha.forwardIncremental(x(1, 1), cache);
    expectError(() => mha.forwardIncremental(x(1, 1), cache,
      { keyPaddingMask: new Uint8Array(1) }), RangeError,
    'MultiHeadAttention.forwardIncremental: options.keyPaddingMask: expected 2 values for shape ' +
      '[1, 2], got 1');
    expectError(() => mha.forwardIncremental(x(1, 1, 4), cache), RangeError,
      'MultiHeadAttention.forwardIncremental: x.features: expected 8 (dModel), got 4');
    expect(cache.length).toBe(1);
    const fresh = track(new module.MultiHeadAttention({ dModel: E, numHeads: H }));
    expectError(() => fresh.forwardIncremental(x(1, 1), cache), Error,
      'MultiHeadAttention.forwardIncremental: no weights yet; call setWeights() or ' +
      'setWeightsFromPyTorch() first');
    const cross = ready({ dModel: E, numHeads: H, kDim: 4, vDim: 4 });
    const crossCache = track(cross.createKVCache({ batch: 1, maxLength: 2 }));
    expectError(() => cross.forwardIncremental(x(1, 1), crossCache), RangeError,
      'MultiHeadAttention.forwardIncremental: incremental self-attention needs kDim == ' +
      'vDim == dModel (8), got kDim 4, vDim 4');
  });
});

describe('precomputed keys/values', () => {
  test('disposed, or used with value, or of another layout or batch', () => {
    const mha = ready();
    const kv = mha.precomputeKeyValue(x(2, 3));
    expect([kv.batch, kv.tokens, kv.disposed]).toEqual([2, 3, false]);
    expectError(() => mha.forward(x(2, 1), kv, x(2, 3)), TypeError,
      'MultiHeadAttention.forward: value given with precomputed keys/values; omit it (the ' +
      'PrecomputedKeyValue holds both)');
    expectError(() => mha.forward(x(1, 1), kv), RangeError,
      'MultiHeadAttention.forward: query.batch: expected 2 (batch of the precomputed memory), got 1');
    const other = ready({ dModel: E, numHeads: 1 });
    expectError(() => other.forward(x(2, 1), kv), RangeError,
      'MultiHeadAttention.forward: precomputed key/value: made by an attention with 2 heads of ' +
      `d_k 4, d_v 4 (padded 4), this one has 1 heads of d_k 8, d_v 8 (padded 8)`);
    kv.dispose();
    expect(kv.disposed).toBe(true);
    expectError(() => mha.forward(x(2, 1), kv), Error,
      'MultiHeadAttention.forward: key: the PrecomputedKeyValue was disposed; create a new one');
    expect(() => kv[disposeSymbol]()).not.toThrow();
  });

  test('precomputeKeyValue arguments', () => {
    const mha = ready();
    expectError(() => mha.precomputeKeyValue(x(2, 3), { keyPaddingMask: new Uint8Array(5) }),
      RangeError, 'MultiHeadAttention.precomputeKeyValue: options.keyPaddingMask: expected 6 ' +
      'values for shape [2, 3], got 5');
    expectError(() => mha.precomputeKeyValue(x(2, 3), { mask: new Uint8Array(6) }), TypeError,
      "MultiHeadAttention.precomputeKeyValue: options: unknown key 'mask' (expected keyPaddingMask)");
    expectError(() => mha.precomputeKeyValue(x(2, 3, 4)), RangeError,
      'MultiHeadAttention.precomputeKeyValue: memory.features: expected 8 (kDim), got 4');
    const different = ready({ dModel: E, numHeads: H, kDim: 4, vDim: 6 });
    expectError(() => different.precomputeKeyValue(x(1, 3, 4)), RangeError,
      'MultiHeadAttention.precomputeKeyValue: memory: serves as keys and values, so kDim (4) ' +
      'must equal vDim (6)');
    const fresh = track(new module.MultiHeadAttention({ dModel: E, numHeads: H }));
    expectError(() => fresh.precomputeKeyValue(x(1, 3)), Error,
      'MultiHeadAttention.precomputeKeyValue: no weights yet; call setWeights() or ' +
      'setWeightsFromPyTorch() first');
  });
});

describe('layers', () => {
  const enc = encoderArguments(encoderCase);
  const dec = decoderArguments(decoderCase);

  test('weights of the wrong size name the entry', () => {
    const layer = track(new module.TransformerEncoderLayer(enc.config));
    const d = enc.config.dModel;
    const f = enc.config.ffnDim;
    expectError(() => layer.setWeights({ ...enc.weights, ffn: { ...enc.weights.ffn, w1: ones(3) } }),
      RangeError, `TransformerEncoderLayer.setWeights: ffn.w1: expected ${d * f} values for ` +
      `shape [${d}, ${f}], got 3`);
    expectError(() => layer.setWeights({ ...enc.weights, norm2: { ...enc.weights.norm2,
      gamma: ones(d + 1) } }), RangeError,
    `TransformerEncoderLayer.setWeights: norm2.gamma: expected ${d} values for shape [${d}], ` +
      `got ${d + 1}`);
    expectError(() => layer.setWeights({ ...enc.weights, attention: { ...enc.weights.attention,
      bV: ones(2) } }), RangeError,
    `TransformerEncoderLayer.setWeights: attention.bV: expected ${d} values for shape [${d}], got 2`);
    const nan = ones(d * d);
    nan[7] = NaN;
    const decoder = track(new module.TransformerDecoderLayer(dec.config));
    expectError(() => decoder.setWeights({ ...dec.weights, crossAttention: {
      ...dec.weights.crossAttention, wK: nan } }), RangeError,
    'TransformerDecoderLayer.setWeights: crossAttention.wK: element 7 is NaN');
    expectError(() => decoder.setWeights({ ...dec.weights, norm3: { ...dec.weights.norm3,
      beta: ones(1) } }), RangeError,
    `TransformerDecoderLayer.setWeights: norm3.beta: expected ${d} values for shape [${d}], got 1`);
    expectError(() => decoder.forward(dec.input, dec.memory), Error,
      'TransformerDecoderLayer.forward: no weights yet; call setWeights() or ' +
      'setWeightsFromPyTorch() first');
  });

  test('a failed setWeights keeps the previous weights', () => {
    const layer = track(new module.TransformerEncoderLayer(enc.config));
    layer.setWeights(enc.weights);
    const before = layer.forward(enc.input).data;
    expect(() => layer.setWeights({ ...enc.weights, norm2: { gamma: ones(1),
      beta: enc.weights.norm2.beta } })).toThrow('norm2.gamma');
    expect(() => layer.setWeights({ ...enc.weights, attention: { ...enc.weights.attention,
      wO: ones(1) } })).toThrow('attention.wO');
    expect(layer.forward(enc.input).data).toEqual(before);
  });

  test('weights of the wrong type or structure', () => {
    const layer = track(new module.TransformerEncoderLayer(enc.config));
    expectError(() => layer.setWeights({ ...enc.weights, ffn: { ...enc.weights.ffn, b2: [1, 2] } }),
      TypeError, 'TransformerEncoderLayer.setWeights: ffn.b2: expected a Float32Array, got [1, 2]');
    const { norm1, ...missing } = enc.weights;
    expectError(() => layer.setWeights(missing), TypeError,
      'TransformerEncoderLayer.setWeights: norm1: expected an object { gamma, beta }, got undefined');
    expectError(() => layer.setWeights({ ...enc.weights, norm3: norm1 }), TypeError,
      "TransformerEncoderLayer.setWeights: weights: unknown key 'norm3' (expected attention, " +
      'ffn, norm1, norm2)');
    expectError(() => layer.setWeights({ ...enc.weights, ffn: { ...enc.weights.ffn, w3: ones(1) } }),
      TypeError, "TransformerEncoderLayer.setWeights: ffn: unknown key 'w3' (expected w1, b1, w2, b2)");
  });

  test('configs', () => {
    expectError(() => new module.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8,
      activation: 'mish' }), RangeError,
    "TransformerEncoderLayer: config.activation: expected 'relu', 'gelu' (or 'gelu_erf'), " +
      "'gelu_tanh' or 'silu' (or 'swish'), got 'mish'");
    expectError(() => new module.TransformerDecoderLayer({ dModel: 8, numHeads: 3, ffnDim: 8 }),
      RangeError, 'TransformerDecoderLayer: config.dModel: must be divisible by numHeads (3), got 8');
    expectError(() => new module.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 0 }),
      RangeError, 'TransformerEncoderLayer: config.ffnDim: must be > 0, got 0');
    expectError(() => new module.TransformerEncoderLayer({ dModel: 8, numHeads: 2 }), TypeError,
      'TransformerEncoderLayer: config.ffnDim: required, expected a positive integer');
    expectError(() => new module.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8,
      eps: 0 }), RangeError, 'TransformerEncoderLayer: config.eps: expected a finite number > 0 that float32 ' +
      'can hold (1.4e-45 to 3.4e38), got 0');
    expectError(() => new module.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8,
      norm_first: true }), TypeError,
    "TransformerEncoderLayer: config: unknown key 'norm_first' (expected dModel, numHeads, " +
      'ffnDim, normFirst, activation, eps, backend, threads, numKvHeads, rope, weights, cacheType)');
    expectError(() => new module.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8,
      backend: 'avx' }), RangeError,
    "TransformerEncoderLayer: backend: expected 'highway', 'xsimd' or 'scalar', got 'avx'");
  });

  test('inputs, masks and memory of the wrong shape', () => {
    const encoder = track(new module.TransformerEncoderLayer(enc.config));
    encoder.setWeights(enc.weights);
    const [b, t, d] = enc.input.shape;
    expectError(() => encoder.forward(x(b, t, d / 2)), RangeError,
      `TransformerEncoderLayer.forward: x.features: expected ${d} (dModel), got ${d / 2}`);
    expectError(() => encoder.forward(x(b, 0, d)), RangeError,
      'TransformerEncoderLayer.forward: x.tokens: must be > 0, got 0');
    expectError(() => encoder.forward(enc.input, { keyPaddingMask: new Uint8Array(t) }), RangeError,
      `TransformerEncoderLayer.forward: options.keyPaddingMask: expected ${b * t} values for ` +
      `shape [${b}, ${t}], got ${t}`);
    const bad = x(b, t, d);
    bad.data[5] = Infinity;
    expectError(() => encoder.forward(bad), RangeError,
      'TransformerEncoderLayer.forward: x: element 5 is +Infinity');

    const decoder = track(new module.TransformerDecoderLayer(dec.config));
    decoder.setWeights(dec.weights);
    const [mb, s] = dec.memory.shape;
    expectError(() => decoder.forward(dec.input, x(mb + 1, s, d)), RangeError,
      `TransformerDecoderLayer.forward: memory.batch: expected ${mb} (x.batch), got ${mb + 1}`);
    expectError(() => decoder.forward(dec.input, dec.memory,
      { memoryKeyPaddingMask: new Uint8Array(3) }), RangeError,
    `TransformerDecoderLayer.forward: options.memoryKeyPaddingMask: expected ${mb * s} values ` +
      `for shape [${mb}, ${s}], got 3`);
    const memory = track(decoder.precomputeMemory(dec.memory));
    expectError(() => decoder.forward(x(1, 2, d), memory), RangeError,
      `TransformerDecoderLayer.forward: x.batch: expected ${mb} (batch of the precomputed ` +
      'memory), got 1');
    const nanX = x(mb, 2, d);
    nanX.data[1] = NaN;
    expectError(() => decoder.forward(nanX, memory), RangeError,
      'TransformerDecoderLayer.forward: x: element 1 is NaN');
    expectError(() => decoder.forward(dec.input, memory, { causal: 'yes' }), RangeError,
      "TransformerDecoderLayer.forward: options.causal: expected 'none', 'top-left' or " +
      "'bottom-right', got 'yes'");
  });

  test('decoder incremental steps: full cache, batch, disposed objects; the cache is unchanged', () => {
    const decoder = track(new module.TransformerDecoderLayer(dec.config));
    decoder.setWeights(dec.weights);
    const [b, t, d] = dec.input.shape;
    const memory = track(decoder.precomputeMemory(dec.memory));
    const cache = track(decoder.createKVCache({ batch: b, maxLength: 2 }));
    decoder.forwardIncremental(sliceTokens(dec.input, 0, 2), cache, memory);
    const keys = cache.keys();
    expectError(() => decoder.forwardIncremental(sliceTokens(dec.input, 2, 3), cache, memory),
      RangeError, 'TransformerDecoderLayer.forwardIncremental: KV cache full: holds 2 of 2 ' +
      'tokens, cannot add 1; create the cache with a larger maxLength, or truncate or reset it');
    expect(cache.keys()).toEqual(keys);
    // A step that fails after the self-attention (a memory of another
    // layout) leaves the cache as it was too.
    cache.truncate(1);
    const other = track(new module.MultiHeadAttention({ dModel: d, numHeads: 1 }));
    other.setWeights(weights(d));
    const foreignMemory = track(other.precomputeKeyValue(x(b, 3, d)));
    expectError(() => decoder.forwardIncremental(sliceTokens(dec.input, 1, 2), cache,
      foreignMemory), RangeError,
    'TransformerDecoderLayer.forwardIncremental: precomputed key/value: made by an attention ' +
      `with 1 heads of d_k ${d}, d_v ${d} (padded ${d}), this one has ${dec.config.numHeads} ` +
      `heads of d_k ${d / dec.config.numHeads}, d_v ${d / dec.config.numHeads} (padded ` +
      `${d / dec.config.numHeads})`);
    expect(cache.length).toBe(1);
    expectError(() => decoder.forwardIncremental(x(b + 1, 1, d), cache, memory), RangeError,
      `TransformerDecoderLayer.forwardIncremental: x.batch: expected ${b} (batch of the ` +
      `precomputed memory), got ${b + 1}`);
    const small = track(decoder.createKVCache({ batch: 1, maxLength: 4 }));
    expectError(() => decoder.forwardIncremental(x(b, 1, d), small, memory), RangeError,
      `TransformerDecoderLayer.forwardIncremental: x.batch: expected 1 (batch of the KV cache), ` +
      `got ${b}`);
    memory.dispose();
    expectError(() => decoder.forwardIncremental(x(b, 1, d), cache, memory), Error,
      'TransformerDecoderLayer.forwardIncremental: memory: the PrecomputedKeyValue was ' +
      'disposed; create a new one');
    cache.dispose();
    expectError(() => decoder.forwardIncremental(x(b, 1, d), cache, dec.memory), Error,
      'TransformerDecoderLayer.forwardIncremental: cache: the KVCache was disposed; create a new one');
    decoder.dispose();
    expectError(() => decoder.createKVCache({ batch: 1, maxLength: 1 }), Error,
      'TransformerDecoderLayer.createKVCache: this TransformerDecoderLayer was disposed; ' +
      'create a new one');
  });
});

describe('module functions', () => {
  test('positionalEncoding', () => {
    expectError(() => module.positionalEncoding(0, 8), RangeError,
      'positionalEncoding: t: must be > 0, got 0');
    expectError(() => module.positionalEncoding(4), TypeError,
      'positionalEncoding: dModel: required, expected a positive integer');
    expectError(() => module.positionalEncoding(4, 2.5), RangeError,
      'positionalEncoding: dModel: expected a non-negative integer, got 2.5');
  });
  test('layerNorm', () => {
    expectError(() => module.layerNorm(x(1, 2), { gamma: ones(8), beta: ones(7) }), RangeError,
      'layerNorm: options.beta: expected 8 values for shape [8], got 7');
    expectError(() => module.layerNorm(x(1, 2), { gamma: ones(8) }), TypeError,
      'layerNorm: options.beta: expected a Float32Array, got undefined');
    expectError(() => module.layerNorm(x(1, 2), { gamma: ones(8), beta: ones(8), eps: -1 }),
      RangeError, 'layerNorm: options.eps: expected a finite number > 0 that ' +
      'float32 can hold (1.4e-45 to 3.4e38), got -1');
    const bad = x(1, 2);
    bad.data[0] = NaN;
    expectError(() => module.layerNorm(bad, { gamma: ones(8), beta: ones(8) }), RangeError,
      'layerNorm: x: element 0 is NaN');
  });
});
