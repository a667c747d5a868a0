// A pooled MultiHeadAttention and pooled encoder and decoder layers (split
// over 2 and 3 workers, and whole in one) given each config field the
// synchronous objects take (the lists of web/src/option-keys.js, which
// tests/types holds to index.d.ts) report the synchronous object's config
// and compute its outputs, forward and token by token; an unknown key is
// refused with the synchronous message; and a field added to the lists
// reaches the split layer's and block's parts with no change to the pool's
// files.
import { OPTION_KEYS } from '../../web/src/option-keys.js';
import { createSplitBlock } from '../../web/src/pool-split-blocks.js';
import { createSplitLayer } from '../../web/src/pool-split-layers.js';
import { rejection, thrown } from './support/errors.mjs';
import { maxAbsDiff } from './support/golden.mjs';
import { randomFloats, sliceTokens } from './support/layers.mjs';
import { track } from './support/modules.mjs';
import { randomTensor as tensor, simdModule, startPools } from './support/pools.mjs';
import { maxAbs } from './support/scales.mjs';

const module = await simdModule();
const sizes = [2, 3];
const pools = startPools(sizes);

const [B, T, S] = [2, 3, 4];
const otherBackend = module.backends.find((b) => b !== module.backend) ?? module.backend;

// A value other than the default for each field, which the base config
// below takes with it. A field added to a list fails the first test until
// it has one here, and is then checked by the others.
const VALUES = {
  dModel: 24, numHeads: 2, kDim: 10, vDim: 12, headDim: 8, headDimV: 6, numKvHeads: 2,
  rope: { style: 'interleaved', base: 500, rotaryDim: 2 }, qkNorm: { kind: 'gemma_rms_norm', eps: 1e-3 },
  bias: false, backend: otherBackend,
  threads: 1, weights: 'f16', cacheType: 'bf16', ffnDim: 20, normFirst: true,
  activation: 'gelu_tanh', eps: 1e-2,
};
const MHA_BASE = { dModel: 16, numHeads: 4 };
const LAYER_BASE = { dModel: 16, numHeads: 4, ffnDim: 24 };
const MHA_FIELDS = OPTION_KEYS.MultiHeadAttentionConfig;
const LAYER_FIELDS = OPTION_KEYS.TransformerLayerConfig;


// Same shape, values within 1e-6 of the expected tensor's largest magnitude
// (the pool adds the workers' partial outputs in another order).
function expectClose(actual, expected) {
  expect(actual.shape).toEqual(expected.shape);
  const worst = maxAbsDiff(actual.data, expected.data);
  const scale = maxAbs(expected.data);
  if (!(worst <= 1e-6 * scale)) throw new Error(`differs by ${worst}, scale ${scale}`);
}

// Random weights of the sizes a resolved config gives.
function mhaWeights(c, seed) {
  const r = (n, scale = 0.3) => randomFloats(n, seed++ * 7919, scale);
  const [q, kv, v, o] = [c.numHeads * c.headDim, c.numKvHeads * c.headDim,
    c.numKvHeads * c.headDimV, c.numHeads * c.headDimV];
  const w = { wQ: r(c.dModel * q), wK: r(c.kDim * kv), wV: r(c.vDim * v), wO: r(o * c.dModel),
    ...(c.qkNorm ? { qNorm: r(c.headDim), kNorm: r(c.headDim) } : {}) };
  return c.bias ? { ...w, bQ: r(q, 0.1), bK: r(kv, 0.1), bV: r(v, 0.1), bO: r(c.dModel, 0.1) }
    : w;
}

function layerWeights(c, decoder, seed) {
  const r = (n, scale = 0.3) => randomFloats(n, seed++ * 7919, scale);
  const d = c.dModel;
  const f = c.ffnDim;
  const attention = () => mhaWeights({ ...c, kDim: d, vDim: d, headDimV: c.headDim, bias: true },
    seed += 10);
  const norm = () => ({ gamma: Float32Array.from(r(d), (v) => 1 + v), beta: r(d, 0.1) });
  const ffn = { w1: r(d * f), b1: r(f, 0.1), w2: r(f * d), b2: r(d, 0.1) };
  return decoder
    ? { selfAttention: attention(), crossAttention: attention(), ffn, norm1: norm(),
      norm2: norm(), norm3: norm() }
    : { attention: attention(), ffn, norm1: norm(), norm2: norm() };
}

// Each field of `fields`, with its value, over the base config.
const each = (fields, base) => fields.map((field) => [field, { ...base, [field]: VALUES[field] }]);

test('every config field the synchronous objects take has a value to test', () => {
  expect([...MHA_FIELDS, ...LAYER_FIELDS].filter((f) => !(f in VALUES))).toEqual([]);
});

describe.each(sizes)('pool of %i workers', (workers) => {
  test.each(each(MHA_FIELDS, MHA_BASE))('MultiHeadAttention given %s: config and outputs',
    async (_, config) => {
      const pool = pools[workers];
      const sync = track(new module.MultiHeadAttention(config));
      const pooled = await pool.MultiHeadAttention(config);
      try {
        const c = sync.config;
        expect(pooled.config).toEqual(c);
        const weights = mhaWeights(c, 3);
        sync.setWeights(weights);
        await pooled.setWeights(weights);
        const args = [tensor([B, T, c.dModel], 1), tensor([B, S, c.kDim], 2),
          tensor([B, S, c.vDim], 3)];
        expectClose((await pooled.forward(...args)).output, sync.forward(...args).output);
        // Token by token: self-attention, whose keys and values are the query's.
        if (c.kDim !== c.dModel || c.vDim !== c.dModel) return;
        const x = args[0];
        const cache = track(sync.createKVCache({ batch: B, maxLength: T }));
        const pooledCache = await pooled.createKVCache({ batch: B, maxLength: T });
        for (let t = 0; t < T; t++) {
          const step = sliceTokens(x, t, t + 1);
          expectClose((await pooled.forwardIncremental(step, pooledCache)).output,
            sync.forwardIncremental(step, cache).output);
        }
        await pooledCache.dispose();
      } finally {
        await pooled.dispose();
      }
    });

  describe.each([['split'], ['whole']])('layers placed %s', (placement) => {
    test.each(each(LAYER_FIELDS, LAYER_BASE))('encoder given %s: config and output',
      async (_, config) => {
        const sync = track(new module.TransformerEncoderLayer(config));
        const pooled = await pools[workers].TransformerEncoderLayer(config, { placement });
        try {
          expect(pooled.placement).toBe(placement);
          expect(pooled.config).toEqual(sync.config);
          const weights = layerWeights(sync.config, false, 5);
          sync.setWeights(weights);
          await pooled.setWeights(weights);
          const x = tensor([B, T, sync.config.dModel], 1);
          for (const options of [undefined, { causal: true }]) {
            expectClose(await pooled.forward(x, options), sync.forward(x, options));
          }
        } finally {
          await pooled.dispose();
        }
      });

    test.each(each(LAYER_FIELDS, LAYER_BASE))(
      'decoder given %s: config, output and token by token', async (_, config) => {
        const sync = track(new module.TransformerDecoderLayer(config));
        const pooled = await pools[workers].TransformerDecoderLayer(config, { placement });
        const made = [];
        try {
          expect(pooled.config).toEqual(sync.config);
          const weights = layerWeights(sync.config, true, 7);
          sync.setWeights(weights);
          await pooled.setWeights(weights);
          const { dModel } = sync.config;
          const [x, memory] = [tensor([B, T, dModel], 1), tensor([B, S, dModel], 2)];
          expectClose(await pooled.forward(x, memory), sync.forward(x, memory));
          const cache = track(sync.createKVCache({ batch: B, maxLength: T }));
          const kv = track(sync.precomputeMemory(memory));
          made.push(await pooled.createKVCache({ batch: B, maxLength: T }),
            await pooled.precomputeMemory(memory));
          for (let t = 0; t < T; t++) {
            const step = sliceTokens(x, t, t + 1);
            expectClose(await pooled.forwardIncremental(step, made[0], made[1]),
              sync.forwardIncremental(step, cache, kv));
          }
        } finally {
          for (const object of made) await object.dispose();
          await pooled.dispose();
        }
      });
  });

  test.each([['MultiHeadAttention', MHA_BASE], ['TransformerEncoderLayer', LAYER_BASE],
    ['TransformerDecoderLayer', LAYER_BASE]])('%s: an unknown key, the synchronous message',
    async (Kind, base) => {
      const config = { ...base, normKind: 'rms' };
      const want = thrown(() => new module[Kind](config));
      const got = await rejection(pools[workers][Kind](config));
      expect({ class: got.constructor.name, message: got.message })
        .toEqual({ class: want.constructor.name, message: want.message });
    });
});

// A pool context of two workers that records the messages sent to them,
// worker 0's check of an attention's config answered as a 2-head
// attention's; made(kind, op) gives the configs of the parts of that kind
// made (or checked).
function recordingContext() {
  const sent = [];
  const workers = {
    count: 2,
    check: () => {},
    all: async (list, message) => list.map((_, i) => {
      const m = message(i);
      sent.push(m);
      return m.op === 'check'
        ? { config: { numHeads: 2, numKvHeads: 2, headDim: 4, headDimV: 4 }, kernels: '' } : {};
    }),
  };
  let ref = 0;
  return {
    context: { workers, newRef: () => ++ref },
    made: (kind, op = 'new') => sent.filter((m) => m.op === op && m.kind === kind)
      .map((m) => m.config),
  };
}

// Runs create() with 'probe' added to the option key lists named, as a
// field added to the C++ config and the glue would be.
async function withProbeKey(lists, create) {
  for (const list of lists) OPTION_KEYS[list].push('probe');
  try {
    await create();
  } finally {
    for (const list of lists) OPTION_KEYS[list].pop();
  }
}

// A field added to both config lists (as one added to C++, the glue and
// option-keys.js would be) reaches the split layer's attentions as given,
// and its FFN and norms in the config its synchronous layer resolved, as
// the messages to its workers show.
test('a field added to the lists reaches every part of a split layer', async () => {
  const { context, made } = recordingContext();
  const given = { dModel: 8, numHeads: 2, ffnDim: 6, rope: { style: 'half' }, probe: 'given' };
  const resolved = { dModel: 8, numHeads: 2, headDim: 4, numKvHeads: 2, ffnDim: 6,
    normFirst: false, activation: 'relu', eps: 1e-5, weights: 'f32', cacheType: 'f32',
    backend: 'highway', threads: 1, probe: 'resolved' };
  await withProbeKey(['MultiHeadAttentionConfig', 'TransformerLayerConfig'],
    () => createSplitLayer(context, 'TransformerDecoderLayer', given,
      { config: resolved, kernels: '' }));
  const { ffnDim, ...layerOnly } = given;
  const { rope, ...cross } = layerOnly;
  expect(made('MultiHeadAttention', 'check')).toEqual([layerOnly, cross]);
  // Each worker's heads of them: one of the two.
  const heads = { numHeads: 1, numKvHeads: 1, headDim: 4, headDimV: 4 };
  expect(made('MultiHeadAttention')).toEqual([layerOnly, layerOnly, cross, cross]
    .map((c) => ({ ...c, ...heads })));
  expect(made('FeedForward')).toEqual([{ ...resolved, ffnDim: 3 }, { ...resolved, ffnDim: 3 }]);
  const norms = made('SublayerNorm');
  expect(norms.length).toBe(6); // 3 sublayers, each in both workers
  // What a norm reads of the resolved config, with the layer's norm as a
  // block names it.
  for (const c of norms) {
    expect(c).toEqual({ dModel: 8, eps: 1e-5, backend: 'highway', norm: 'layer_norm',
      placement: 'post', layerForm: true });
  }
});

// The same for a split block: a field added to the block's and the
// attention's lists reaches each attention sublayer as given (a
// cross-attention's without the rotary positions and QK-norm, as C++'s), and
// the FFN and gated FFN in the config the synchronous block resolved.
test('a field added to the lists reaches every part of a split block', async () => {
  const { context, made } = recordingContext();
  const sublayers = [{ mixer: 'self_attention', norm: 'pre', parallel: false },
    { mixer: 'cross_attention', norm: 'sandwich', parallel: false },
    { mixer: 'gated_ffn', norm: 'pre', parallel: false }];
  const given = { dModel: 8, numHeads: 2, ffnDim: 6, rope: { style: 'half' },
    qkNorm: { kind: 'rms_norm' }, sublayers, probe: 'given' };
  const resolved = { dModel: 8, numHeads: 2, headDim: 4, numKvHeads: 2, ffnDim: 6,
    activation: 'silu', norm: 'rms_norm', eps: 1e-6, weights: 'f32', cacheType: 'f32',
    backend: 'highway', threads: 1, sublayers, probe: 'resolved' };
  await withProbeKey(['MultiHeadAttentionConfig', 'TransformerBlockConfig'],
    () => createSplitBlock(context, given, { config: resolved, kernels: '' }));
  const { ffnDim, sublayers: _, ...self } = given;
  const { rope, qkNorm, ...cross } = self;
  expect(made('MultiHeadAttention', 'check')).toEqual([self, cross]);
  expect(made('GatedFeedForward')).toEqual([{ ...resolved, ffnDim: 3 },
    { ...resolved, ffnDim: 3 }]);
  expect(made('SublayerNorm').map((c) => c.placement)).toEqual(['pre', 'pre', 'sandwich',
    'sandwich', 'pre', 'pre']);
  for (const c of made('SublayerNorm')) {
    expect(c).toMatchObject({ dModel: 8, eps: 1e-6, backend: 'highway', norm: 'rms_norm',
      layerForm: false });
  }
});
