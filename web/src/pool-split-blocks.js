// The pool's TransformerBlock split over its workers, sublayer by sublayer
// as its config lists them (MIXER_SPLITS, pool-block-mixers.js, says how
// each mixer splits): attentions by key/value-head groups (the pool's
// sharded MultiHeadAttention, its KV cache sharded with it), FFNs and gated
// FFNs by hidden units. A sublayer is one gathered call (pool-object.js):
// the caller sends its input h to the mixer's workers, each normalizing h
// for its part where the sublayer's norm comes first (pre, sandwich), and
// the first of them adds the partial outputs in worker order, then joins
// them to the residual as the block's placement says (through the output
// norm of a sandwich, the norm of a post sublayer after), and answers with
// the next h (SublayerNorm, bindings/sublayer_norm_binding.cc). Sublayers
// side by side (parallel) read the same h, each adding to the sum of those
// before it. So the math, its checks and their messages are the
// synchronous block's own (src/layers/transformer_block.cc); its errors as
// every split object's (pool-split-object.js).
import { float32, weightMatrix } from './arguments.js';
import { givesMemory, readBlockForwardOptions, readIncrementalOptions } from './blocks.js';
import { readCacheOptions } from './caches.js';
import { OPTION_KEYS } from './option-keys.js';
import { ARGUMENTS, tensor, whole } from './pool-arguments.js';
import { createMultiHeadAttention, SUBLAYER } from './pool-attention.js';
import { MIXER_SPLITS } from './pool-block-mixers.js';
import { KVCache, poolObject, standIn } from './pool-key-values.js';
import { checkReceivers } from './pool-object.js';
import { SplitObject } from './pool-split-object.js';
import { FeedForwardShards, SublayerNorm } from './pool-sublayer-parts.js';
import { readTensor } from './tensors.js';

const KIND = 'TransformerBlock';

// Whether the pool can split a block of `config` (resolved): every mixer has
// a split, and at most one self-attention holds the block's KV cache.
export function canSplitBlock(config) {
  const splits = config.sublayers.map(({ mixer }) => MIXER_SPLITS[mixer]);
  return splits.every((s) => s !== undefined) &&
    splits.filter((s) => s.attention?.memory === false).length <= 1;
}

// x { data, shape } through `sublayers` (see createSublayers) in order,
// as the synchronous block runs them; attend(sublayer, h, options) runs an
// attention sublayer's call (options: its sublayer request).
export async function runSublayers(where, x, sublayers, attend) {
  let h = { data: x.data, shape: x.shape };
  let input = h; // the input of the sublayers side by side
  for (const s of sublayers) {
    if (!s.parallel) input = h;
    const sublayer = { norm: s.norm.ref, name: s.name, where,
      ...(input === h ? {} : { residual: h.data }) };
    h = s.split.attention === undefined ? await s.part.forward(input, sublayer)
      : await attend(s, input, { [SUBLAYER]: sublayer });
  }
  return { data: h.data, shape: [...x.shape] };
}

// The parts of a split layer's or block's sublayers, `entries` [{ mixer,
// placement, parallel, name }] (mixer a key of MIXER_SPLITS; name, as the
// synchronous object names the sublayer in its messages): an attention of
// config attention(split) or an FFN's shards, each with its norms in the
// same workers. c: the object's resolved config; norms { norm (its kind),
// layerForm (the layers' norm messages) }. [{ split, part, norm, parallel,
// name }]; what was made disposed if a part fails.
export async function createSublayers(context, c, entries, attention, norms) {
  const made = [];
  try {
    const sublayers = [];
    for (const { mixer, placement, parallel, name } of entries) {
      const split = MIXER_SPLITS[mixer];
      const part = await (split.attention === undefined
        ? FeedForwardShards.create(context, c, split.ffn)
        : createMultiHeadAttention(context, attention(split)));
      made.push(part);
      const norm = await SublayerNorm.create(part, { dModel: c.dModel, eps: c.eps, placement,
        backend: c.backend, ...norms });
      made.push(norm);
      sublayers.push({ split, part, norm, parallel, name });
    }
    return sublayers;
  } catch (e) {
    await Promise.all(made.map((part) => part.dispose()));
    throw e;
  }
}

class TransformerBlock extends SplitObject {
  // [{ split (MIXER_SPLITS' row), part, norm, parallel, name }], in order
  #sublayers;

  constructor(context, given, resolved, sublayers) {
    super(context, KIND, given, resolved,
      sublayers.flatMap(({ part, norm }) => [part, norm]));
    this.#sublayers = sublayers;
  }

  #self() { return this.#sublayers.find((s) => s.split.attention?.memory === false)?.part; }

  #crossSublayers() { return this.#sublayers.filter((s) => s.split.attention?.memory); }

  // Worker 0's synchronous block judges the weights whole first (all or
  // nothing: nothing is sent before it names what it refuses); then each
  // sublayer's go to its parts.
  setWeights(weights) {
    return this.run('setWeights', false, [weights], [ARGUMENTS.TransformerBlock.weights],
      async (where, [w]) => {
        await this.synchronousError(where, 'setWeights', [w], {});
        await Promise.all(this.#sublayers.map((s, i) =>
          this.#setSublayerWeights(where, s, w.sublayers[i])));
        this.weightsSet();
      });
  }

  // One sublayer's weights, which the synchronous block has accepted.
  #setSublayerWeights(where, { split, part, norm }, w) {
    const c = this.config;
    const given = w[split.group];
    const read = (key, v) => (v === undefined ? undefined
      : (/^w[A-Z]/.test(key) ? weightMatrix : float32)(where, key, v));
    const mixer = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)
      .map(([key, v]) => [key, read(key, v)]));
    if (split.attention !== undefined) {
      // A bias left out is zeros, as the synchronous block takes it.
      const [q, kv] = [c.numHeads * c.headDim, c.numKvHeads * c.headDim];
      const sizes = { bQ: q, bK: kv, bV: kv, bO: c.dModel };
      for (const [key, n] of Object.entries(sizes)) mixer[key] ??= new Float32Array(n);
    }
    const normOf = (n) => (n === undefined ? undefined : Object.fromEntries(Object.entries(n)
      .filter(([, v]) => v !== undefined).map(([key, v]) => [key, float32(where, key, v)])));
    return Promise.all([part.setWeights(mixer),
      norm.setWeights(normOf(w.norm), 'norm', normOf(w.outputNorm), 'outputNorm')]);
  }

  // forward(x, options) or, for a block with cross-attention, forward(x,
  // memory, options): as the synchronous block tells them apart.
  forward(x, memoryOrOptions, maybeOptions) {
    const hasMemory = givesMemory(memoryOrOptions, maybeOptions);
    const [given, schemas] = hasMemory
      ? [[x, memoryOrOptions, maybeOptions], [tensor, tensor, ARGUMENTS.blockOptions]]
      : [[x, memoryOrOptions], [tensor, ARGUMENTS.blockOptions]];
    return this.run('forward', true, given, schemas, async (where, args) => {
      const [x, memory, options] = hasMemory ? args : [args[0], undefined, args[1]];
      readTensor(where, 'x', x);
      if (hasMemory) readTensor(where, 'memory', memory);
      readBlockForwardOptions(where, options, OPTION_KEYS.BlockForwardOptions);
      const cross = this.#crossSublayers();
      // A memory the block does not take, or none where it needs one.
      if ((cross.length > 0) !== hasMemory) {
        await this.synchronousError(where, 'forward', args, { zeroWeights: true });
      }
      const { memoryKeyPaddingMask, ...self } = options ?? {};
      const across = memoryKeyPaddingMask === undefined ? {} : { keyPaddingMask:
        memoryKeyPaddingMask };
      // Each cross-attention's keys and values of the memory, for this call.
      const memories = new Map();
      try {
        for (const s of cross) memories.set(s, await s.part.precomputeKeyValue(memory));
        return await runSublayers(where, x, this.#sublayers, (s, h, sublayer) => (
          s.split.attention.memory
            ? s.part.forward(h, memories.get(s), undefined, { ...across, ...sublayer })
            : s.part.forward(h, undefined, undefined, { ...self, ...sublayer })));
      } finally {
        await Promise.all([...memories.values()].map((kv) => kv.dispose()));
      }
    });
  }

  forwardIncremental(x, cache, options) {
    return this.run('forwardIncremental', true, [x, cache, options],
      [tensor, whole, ARGUMENTS.selfAttentionOptions], async (where, [x, cache, options]) => {
        const { tokens } = readTensor(where, 'x', x);
        const self = this.#self();
        // A block without its one self-attention, or with a memory to
        // attend to, takes no step.
        if (self === undefined || this.#crossSublayers().length > 0) {
          await this.synchronousError(where, 'forwardIncremental', [x, standIn(cache), options],
            { zeroWeights: true });
        }
        poolObject(where, 'cache', cache, KVCache, self);
        readIncrementalOptions(where, options);
        const before = cache.disposed ? 0 : cache.length;
        let attended = false;
        try {
          return await runSublayers(where, x, this.#sublayers, async (s, h, sublayer) => {
            const next = await s.part.forwardIncremental(h, cache, { ...options, ...sublayer });
            attended = true;
            return next;
          });
        } catch (e) {
          // The tokens the self-attention added go out again.
          if (attended && cache.length === before + tokens) await cache.truncate(before);
          throw e;
        }
      }, ([x, cache, options]) => [x, standIn(cache), options]);
  }

  createKVCache(options) {
    return this.run('createKVCache', false, [options], [ARGUMENTS.cacheOptions],
      async (where, [options]) => {
        readCacheOptions(where, options);
        const self = this.#self();
        if (self === undefined) await this.synchronousError(where, 'createKVCache', [options], {});
        return self.createKVCache(options);
      });
  }
}

checkReceivers(TransformerBlock, KIND);

// A block of the pool of `context` split over its workers, which
// canSplitBlock allows; given: its config as the caller gave it; resolved:
// its config and kernels as worker 0's synchronous block reports them.
export async function createSplitBlock(context, given, resolved) {
  const c = resolved.config;
  // The attentions' config: the fields MultiHeadAttention's config also
  // has, as given; a cross-attention's without rotary positions and QK-norm
  // (as C++'s AttentionConfig).
  const attention = Object.fromEntries(Object.entries(given)
    .filter(([key]) => OPTION_KEYS.MultiHeadAttentionConfig.includes(key)));
  const { rope, qkNorm, ...cross } = attention;
  // Each sublayer named as the synchronous block names it.
  const sublayers = await createSublayers(context, c, c.sublayers.map((s, i) => ({
    mixer: s.mixer, placement: s.norm, parallel: s.parallel,
    name: `sublayers[${i}] (${s.mixer})` })),
  (split) => (split.attention.memory ? cross : attention), { norm: c.norm, layerForm: false });
  return new TransformerBlock(context, given, resolved, sublayers);
}
