// createAttentionPool's layers split over 1, 2 and 3 workers (attention by
// heads, FFN by hidden units, residuals and LayerNorms in the worker that
// sums each sublayer's parts) give
// the synchronous layers' results (within 1e-6 of the output's scale,
// identical from run to run) on every golden layer case, post- and pre-LN,
// through a sharded KV cache and precomputed memory; 5 heads and FFN units
// that do not divide by the workers; the synchronous errors, those of values
// too large for LayerNorm or the attention scores and of partial outputs
// whose sum overflows float32 included; the placement
// cost rule; and what the pooled MultiHeadAttention and KVCache share with
// the synchronous ones (setWeightsFromPyTorch, append, loadCheckpoint).
import { rejection, thrown } from './support/errors.mjs';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff, mhaArguments, pytorchState, transpose }
  from './support/golden.mjs';
import { decoderArguments, encoderArguments, randomFloats, randomLayerWeights, sliceTokens }
  from './support/layers.mjs';
import { loadCheckpoint, track } from './support/modules.mjs';
import { randomTensor as tensor, simdModule, startPools } from './support/pools.mjs';
import { maxAbs, outputScale } from './support/scales.mjs';

const module = await simdModule();
const sizes = [1, 2, 3];
const pools = startPools(sizes);
const encoderCases = goldenCaseNames('encoder_layer').map(loadGoldenCase);
const decoderCases = goldenCaseNames('decoder_layer').map(loadGoldenCase);
const mhaCases = goldenCaseNames('mha').map(loadGoldenCase);

const SPLIT = { placement: 'split' };

// Same shape, values within 1e-6 of `scale`, by default the expected
// tensor's largest magnitude (a layer's output is LayerNorm's, or a residual
// sum: its own scale).
function expectClose(actual, expected, scale = maxAbs(expected.data)) {
  expect(actual.shape).toEqual(expected.shape);
  const worst = maxAbsDiff(actual.data, expected.data);
  if (!(worst <= 1e-6 * scale)) throw new Error(`differs by ${worst}, scale ${scale}`);
}

// The same tensor, value for value (the pool's arrays come from another realm).
const same = (a, b) => expect(Array.from(a.data)).toEqual(Array.from(b.data));

// The pooled call rejects with the synchronous call's class and message.
async function expectSameError(pooled, sync) {
  const want = thrown(sync);
  const got = await rejection(pooled());
  expect({ class: got.constructor.name, message: got.message })
    .toEqual({ class: want.constructor.name, message: want.message });
}

// A synchronous layer of `Kind` and the pool's split one, both given `weights`.
async function syncAndSplit(pool, Kind, config, weights) {
  const sync = track(new module[Kind](config));
  sync.setWeights(weights);
  const layer = await pool[Kind](config, SPLIT);
  await layer.setWeights(weights);
  return { sync, layer };
}

// A layer's weights as torch's state_dict holds them (Linear: [out, in]).
function layerState(w, d, f) {
  const concat = (...parts) => Float32Array.from(parts.flatMap((p) => Array.from(p)));
  const state = {};
  const blocks = w.attention ? { self_attn: w.attention }
    : { self_attn: w.selfAttention, multihead_attn: w.crossAttention };
  for (const [block, a] of Object.entries(blocks)) {
    state[`${block}.in_proj_weight`] = concat(transpose(a.wQ, d, d), transpose(a.wK, d, d),
      transpose(a.wV, d, d));
    state[`${block}.in_proj_bias`] = concat(a.bQ, a.bK, a.bV);
    state[`${block}.out_proj.weight`] = transpose(a.wO, d, d);
    state[`${block}.out_proj.bias`] = a.bO;
  }
  Object.assign(state, { 'linear1.weight': transpose(w.ffn.w1, d, f), 'linear1.bias': w.ffn.b1,
    'linear2.weight': transpose(w.ffn.w2, f, d), 'linear2.bias': w.ffn.b2 });
  for (const n of [1, 2, 3]) {
    if (w[`norm${n}`]) {
      state[`norm${n}.weight`] = w[`norm${n}`].gamma;
      state[`norm${n}.bias`] = w[`norm${n}`].beta;
    }
  }
  return state;
}

test('the golden folder has encoder and decoder layer cases', () => {
  expect(encoderCases.length).toBeGreaterThanOrEqual(1);
  expect(decoderCases.length).toBeGreaterThanOrEqual(1);
});

describe.each(sizes)('pool of %i workers, layers split', (workers) => {
  // Post-LN as the case, and pre-LN with GELU on the same weights.
  const variants = [['post-LN', {}], ['pre-LN, gelu', { normFirst: true, activation: 'gelu' }]];

  test.each(encoderCases.flatMap((c) => variants.map(([v, extra]) => [c.name, v, c, extra])))(
    '%s (%s): encoder as the synchronous layer, run to run', async (_, __, c, extra) => {
      const a = encoderArguments(c);
      const config = { ...a.config, ...extra };
      const { sync, layer } = await syncAndSplit(pools[workers], 'TransformerEncoderLayer', config,
        a.weights);
      try {
        expect(layer.placement).toBe('split');
        expect(layer.config).toEqual(sync.config);
        for (const options of [undefined, { causal: true }, { causal: 'top-left' }]) {
          const first = await layer.forward(a.input, options);
          expectClose(first, sync.forward(a.input, options));
          same(await layer.forward(a.input, options), first);
        }
      } finally {
        await layer.dispose();
      }
    });

  test.each(decoderCases.flatMap((c) => variants.map(([v, extra]) => [c.name, v, c, extra])))(
    '%s (%s): decoder forward, precomputed memory and token by token as the synchronous layer',
    async (_, __, c, extra) => {
      const a = decoderArguments(c);
      const config = { ...a.config, ...extra };
      const { sync, layer } = await syncAndSplit(pools[workers], 'TransformerDecoderLayer', config,
        a.weights);
      try {
        expect(layer.config).toEqual(sync.config);
        const expected = sync.forward(a.input, a.memory);
        const first = await layer.forward(a.input, a.memory);
        expectClose(first, expected);
        same(await layer.forward(a.input, a.memory), first);
        expectClose(await layer.forward(a.input, a.memory, { causal: 'none' }),
          sync.forward(a.input, a.memory, { causal: 'none' }));
        const memory = await layer.precomputeMemory(a.memory);
        expect([memory.batch, memory.tokens]).toEqual([a.memory.shape[0], a.memory.shape[1]]);
        expectClose(await layer.forward(a.input, memory), expected);

        const [batch, t] = a.input.shape;
        const syncCache = track(sync.createKVCache({ batch, maxLength: t }));
        const syncMemory = track(sync.precomputeMemory(a.memory));
        const cache = await layer.createKVCache({ batch, maxLength: t });
        for (let i = 0; i < t; i++) {
          const step = sliceTokens(a.input, i, i + 1);
          // The memory as a tensor on odd steps: projected for that step only.
          expectClose(await layer.forwardIncremental(step, cache, i % 2 ? a.memory : memory),
            sync.forwardIncremental(step, syncCache, syncMemory));
          expect(cache.length).toBe(i + 1);
        }
        expectClose(await cache.keys(), syncCache.keys());
        expectClose(await cache.values(), syncCache.values());
        await Promise.all([cache.dispose(), memory.dispose()]);
      } finally {
        await layer.dispose();
      }
    });

  test('5 heads, 7 FFN units and 2 of 4 key/value heads: groups that differ by one', async () => {
    const pool = pools[workers];
    for (const config of [{ dModel: 10, numHeads: 5, ffnDim: 7 },
      { dModel: 12, numHeads: 4, numKvHeads: 2, ffnDim: 9, normFirst: true }]) {
      const d = config.dModel;
      const kv = (config.numKvHeads ?? config.numHeads) * (d / config.numHeads);
      const w = randomLayerWeights(d, config.ffnDim, 5, { decoder: true });
      for (const part of [w.selfAttention, w.crossAttention]) {
        for (const key of ['wK', 'wV']) part[key] = part[key].slice(0, d * kv);
        for (const key of ['bK', 'bV']) part[key] = part[key].slice(0, kv);
      }
      const x = tensor([2, 3, d], 6);
      const memory = tensor([2, 4, d], 7);
      const { sync, layer } = await syncAndSplit(pool, 'TransformerDecoderLayer', config, w);
      expectClose(await layer.forward(x, memory), sync.forward(x, memory));
      await layer.dispose();

      const { selfAttention: attention, ffn, norm1, norm2 } = w;
      const ew = { attention, ffn, norm1, norm2 };
      const { sync: syncEncoder, layer: encoder } = await syncAndSplit(pool,
        'TransformerEncoderLayer', config, ew);
      expectClose(await encoder.forward(x), syncEncoder.forward(x));
      await encoder.dispose();
    }
  });

  test('rotary positions, gelu_tanh, eps and the self-attention options', async () => {
    const config = { dModel: 16, numHeads: 4, ffnDim: 20, rope: { style: 'half' },
      activation: 'gelu_tanh', eps: 1e-6 };
    const w = randomLayerWeights(16, 20, 3, { decoder: true });
    const x = tensor([2, 5, 16], 4);
    const memory = tensor([2, 3, 16], 5);
    const { sync, layer } = await syncAndSplit(pools[workers], 'TransformerDecoderLayer', config, w);
    expect(layer.config).toEqual(sync.config);
    for (const options of [undefined, { window: [2, 0], softcap: 5, scale: 0.3 },
      { keyPaddingMask: Uint8Array.from({ length: 10 }, (_, i) => (i % 5 === 4 ? 0 : 1)),
        memoryKeyPaddingMask: Uint8Array.from([1, 1, 0, 1, 0, 1]),
        attnMask: { data: randomFloats(2 * 4 * 25, 6), shape: [2, 4, 5, 5] } }]) {
      expectClose(await layer.forward(x, memory, options), sync.forward(x, memory, options));
    }
    await layer.dispose();
  });

  test('setWeightsFromPyTorch and loadCheckpoint as the synchronous layers', async () => {
    const [d, f] = [8, 12];
    const config = { dModel: d, numHeads: 2, ffnDim: f };
    const x = tensor([2, 3, d], 8);
    const memory = tensor([2, 5, d], 9);
    for (const [Kind, decoder] of [['TransformerEncoderLayer', false],
      ['TransformerDecoderLayer', true]]) {
      const state = layerState(randomLayerWeights(d, f, 10, { decoder }), d, f);
      const args = decoder ? [x, memory] : [x];
      const sync = track(new module[Kind](config));
      sync.setWeightsFromPyTorch(state);
      const layer = await pools[workers][Kind](config, SPLIT);
      await layer.setWeightsFromPyTorch(state);
      expectClose(await layer.forward(...args), sync.forward(...args));

      const prefixed = Object.fromEntries(Object.entries(state).map(([k, v]) => [`l.${k}`, v]));
      const loaded = await loadCheckpoint(layer, prefixed, { prefix: 'l' });
      expect(loaded).toEqual(loadCheckpoint(sync, prefixed, { prefix: 'l' }));
      expectClose(await layer.forward(...args), sync.forward(...args));
      const { 'linear1.bias': _, ...missing } = state;
      await expectSameError(() => layer.setWeightsFromPyTorch(missing),
        () => sync.setWeightsFromPyTorch(missing));
      await layer.dispose();
    }
  });
});

describe('pool of 2 workers: errors of split layers', () => {
  const config = { dModel: 8, numHeads: 2, ffnDim: 6 };
  const [B, T, S] = [2, 3, 4];
  const x = tensor([B, T, 8], 20);
  const memory = tensor([B, S, 8], 21);

  test('the encoder: the synchronous class and message, and it stays usable', async () => {
    const pool = pools[2];
    const sync = track(new module.TransformerEncoderLayer(config));
    const layer = await pool.TransformerEncoderLayer(config, SPLIT);
    await expectSameError(() => layer.forward(x), () => sync.forward(x));
    const w = randomLayerWeights(8, 6, 22);
    sync.setWeights(w);
    await layer.setWeights(w);
    const nan = { ...w, ffn: { ...w.ffn, w2: Float32Array.from(w.ffn.w2, (v, i) => (i === 3 ? NaN : v)) } };
    const calls = [
      (l) => l.forward({ data: randomFloats(6, 1), shape: [2, 3] }),
      (l) => l.forward('x'),
      (l) => l.forward(x, { causal: 'diagonal' }),
      (l) => l.forward(x, { returnAttnWeights: true }),
      (l) => l.forward(x, { keyPaddingMask: new Uint8Array(5) }),
      (l) => l.forward(x, { attnMask: new Float32Array(7) }),
      (l) => l.forward(x, { window: [-2, 0] }),
      (l) => l.forward({ data: Float32Array.from(x.data, (v, i) => (i === 4 ? Infinity : v)),
        shape: x.shape }),
      (l) => l.setWeights({ ...w, ffn: { ...w.ffn, w1: new Float32Array(3) } }),
      (l) => l.setWeights({ ...w, norm2: { gamma: new Float32Array(8) } }),
      (l) => l.setWeights(nan),
      (l) => l.setWeights([]),
    ];
    for (const call of calls) await expectSameError(() => call(layer), () => call(sync));
    // A refused setWeights kept the old weights, as synchronously.
    expectClose(await layer.forward(x, { causal: true }), sync.forward(x, { causal: true }));
    await layer.dispose();
    sync.dispose();
    await expectSameError(() => layer.forward(x), () => sync.forward(x));
    await expectSameError(() => layer.setWeights(w), () => sync.setWeights(w));
  });

  test('the decoder, its cache and memory: the synchronous class and message', async () => {
    const pool = pools[2];
    const sync = track(new module.TransformerDecoderLayer(config));
    const layer = await pool.TransformerDecoderLayer(config, SPLIT);
    const w = randomLayerWeights(8, 6, 23, { decoder: true });
    await expectSameError(() => layer.precomputeMemory(memory), () => sync.precomputeMemory(memory));
    sync.setWeights(w);
    await layer.setWeights(w);
    const syncCache = track(sync.createKVCache({ batch: B, maxLength: 2 }));
    const syncMemory = track(sync.precomputeMemory(memory));
    const cache = await layer.createKVCache({ batch: B, maxLength: 2 });
    const kv = await layer.precomputeMemory(memory);
    const step = sliceTokens(x, 0, 1);
    const calls = [
      (l, c, m) => l.forward(x, tensor([1, S, 8], 2)),
      (l, c, m) => l.forward(x, memory, { memoryKeyPaddingMask: new Uint8Array(3) }),
      (l, c, m) => l.forward(x, m, { causal: 1 }),
      (l, c, m) => l.forwardIncremental(x, c, m),
      (l, c, m) => l.forwardIncremental(sliceTokens(x, 0, 2), c, m, { kvLengths: [9, 9] }),
      (l, c, m) => l.forwardIncremental({ data: step.data, shape: [B, 1, 4, 2] }, c, m),
      (l) => l.createKVCache({ batch: 0, maxLength: 2 }),
      (l) => l.createKVCache({ batch: 1 }),
      (l) => l.precomputeMemory(memory, { keyPaddingMask: new Uint8Array(1) }),
    ];
    for (const call of calls) {
      await expectSameError(() => call(layer, cache, kv), () => call(sync, syncCache, syncMemory));
      expect(cache.length).toBe(syncCache.length);
    }
    // A step that fills the cache, then one that does not fit.
    expectClose(await layer.forwardIncremental(sliceTokens(x, 0, 2), cache, kv),
      sync.forwardIncremental(sliceTokens(x, 0, 2), syncCache, syncMemory));
    await expectSameError(() => layer.forwardIncremental(step, cache, kv),
      () => sync.forwardIncremental(step, syncCache, syncMemory));
    expect(cache.length).toBe(2);
    await cache.dispose();
    syncCache.dispose();
    await expectSameError(() => layer.forwardIncremental(step, cache, kv),
      () => sync.forwardIncremental(step, syncCache, syncMemory));
    // A cache of another layout is refused before anything runs.
    const wholeLayer = await pool.TransformerDecoderLayer(config, { placement: 'whole' });
    await wholeLayer.setWeights(w);
    const wholeCache = await wholeLayer.createKVCache({ batch: B, maxLength: 2 });
    const error = await rejection(layer.forwardIncremental(step, wholeCache, kv));
    expect(error.message).toMatch(/^TransformerDecoderLayer.forwardIncremental: cache: this KVCache is held by the pool's workers in another way/);
    await Promise.all([wholeCache.dispose(), wholeLayer.dispose(), kv.dispose()]);
    await layer.dispose();
  });
});

describe('pool of 2 workers: values too large in split layers', () => {
  const d = 8;
  const config = { dModel: d, numHeads: 2, ffnDim: 6 };
  const scaled = (a, by) => Float32Array.from(a, (v) => v * by);
  const full = (n, v) => new Float32Array(n).fill(v);
  // The attentions' weights scaled by `by`, the rest as given.
  function attentionsScaled(w, by) {
    const out = { ...w };
    for (const key of ['attention', 'selfAttention', 'crossAttention']) {
      if (w[key]) out[key] = Object.fromEntries(Object.entries(w[key]).map(([k, a]) => [k, scaled(a, by)]));
    }
    return out;
  }
  const kinds = [['TransformerEncoderLayer', false], ['TransformerDecoderLayer', true]];
  const memory = tensor([1, 4, d], 31);
  const run = (kind, l) => (kind === 'TransformerEncoderLayer' ? l.forward(huge) : l.forward(huge, memory));
  // Beyond LayerNorm's limit for 8 features (about 3.3e18), far below float32's.
  const huge = { data: scaled(randomFloats(3 * d, 32), 1e19), shape: [1, 3, d] };

  test.each(kinds.flatMap(([kind, decoder]) => [false, true].map((normFirst) =>
    [kind, normFirst ? 'pre-LN' : 'post-LN', decoder, normFirst])))(
    '%s (%s): an input LayerNorm cannot take is refused with the synchronous message',
    async (kind, _, decoder, normFirst) => {
      // Attentions so small that their outputs stay finite: the first
      // LayerNorm (of x, or of x + attention(x)) refuses.
      const w = attentionsScaled(randomLayerWeights(d, 6, 33, { decoder }), 1e-15);
      const { sync, layer } = await syncAndSplit(pools[2], kind, { ...config, normFirst }, w);
      const want = thrown(() => run(kind, sync));
      expect(want.message).toMatch(new RegExp(`^${kind}.forward: the LayerNorm input: values up to .* would overflow LayerNorm's float32 variance \\(the limit for 8 features is`));
      await expectSameError(() => run(kind, layer), () => run(kind, sync));
      // Still usable.
      const x = tensor([1, 3, d], 34);
      const args = kind === 'TransformerEncoderLayer' ? [x] : [x, memory];
      expectClose(await layer.forward(...args), sync.forward(...args));
      await layer.dispose();
    });

  test('a feed-forward output LayerNorm cannot take, after the sum of the workers\' parts', async () => {
    // Post-LN: h = LN2(h + ffn(h)), ffn(h) about 1e19 from W2 (LN1 keeps h near 1).
    const w = randomLayerWeights(d, 6, 35);
    w.ffn = { ...w.ffn, w2: scaled(w.ffn.w2, 1e20) };
    const { sync, layer } = await syncAndSplit(pools[2], 'TransformerEncoderLayer', config, w);
    const x = tensor([1, 3, d], 36);
    const want = thrown(() => sync.forward(x));
    expect(want.message).toMatch(/^TransformerEncoderLayer.forward: the LayerNorm input: values up to/);
    await expectSameError(() => layer.forward(x), () => sync.forward(x));
    await layer.dispose();
  });

  test.each(kinds)('%s: attention scores that may overflow carry the layer\'s name', async (kind, decoder) => {
    // Every head's columns of W_Q and W_K alike, so that each worker's heads
    // see the largest |q| and |k| of all: the same figures as synchronously.
    const w = randomLayerWeights(d, 6, 37, { decoder });
    const attention = decoder ? 'selfAttention' : 'attention';
    w[attention] = { ...w[attention], wQ: full(d * d, 1e19), wK: full(d * d, 1e19),
      bQ: full(d, 0), bK: full(d, 0) };
    const { sync, layer } = await syncAndSplit(pools[2], kind, config, w);
    const x = { data: full(3 * d, 1), shape: [1, 3, d] };
    const args = kind === 'TransformerEncoderLayer' ? [x] : [x, memory];
    const want = thrown(() => sync.forward(...args));
    expect(want.message).toMatch(new RegExp(`^${kind}.forward: attention scores may overflow float32`));
    await expectSameError(() => layer.forward(...args), () => sync.forward(...args));
    await layer.dispose();
  });
});

describe.each([2, 3])('pool of %i workers: partial outputs whose sum overflows float32', (workers) => {
  // Three heads of d_k 2 and six FFN units: one or two heads and two or
  // three units per worker. An attention whose values are all 1 and whose
  // W_O column 4 is 7e37 adds 1.4e38 per head to column 4; an FFN whose
  // hidden units are all relu(1) = 1 and whose W2 column 4 is 7e37 adds 7e37
  // per unit: every worker's partial output is finite, their sum is not.
  const d = 6;
  const config = { dModel: d, numHeads: 3, ffnDim: 6 };
  const column4 = () => Float32Array.from({ length: d * d }, (_, i) => (i % d === 4 ? 7e37 : 0));
  const memory = tensor([1, 4, d], 111);
  const x = tensor([1, 3, d], 112);
  const overflowing = {
    attention: (a) => ({ ...a, wV: new Float32Array(d * d), bV: new Float32Array(d).fill(1),
      wO: column4() }),
    ffn: (f) => ({ ...f, w1: new Float32Array(d * d), b1: new Float32Array(d).fill(1),
      w2: column4() }),
  };
  const cases = [
    ['TransformerEncoderLayer', 'attention', 'the output projection z W_o \\+ b_o'],
    ['TransformerEncoderLayer', 'ffn', 'the feed-forward sublayer'],
    ['TransformerDecoderLayer', 'selfAttention', 'the output projection z W_o \\+ b_o'],
    ['TransformerDecoderLayer', 'crossAttention', 'the output projection z W_o \\+ b_o'],
    ['TransformerDecoderLayer', 'ffn', 'the feed-forward sublayer'],
  ];

  test.each(cases.flatMap(([kind, part, what]) => [false, true].map((normFirst) =>
    [kind, part, normFirst ? 'pre-LN' : 'post-LN', what, normFirst])))(
    '%s, %s (%s): refused with the synchronous class and message', async (kind, part, _, what,
      normFirst) => {
      const decoder = kind === 'TransformerDecoderLayer';
      const w = randomLayerWeights(d, 6, 113, { decoder });
      w[part] = overflowing[part === 'ffn' ? 'ffn' : 'attention'](w[part]);
      const { sync, layer } = await syncAndSplit(pools[workers], kind, { ...config, normFirst }, w);
      const args = decoder ? [x, memory] : [x];
      const want = thrown(() => sync.forward(...args));
      expect(want.message).toMatch(new RegExp(`^${kind}.forward: ${what} overflowed float32 ` +
        '\\(element 4 is \\+Infinity\\); the inputs or weights are too large in magnitude$'));
      await expectSameError(() => layer.forward(...args), () => sync.forward(...args));
      if (decoder) {
        // A decoding step too, which leaves the cache as it was.
        const syncCache = track(sync.createKVCache({ batch: 1, maxLength: 2 }));
        const cache = await layer.createKVCache({ batch: 1, maxLength: 2 });
        const step = sliceTokens(x, 0, 1);
        await expectSameError(() => layer.forwardIncremental(step, cache, memory),
          () => sync.forwardIncremental(step, syncCache, memory));
        expect([cache.length, syncCache.length]).toEqual([0, 0]);
        await cache.dispose();
      }
      await layer.dispose();
    });
});

describe('placement', () => {
  const big = { dModel: 256, numHeads: 4, ffnDim: 1024 };

  test('by the cost rule unless given', async () => {
    const placements = async (pool, Kind, config, options) => {
      const layer = await pool[Kind](config, options);
      const { placement } = layer;
      await layer.dispose();
      return placement;
    };
    const small = encoderArguments(encoderCases[0]).config;
    expect(await placements(pools[2], 'TransformerEncoderLayer', small)).toBe('whole');
    expect(await placements(pools[2], 'TransformerEncoderLayer', big)).toBe('split');
    expect(await placements(pools[1], 'TransformerEncoderLayer', big)).toBe('whole');
    expect(await placements(pools[2], 'TransformerDecoderLayer', big)).toBe('whole');
    expect(await placements(pools[2], 'TransformerDecoderLayer', small, SPLIT)).toBe('split');
    expect(await placements(pools[2], 'TransformerEncoderLayer', big, { placement: 'whole' }))
      .toBe('whole');
  });

  test('a bad placement or config is refused', async () => {
    const pool = pools[2];
    let error = await rejection(pool.TransformerEncoderLayer(big, { placement: 'heads' }));
    expect([error.constructor, error.message]).toEqual([TypeError,
      "TransformerEncoderLayer: options.placement: expected 'split' or 'whole', got \"heads\""]);
    error = await rejection(pool.TransformerEncoderLayer(big, { workers: 2 }));
    expect(error.constructor).toBe(TypeError);
    expect(error.message).toBe("TransformerEncoderLayer: options: unknown key 'workers' " +
      '(expected placement)');
    const bad = { ...big, ffnDim: 0 };
    await expectSameError(() => pool.TransformerEncoderLayer(bad, SPLIT),
      () => new module.TransformerEncoderLayer(bad));
  });
});

describe.each(sizes)('pool of %i workers: what the synchronous attention also has', (workers) => {
  const withState = mhaCases.filter((c) => {
    const sync = new module.MultiHeadAttention(mhaArguments(c).config);
    try {
      sync.setWeightsFromPyTorch(pytorchState(c));
      return true;
    } catch {
      return false;
    } finally {
      sync.dispose();
    }
  });

  test('the golden folder has mha cases nn.MultiheadAttention state takes', () => {
    expect(withState.length).toBeGreaterThanOrEqual(3);
  });

  test.each(withState.map((c) => [c.name, c]))('%s: setWeightsFromPyTorch', async (_, c) => {
    const a = mhaArguments(c);
    const state = pytorchState(c, { dotNames: c.name.length % 2 === 0 });
    const sync = track(new module.MultiHeadAttention(a.config));
    sync.setWeightsFromPyTorch(state);
    const mha = await pools[workers].MultiHeadAttention(a.config);
    await mha.setWeightsFromPyTorch(state);
    const options = { ...a.options, returnAttnWeights: true, returnPerHeadOutput: true };
    const got = await mha.forward(a.query, a.key, a.value, options);
    const want = sync.forward(a.query, a.key, a.value, options);
    expectClose(got.output, want.output, outputScale(want));
    expectClose(got.attnWeights, want.attnWeights);
    const { in_proj_bias: _b, ...missing } = state;
    const packed = state.in_proj_weight !== undefined;
    for (const bad of [missing, { ...state, bias_k: new Float32Array(1) },
      packed ? { ...state, in_proj_weight: state.in_proj_weight.subarray(1) } : { ...state, x: 1 }]) {
      await expectSameError(() => mha.setWeightsFromPyTorch(bad), () => sync.setWeightsFromPyTorch(bad));
    }
    same((await mha.forward(a.query, a.key, a.value, options)).output, got.output);
    await mha.dispose();
  });

  test('KVCache.append: saved keys and values restored, then decoding goes on', async () => {
    const config = { dModel: 12, numHeads: 6, numKvHeads: 3, headDimV: 3 };
    const kw = 3 * 2;
    const vw = 3 * 3;
    const w = {
      wQ: randomFloats(12 * 12, 1), wK: randomFloats(12 * kw, 2), wV: randomFloats(12 * vw, 3),
      wO: randomFloats(6 * 3 * 12, 4), bQ: randomFloats(12, 5), bK: randomFloats(kw, 6),
      bV: randomFloats(vw, 7), bO: randomFloats(12, 8),
    };
    const sync = track(new module.MultiHeadAttention(config));
    sync.setWeights(w);
    const mha = await pools[workers].MultiHeadAttention(config);
    await mha.setWeights(w);
    const syncCache = track(sync.createKVCache({ batch: 2, maxLength: 6 }));
    const cache = await mha.createKVCache({ batch: 2, maxLength: 6 });
    const keys = tensor([2, 3, kw], 30);
    const values = tensor([2, 3, vw], 31);
    syncCache.append(keys, values);
    await cache.append(keys, values);
    expect(cache.length).toBe(3);
    same(await cache.keys(), syncCache.keys());
    same(await cache.values(), syncCache.values());
    const x = tensor([2, 2, 12], 32);
    const options = { returnAttnWeights: true };
    const got = await mha.forwardIncremental(x, cache, { ...options, returnPerHeadOutput: true });
    const want = sync.forwardIncremental(x, syncCache, { ...options, returnPerHeadOutput: true });
    expectClose(got.output, want.output, outputScale(want));
    expectClose(got.attnWeights, want.attnWeights);
    for (const args of [[keys, tensor([2, 1, vw], 33)], [tensor([2, 1, 4], 34), values],
      [keys, { data: Float32Array.from(values.data, (v, i) => (i ? v : NaN)), shape: values.shape }],
      [keys, values], ['keys', values]]) {
      await expectSameError(() => cache.append(...args), () => syncCache.append(...args));
      expect(cache.length).toBe(syncCache.length);
    }
    same(await cache.keys(), syncCache.keys());
    await cache.dispose();
    syncCache.dispose();
    await expectSameError(() => cache.append(keys, values), () => syncCache.append(keys, values));
    await mha.dispose();
  });

  test('loadCheckpoint into a pooled attention resolves to what it gives synchronously', async () => {
    const c = withState[0];
    const a = mhaArguments(c);
    const state = pytorchState(c);
    const sync = track(new module.MultiHeadAttention(a.config));
    const mha = await pools[workers].MultiHeadAttention(a.config);
    const loaded = loadCheckpoint(mha, state);
    expect(typeof loaded.then).toBe('function');
    expect(await loaded).toEqual(loadCheckpoint(sync, state));
    const options = { returnPerHeadOutput: true };
    const want = sync.forward(a.query, a.key, a.value, options);
    expectClose((await mha.forward(a.query, a.key, a.value)).output, want.output,
      outputScale(want));
    await mha.dispose();
  });
});
