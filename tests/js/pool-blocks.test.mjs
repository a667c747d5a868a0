// createAttentionPool's TransformerBlock split over 1, 2 and 3 workers
// (attentions by key/value-head groups, FFNs and gated FFNs by hidden
// units, each sublayer's norms and residual in the worker that sums its
// parts) gives the synchronous block's results (within 1e-5 of the
// output's scale) for every kind of sublayer list: Llama's (GQA, RMSNorm,
// SwiGLU, RoPE), Gemma 2's sandwich norms, Qwen 3's QK-norm, GPT-J's
// parallel sublayers, a post-LN encoder and a decoder with cross-attention
// over a memory; token by token through the pool's sharded KV cache; the
// synchronous errors, after which the block stays usable; and where the
// pool places a block (placement, the cost rule).
import { rejection, thrown } from './support/errors.mjs';
import { maxAbsDiff } from './support/golden.mjs';
import { randomFloats } from './support/layers.mjs';
import { createAttentionModule, createAttentionPool, track } from './support/modules.mjs';
import { randomTensor as tensor, simdModule, startPools } from './support/pools.mjs';
import { maxAbs } from './support/scales.mjs';

const module = await simdModule();
const sizes = [1, 2, 3];
const pools = startPools(sizes);
const SPLIT = { placement: 'split' };

const D = 24;
const HEADS = 6;
const F = 20; // hidden units 3 workers split unevenly (6, 7, 7)

const base = { dModel: D, numHeads: HEADS, ffnDim: F, eps: 1e-6 };
const CONFIGS = {
  llama: { ...base, numKvHeads: 3, activation: 'silu', norm: 'rms_norm', rope: { style: 'half' },
    sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }] },
  gemma2: { ...base, numKvHeads: 2, activation: 'gelu_tanh', norm: 'gemma_rms_norm',
    rope: { style: 'half' }, sublayers: [{ mixer: 'self_attention', norm: 'sandwich' },
      { mixer: 'gated_ffn', norm: 'sandwich' }] },
  qwen3: { ...base, numKvHeads: 3, activation: 'silu', norm: 'rms_norm',
    qkNorm: { kind: 'rms_norm' }, rope: { style: 'half' },
    sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }] },
  gptj: { ...base, activation: 'gelu', norm: 'layer_norm', rope: { style: 'interleaved',
    rotaryDim: 2 }, sublayers: [{ mixer: 'self_attention' }, { mixer: 'ffn', parallel: true }] },
  postLn: { ...base, activation: 'relu', norm: 'layer_norm',
    sublayers: [{ mixer: 'self_attention', norm: 'post' }, { mixer: 'ffn', norm: 'post' }] },
  decoder: { ...base, numKvHeads: 2, activation: 'gelu', norm: 'layer_norm',
    sublayers: [{ mixer: 'self_attention' }, { mixer: 'cross_attention' },
      { mixer: 'ffn' }] },
};

// Random weights of a block of `config`, `biases` where a block takes them
// (an FFN's always: the synchronous block refuses an FFN without them).
function randomWeights(config, seed, biases = true) {
  const resolved = track(new module.TransformerBlock(config)).config;
  const { numHeads: h, numKvHeads: kv, headDim: hd, norm: kind, qkNorm } = resolved;
  let s = seed;
  const m = (n, scale = 0.3) => randomFloats(n, (s += 1), scale);
  const norm = () => ({ gamma: m(D, 0.2).map((v) => 1 + v),
    ...(kind === 'layer_norm' ? { beta: m(D, 0.2) } : {}) });
  return { sublayers: resolved.sublayers.map(({ mixer, norm: placement }) => {
    const w = { norm: norm(), ...(placement === 'sandwich' ? { outputNorm: norm() } : {}) };
    if (mixer.endsWith('attention')) {
      w.attention = { wQ: m(D * h * hd), wK: m(D * kv * hd), wV: m(D * kv * hd),
        wO: m(h * hd * D), ...(biases ? { bQ: m(h * hd), bK: m(kv * hd), bV: m(kv * hd),
          bO: m(D) } : {}),
        ...(qkNorm && mixer === 'self_attention' ? { qNorm: m(hd).map((v) => 1 + v),
          kNorm: m(hd).map((v) => 1 + v) } : {}) };
    } else if (mixer === 'ffn') {
      w.ffn = { w1: m(D * F), w2: m(F * D), b1: m(F), b2: m(D) };
    } else {
      w.gatedFfn = { wGate: m(D * F), wUp: m(D * F), wDown: m(F * D),
        ...(biases ? { bGate: m(F), bUp: m(F), bDown: m(D) } : {}) };
    }
    return w;
  }) };
}

// Same shape, values within 1e-5 of the expected tensor's largest magnitude.
function expectClose(actual, expected) {
  expect(actual.shape).toEqual(expected.shape);
  const scale = maxAbs(expected.data);
  const worst = maxAbsDiff(actual.data, expected.data);
  if (!(worst <= 1e-5 * scale)) throw new Error(`differs by ${worst}, scale ${scale}`);
}

// The pooled call rejects with the synchronous call's class and message.
async function expectSameError(pooled, sync) {
  const want = thrown(sync);
  const got = await rejection(pooled());
  expect({ class: got.constructor.name, message: got.message })
    .toEqual({ class: want.constructor.name, message: want.message });
}

// The synchronous block and the pool's split one of `config`, both given
// `weights`.
async function syncAndSplit(pool, config, weights) {
  const sync = track(new module.TransformerBlock(config));
  sync.setWeights(weights);
  const block = await pool.TransformerBlock(config, SPLIT);
  await block.setWeights(weights);
  return { sync, block };
}

describe.each(sizes)('%i workers', (workers) => {
  test.each(Object.keys(CONFIGS))('%s: forward as the synchronous block', async (name) => {
    const config = CONFIGS[name];
    const pool = pools[workers];
    for (const biases of [true, false]) {
      const { sync, block } = await syncAndSplit(pool, config, randomWeights(config, 10, biases));
      try {
        expect(block.placement).toBe('split');
        expect(block.config).toEqual(sync.config);
        const x = tensor([2, 5, D], 1);
        const memory = tensor([2, 4, D], 2);
        const args = name === 'decoder' ? [x, memory] : [x];
        for (const options of [undefined, { causal: true, positionOffset: 3 }]) {
          expectClose(await block.forward(...args, options), sync.forward(...args, options));
        }
        if (name === 'decoder') {
          const options = { memoryKeyPaddingMask: new Uint8Array([0, 0, 1, 1, 0, 0, 0, 1]) };
          expectClose(await block.forward(x, memory, options), sync.forward(x, memory, options));
        }
      } finally {
        await block.dispose();
      }
    }
  });

  test.each(['llama', 'gemma2', 'qwen3', 'gptj'])('%s: token by token through the pool\'s KV ' +
    'cache as the synchronous block, and as its causal forward', async (name) => {
    const config = CONFIGS[name];
    const { sync, block } = await syncAndSplit(pools[workers], config, randomWeights(config, 20));
    try {
      const x = tensor([1, 6, D], 3);
      const full = sync.forward(x, { causal: true });
      const cache = await block.createKVCache({ batch: 1, maxLength: 6 });
      const syncCache = track(sync.createKVCache({ batch: 1, maxLength: 6 }));
      const rows = (from, to) => ({ data: x.data.slice(from * D, to * D),
        shape: [1, to - from, D] });
      // A prompt of 3 tokens, then one token a step.
      const steps = [[0, 3], [3, 4], [4, 5], [5, 6]];
      const out = new Float32Array(6 * D);
      for (const [from, to] of steps) {
        const y = await block.forwardIncremental(rows(from, to), cache);
        expectClose(y, sync.forwardIncremental(rows(from, to), syncCache));
        out.set(y.data, from * D);
      }
      expect(cache.length).toBe(6);
      expectClose({ data: out, shape: [1, 6, D] }, full);
    } finally {
      await block.dispose();
    }
  });
});

// Each build a pool loads, with the synchronous module of that build.
const BUILDS = { 'relaxed-simd': { relaxedSimd: true }, simd: { simd: true, relaxedSimd: false },
  nosimd: { simd: false } };

test.each(Object.keys(BUILDS))('the %s build: a Llama block split over 2 workers, its forward ' +
  'and a step as the synchronous block\'s', async (build) => {
  const sync = await createAttentionModule({ ...BUILDS[build], threads: 1 });
  const pool = await createAttentionPool({ workers: 2, build });
  try {
    expect(pool.build).toBe(sync.build);
    const config = CONFIGS.llama;
    const weights = randomWeights(config, 50, false);
    const whole = track(new sync.TransformerBlock(config));
    whole.setWeights(weights);
    const block = await pool.TransformerBlock(config, SPLIT);
    await block.setWeights(weights);
    const x = tensor([1, 4, D], 9);
    expectClose(await block.forward(x, { causal: true }), whole.forward(x, { causal: true }));
    const cache = await block.createKVCache({ batch: 1, maxLength: 4 });
    const syncCache = track(whole.createKVCache({ batch: 1, maxLength: 4 }));
    expectClose(await block.forwardIncremental(x, cache), whole.forwardIncremental(x, syncCache));
  } finally {
    await pool.dispose();
  }
});

// The matrices' storage types: 16-bit bits sliced as stored, to float32
// rounding; int8 row matrices (W_O, W_down) given as float32 quantized
// whole before their rows are split, so the pool holds the synchronous
// block's int8 weights and differs only as pool-weight-types.test.mjs
// derives for a split layer's two row-split products: sums in another
// order, and each worker rounding its share of a row of z or of the hidden
// layer to its own int16 step.
test.each(['bf16', 'f16', 'int8'])('config.weights %s: the gated FFN and attention split as ' +
  'stored', async (type) => {
  const config = { ...CONFIGS.llama, weights: type };
  const { sync, block } = await syncAndSplit(pools[3], config, randomWeights(config, 60));
  try {
    const x = tensor([1, 5, D], 10);
    const want = sync.forward(x, { causal: true });
    const got = await block.forward(x, { causal: true });
    if (type !== 'int8') {
      expectClose(got, want);
    } else {
      const gamma = (n) => ((n + 2) * 2 ** -24) / (1 - (n + 2) * 2 ** -24);
      const bound = 2 * (2 * gamma(D) + 2 * gamma(F) + 2 * 4 * 2 ** -15) *
        Math.max(1, maxAbs(want.data));
      expect(maxAbsDiff(got.data, want.data)).toBeLessThanOrEqual(bound);
    }
  } finally {
    await block.dispose();
  }
});

describe('errors, as the synchronous block\'s', () => {
  test('weights, calls before them, inputs, a disposed block; then still usable', async () => {
    const pool = pools[2];
    const config = CONFIGS.llama;
    const weights = randomWeights(config, 30);
    const sync = track(new module.TransformerBlock(config));
    const block = await pool.TransformerBlock(config, SPLIT);
    const x = tensor([1, 3, D], 4);
    await expectSameError(() => block.forward(x), () => sync.forward(x));
    const short = { sublayers: [weights.sublayers[0], { ...weights.sublayers[1],
      gatedFfn: { ...weights.sublayers[1].gatedFfn, wUp: new Float32Array(3) } }] };
    await expectSameError(() => block.setWeights(short), () => sync.setWeights(short));
    await expectSameError(() => block.setWeights({ sublayers: [weights.sublayers[0]] }),
      () => sync.setWeights({ sublayers: [weights.sublayers[0]] }));
    sync.setWeights(weights);
    await block.setWeights(weights);
    const wide = tensor([1, 3, D + 1], 5);
    await expectSameError(() => block.forward(wide), () => sync.forward(wide));
    await expectSameError(() => block.forward(x, { causal: 'yes' }),
      () => sync.forward(x, { causal: 'yes' }));
    const mask = { keyPaddingMask: new Uint8Array(5) };
    await expectSameError(() => block.forward(x, mask), () => sync.forward(x, mask));
    const nan = { data: new Float32Array(3 * D).fill(NaN), shape: [1, 3, D] };
    await expectSameError(() => block.forward(nan), () => sync.forward(nan));
    const memory = tensor([1, 2, D], 6);
    // A memory the block does not attend to is left unread, as synchronously.
    expectClose(await block.forward(x, memory, {}), sync.forward(x, memory, {}));
    // A step that fails leaves the cache as it was.
    const cache = await block.createKVCache({ batch: 1, maxLength: 4 });
    const syncCache = track(sync.createKVCache({ batch: 1, maxLength: 4 }));
    await block.forwardIncremental(x, cache);
    sync.forwardIncremental(x, syncCache);
    await expectSameError(() => block.forwardIncremental(tensor([1, 2, D], 7), cache),
      () => sync.forwardIncremental(tensor([1, 2, D], 7), syncCache));
    expect(cache.length).toBe(3);
    await expectSameError(() => block.createKVCache({ batch: 0, maxLength: 4 }),
      () => sync.createKVCache({ batch: 0, maxLength: 4 }));
    // Still usable.
    expectClose(await block.forward(x, { causal: true }), sync.forward(x, { causal: true }));
    await block.dispose();
    sync.dispose();
    await expectSameError(() => block.forward(x), () => sync.forward(x));
  });

  test('a block with cross-attention: no memory, or a step; one with no self-attention: ' +
    'no cache', async () => {
    const pool = pools[2];
    for (const config of [CONFIGS.decoder, { ...base, activation: 'relu', norm: 'rms_norm',
      sublayers: [{ mixer: 'ffn' }, { mixer: 'gated_ffn' }] }]) {
      const weights = randomWeights(config, 40);
      const { sync, block } = await syncAndSplit(pool, config, weights);
      try {
        const x = tensor([1, 3, D], 8);
        if (config === CONFIGS.decoder) {
          await expectSameError(() => block.forward(x), () => sync.forward(x));
          const syncCache = track(sync.createKVCache({ batch: 1, maxLength: 4 }));
          const cache = await block.createKVCache({ batch: 1, maxLength: 4 });
          await expectSameError(() => block.forwardIncremental(x, cache),
            () => sync.forwardIncremental(x, syncCache));
        } else {
          await expectSameError(() => block.createKVCache({ batch: 1, maxLength: 4 }),
            () => sync.createKVCache({ batch: 1, maxLength: 4 }));
          expectClose(await block.forward(x), sync.forward(x));
        }
      } finally {
        await block.dispose();
      }
    }
  });
});

describe('placement', () => {
  test('as options.placement says, else by the cost rule: a d = 24 block whole, a ' +
    'Llama-sized one split', async () => {
    const pool = pools[2];
    const small = await pool.TransformerBlock(CONFIGS.llama);
    const whole = await pool.TransformerBlock(CONFIGS.llama, { placement: 'whole' });
    const big = await pool.TransformerBlock({ ...CONFIGS.llama, dModel: 1024, numHeads: 16,
      numKvHeads: 4, ffnDim: 2816 });
    try {
      expect([small.placement, whole.placement, big.placement]).toEqual(['whole', 'whole',
        'split']);
    } finally {
      await Promise.all([small, whole, big].map((b) => b.dispose()));
    }
    await expect(pool.TransformerBlock(CONFIGS.llama, { placement: 'spread' })).rejects.toThrow(
      "TransformerBlock: options.placement: expected 'split' or 'whole', got \"spread\"");
  });
});

describe('TransformerStack: the pool\'s blocks in turn, then the final norm', () => {
  const stackConfig = { ...CONFIGS.llama, numLayers: 3, finalNorm: true,
    layerWindows: [[2, 0], [-1, -1], [2, 0]] };
  const stackWeights = () => ({
    layers: [70, 80, 90].map((seed) => randomWeights(CONFIGS.llama, seed)),
    finalNorm: { gamma: randomFloats(D, 100, 0.2).map((v) => 1 + v) },
  });

  test.each(['split', 'whole'])('its layers %s: forward, and token by token through a cache ' +
    'per layer, as the synchronous stack', async (placement) => {
    const weights = stackWeights();
    const sync = track(new module.TransformerStack(stackConfig));
    sync.setWeights(weights);
    const stack = await pools[2].TransformerStack(stackConfig, { placement });
    try {
      await stack.setWeights(weights);
      expect(stack.placement).toBe(placement);
      expect(stack.config).toEqual(sync.config);
      const x = tensor([1, 5, D], 11);
      expectClose(await stack.forward(x, { causal: true }), sync.forward(x, { causal: true }));
      const caches = await stack.createKVCaches({ batch: 1, maxLength: 5 });
      const syncCaches = sync.createKVCaches({ batch: 1, maxLength: 5 }).map(track);
      for (const [from, to] of [[0, 2], [2, 3], [3, 5]]) {
        const rows = { data: x.data.slice(from * D, to * D), shape: [1, to - from, D] };
        expectClose(await stack.forwardIncremental(rows, caches),
          sync.forwardIncremental(rows, syncCaches));
      }
      expect(caches.map((c) => c.length)).toEqual([5, 5, 5]);
    } finally {
      await stack.dispose();
    }
  });

  test('errors as the synchronous stack\'s; a failed step leaves every cache as it was',
    async () => {
      const weights = stackWeights();
      const sync = track(new module.TransformerStack(stackConfig));
      const stack = await pools[2].TransformerStack(stackConfig, SPLIT);
      try {
        const x = tensor([1, 2, D], 12);
        await expectSameError(() => stack.forward(x), () => sync.forward(x));
        const { finalNorm, ...withoutNorm } = weights;
        await expectSameError(() => stack.setWeights(withoutNorm),
          () => sync.setWeights(withoutNorm));
        const twoLayers = { ...weights, layers: weights.layers.slice(1) };
        await expectSameError(() => stack.setWeights(twoLayers), () => sync.setWeights(twoLayers));
        sync.setWeights(weights);
        await stack.setWeights(weights);
        const wide = tensor([1, 2, D + 1], 13);
        await expectSameError(() => stack.forward(wide), () => sync.forward(wide));
        const caches = await stack.createKVCaches({ batch: 1, maxLength: 4 });
        const syncCaches = sync.createKVCaches({ batch: 1, maxLength: 4 }).map(track);
        await expectSameError(() => stack.forwardIncremental(x, caches.slice(1)),
          () => sync.forwardIncremental(x, syncCaches.slice(1)));
        const repeated = [caches[0], caches[1], caches[0]];
        await expectSameError(() => stack.forwardIncremental(x, repeated),
          () => sync.forwardIncremental(x, [syncCaches[0], syncCaches[1], syncCaches[0]]));
        await stack.forwardIncremental(x, caches);
        sync.forwardIncremental(x, syncCaches);
        const nan = { data: new Float32Array(D).fill(NaN), shape: [1, 1, D] };
        await expectSameError(() => stack.forwardIncremental(nan, caches),
          () => sync.forwardIncremental(nan, syncCaches));
        const three = tensor([1, 3, D], 14); // past maxLength in every layer
        await expectSameError(() => stack.forwardIncremental(three, caches),
          () => sync.forwardIncremental(three, syncCaches));
        expect(caches.map((c) => c.length)).toEqual([2, 2, 2]);
        const next = tensor([1, 1, D], 15);
        expectClose(await stack.forwardIncremental(next, caches),
          sync.forwardIncremental(next, syncCaches));
      } finally {
        await stack.dispose();
      }
    });
});
