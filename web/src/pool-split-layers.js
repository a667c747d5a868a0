// The pool's transformer layers split over its workers: each attention by
// heads (the pool's sharded MultiHeadAttention, with its sharded KV cache and
// precomputed memory), the FFN by hidden units (worker i holds a contiguous
// group of them: its W1 columns, b1 entries and W2 rows; groups differ by at
// most one unit; b2 goes with the first group). A sublayer is one gathered
// call (pool-object.js): the caller sends the sublayer's input h to its workers,
// and the first of them adds the partial outputs in worker order, then adds
// the residual and normalizes through the wasm module (SublayerNorm,
// bindings/sublayer_norm_binding.cc), and answers with the next h. So the
// math, its checks and their messages are the synchronous layers' own
// (src/layers/transformer_layers.cc, src/layers/residual.h):
//   post-LN: h = LN(h + f(h)) for each sublayer f
//   pre-LN:  h = h + f(LN(h)), each worker normalizing h for its part
//
// Errors as every split object's (pool-split-object.js).
import { checkObject, optionalMask } from './arguments.js';
import { readCausal, readSharedAttentionOptions } from './attention.js';
import { readCacheOptions } from './caches.js';
import { readLayerWeights } from './layers.js';
import { DECODER_WEIGHT_GROUPS, ENCODER_WEIGHT_GROUPS, OPTION_KEYS } from './option-keys.js';
import { layerWeightsFromPyTorch } from './pytorch-layer-state.js';
import { ARGUMENTS, tensor, whole } from './pool-arguments.js';
import { createMultiHeadAttention, SUBLAYER } from './pool-attention.js';
import { isKeyValues, KVCache, poolObject, PrecomputedKeyValue, standIn }
  from './pool-key-values.js';
import { MIXER_SPLITS } from './pool-block-mixers.js';
import { checkReceivers } from './pool-object.js';
import { SplitObject } from './pool-split-object.js';
import { FeedForwardShards, SublayerNorm } from './pool-sublayer-parts.js';
import { readTensor } from './tensors.js';
import { fits } from './weight-forms.js';

// Whether every weight has the shape the config gives it and values the
// layer's config.weights takes (see fits): if not, the synchronous layer
// says what is wrong.
function weightsFit(weights, shapes, type) {
  return Object.entries(shapes).every(([group, keys]) => Object.entries(keys).every(
    ([key, shape]) => fits(weights[group][key], shape, type)));
}

// The attentions' config of a layer `given` this config: the fields
// MultiHeadAttention's config also has, as the caller gave them, as C++
// makes a layer's attentions (AttentionConfig, src/layers/transformer_layers.cc);
// the pooled attentions send them on whole, and each worker's object
// resolves and judges them.
function attentionConfig(given) {
  const fields = OPTION_KEYS.MultiHeadAttentionConfig;
  return Object.fromEntries(Object.entries(given).filter(([key]) => fields.includes(key)));
}

const ENCODER = ARGUMENTS.TransformerEncoderLayer;
const DECODER = ARGUMENTS.TransformerDecoderLayer;

// What the encoder and decoder share: parts, weights, the sublayers run
// here, and the synchronous errors.
class PooledLayer extends SplitObject {
  #parts; // { attentions: [MultiHeadAttention...], ffn, norms: [SublayerNorm...] }

  constructor(context, kind, given, resolved, parts) {
    super(context, kind, given, resolved,
      [...parts.attentions, parts.ffn, ...parts.norms]);
    this.#parts = parts;
  }

  // Weights as the synchronous layer takes them: { group: { key: array } }.
  setWeightsOf(where, weights, groups) {
    const c = this.config;
    const w = readLayerWeights(where, weights, groups);
    const kv = c.numKvHeads * c.headDim;
    const [d, f] = [c.dModel, c.ffnDim];
    const attention = { wQ: [d, d], wK: [d, kv], wV: [d, kv], wO: [d, d], bQ: [1, d],
      bK: [1, kv], bV: [1, kv], bO: [1, d] };
    const norm = { gamma: [1, d], beta: [1, d] };
    const shapes = Object.fromEntries(Object.keys(groups).map((group) => [group,
      group.startsWith('norm') ? norm : group === 'ffn'
        ? { w1: [d, f], b1: [1, f], w2: [f, d], b2: [1, d] } : attention]));
    return { w, fits: weightsFit(w, shapes, c.weights) };
  }

  // Sends weights that fit to the parts.
  async apply(w, attentionGroups, normGroups) {
    const { attentions, ffn, norms } = this.#parts;
    await Promise.all([...attentions.map((a, i) => a.setWeights(w[attentionGroups[i]])),
      ffn.setWeights(w.ffn), ...norms.map((n, i) => n.setWeights(w[normGroups[i]], normGroups[i]))]);
    this.weightsSet();
  }

  // setWeights or setWeightsFromPyTorch (`method`) of `argument`, read by
  // `schema`, its weights convert(where, copy).
  setWeightsWith(method, argument, schema, convert, groups, attentionGroups, normGroups) {
    return this.run(method, false, [argument], [schema], async (where, args) => {
      const { w, fits } = this.setWeightsOf(where, convert(where, args[0]), groups);
      if (!fits) {
        // All or nothing: nothing is sent before the synchronous layer
        // names what it refuses.
        await this.synchronousError(where, method, args, {});
      }
      await this.apply(w, attentionGroups, normGroups);
    });
  }

  // x {data, shape} through the sublayers [{ name, run(h, sublayer) ->
  // Promise<the next h> }], each with its norm, as the synchronous layer.
  async sublayers(where, x, steps) {
    let h = { data: x.data, shape: x.shape };
    for (const [i, { name, run }] of steps.entries()) {
      h = await run(h, { norm: this.#parts.norms[i].ref, name, where });
    }
    return { data: h.data, shape: [...x.shape] };
  }

  ffnStep() {
    return { name: 'the feed-forward sublayer', run: (h, sublayer) =>
      this.#parts.ffn.forward(h, sublayer) };
  }
}

class TransformerEncoderLayer extends PooledLayer {
  #attention;

  constructor(context, given, resolved, parts) {
    super(context, 'TransformerEncoderLayer', given, resolved, parts);
    [this.#attention] = parts.attentions;
  }

  setWeights(weights) {
    return this.setWeightsWith('setWeights', weights, ENCODER.weights, (_, w) => w,
      ENCODER_WEIGHT_GROUPS, ['attention'], ['norm1', 'norm2']);
  }

  setWeightsFromPyTorch(state) {
    return this.setWeightsWith('setWeightsFromPyTorch', state, ENCODER.state,
      (where, s) => layerWeightsFromPyTorch(where, 'TransformerEncoderLayer', this.config, s),
      ENCODER_WEIGHT_GROUPS, ['attention'], ['norm1', 'norm2']);
  }

  forward(x, options) {
    return this.run('forward', true, [x, options], [tensor, ARGUMENTS.encoderOptions],
      async (where, [x, options]) => {
        readTensor(where, 'x', x);
        const o = options === undefined ? {} : options;
        checkObject(where, 'options', o, OPTION_KEYS.EncoderForwardOptions);
        readSharedAttentionOptions(where, o);
        const causal = readCausal(where, o.causal);
        const attention = { ...o, causal };
        return this.sublayers(where, x, [
          { name: 'the self-attention sublayer', run: (h, sublayer) => this.#attention
            .forward(h, undefined, undefined, { ...attention, [SUBLAYER]: sublayer }) },
          this.ffnStep(),
        ]);
      });
  }
}

class TransformerDecoderLayer extends PooledLayer {
  #self;
  #cross;

  constructor(context, given, resolved, parts) {
    super(context, 'TransformerDecoderLayer', given, resolved, parts);
    [this.#self, this.#cross] = parts.attentions;
  }

  setWeights(weights) {
    return this.setWeightsWith('setWeights', weights, DECODER.weights, (_, w) => w,
      DECODER_WEIGHT_GROUPS, ['selfAttention', 'crossAttention'], ['norm1', 'norm2', 'norm3']);
  }

  setWeightsFromPyTorch(state) {
    return this.setWeightsWith('setWeightsFromPyTorch', state, DECODER.state,
      (where, s) => layerWeightsFromPyTorch(where, 'TransformerDecoderLayer', this.config, s),
      DECODER_WEIGHT_GROUPS, ['selfAttention', 'crossAttention'], ['norm1', 'norm2', 'norm3']);
  }

  // memory: a pooled PrecomputedKeyValue of this layer's layout, or a tensor.
  #memory(where, memory) {
    if (isKeyValues(memory)) {
      poolObject(where, 'memory', memory, PrecomputedKeyValue, this.#cross);
      return { precomputed: memory };
    }
    readTensor(where, 'memory', memory);
    return { tensor: memory };
  }

  // The steps after the self-attention: cross-attention over `kv` (a
  // pooled PrecomputedKeyValue) with its key padding, the FFN.
  #crossAndFfn(kv, keyPaddingMask) {
    const options = keyPaddingMask === undefined ? {} : { keyPaddingMask };
    return [
      { name: 'the cross-attention sublayer', run: (h, sublayer) =>
        this.#cross.forward(h, kv, undefined, { ...options, [SUBLAYER]: sublayer }) },
      this.ffnStep(),
    ];
  }

  forward(x, memory, options) {
    return this.run('forward', true, [x, memory, options],
      [tensor, tensor, ARGUMENTS.decoderOptions], async (where, [x, memory, options]) => {
        readTensor(where, 'x', x);
        const m = this.#memory(where, memory);
        const o = options === undefined ? {} : options;
        checkObject(where, 'options', o, OPTION_KEYS.DecoderForwardOptions);
        readSharedAttentionOptions(where, o);
        const causal = readCausal(where, o.causal, true);
        const memoryMask = optionalMask(where, 'options.memoryKeyPaddingMask',
          o.memoryKeyPaddingMask);
        const { memoryKeyPaddingMask, ...self } = o;
        // A memory tensor is projected first, its keys and values held as
        // config.cacheType holds them, as the synchronous layer does.
        const kv = m.precomputed ?? await this.#cross.precomputeKeyValue(m.tensor);
        try {
          return await this.sublayers(where, x, [
            { name: 'the self-attention sublayer', run: (h, sublayer) => this.#self
              .forward(h, undefined, undefined, { ...self, causal, [SUBLAYER]: sublayer }) },
            ...this.#crossAndFfn(kv, memoryMask),
          ]);
        } finally {
          if (m.precomputed === undefined) await kv.dispose();
        }
      }, ([x, memory, options]) => [x, standIn(memory), options]);
  }

  forwardIncremental(x, cache, memory, options) {
    return this.run('forwardIncremental', true, [x, cache, memory, options],
      [tensor, whole, tensor, ARGUMENTS.selfAttentionOptions],
      async (where, [x, cache, memory, options]) => {
        const { tokens } = readTensor(where, 'x', x);
        const o = options === undefined ? {} : options;
        checkObject(where, 'options', o, OPTION_KEYS.SelfAttentionOptions);
        readSharedAttentionOptions(where, o);
        poolObject(where, 'cache', cache, KVCache, this.#self);
        const m = this.#memory(where, memory);
        const before = cache.disposed ? 0 : cache.length;
        // A memory tensor is projected for this step only, as synchronously.
        const kv = m.precomputed ?? await this.#cross.precomputeKeyValue(m.tensor);
        let attended = false;
        try {
          return await this.sublayers(where, x, [
            { name: 'the self-attention sublayer', run: async (h, sublayer) => {
              const next = await this.#self.forwardIncremental(h, cache,
                { ...o, [SUBLAYER]: sublayer });
              attended = true;
              return next;
            } },
            ...this.#crossAndFfn(kv),
          ]);
        } catch (e) {
          // The tokens the self-attention added go out again.
          if (attended && cache.length === before + tokens) await cache.truncate(before);
          throw e;
        } finally {
          if (m.precomputed === undefined) await kv.dispose();
        }
      }, ([x, cache, memory, options]) => [x, standIn(cache), standIn(memory),
        options]);
  }

  createKVCache(options) {
    return this.run('createKVCache', false, [options], [ARGUMENTS.cacheOptions],
      async (where, [options]) => {
        readCacheOptions(where, options);
        return this.#self.createKVCache(options);
      });
  }

  precomputeMemory(memory, options) {
    return this.run('precomputeMemory', true, [memory, options],
      [tensor, ARGUMENTS.precomputeOptions], async (where, [memory, options]) => {
        readTensor(where, 'memory', memory);
        return this.#cross.precomputeKeyValue(memory, options);
      });
  }
}

checkReceivers(TransformerEncoderLayer, 'TransformerEncoderLayer');
checkReceivers(TransformerDecoderLayer, 'TransformerDecoderLayer');

// A layer of `kind` split over the workers of the pool of `context`; given:
// its config as the caller gave it; resolved: its config and kernels as
// worker 0's synchronous layer reports them.
export async function createSplitLayer(context, kind, given, resolved) {
  const c = resolved.config;
  const made = []; // everything made so far, disposed if a later part fails
  const keep = async (part) => {
    made.push(await part);
    return made.at(-1);
  };
  try {
    // The decoder's cross-attention has no rotary positions (as in C++).
    const self = attentionConfig(given);
    const { rope, ...cross } = self;
    const attentions = [];
    for (const config of kind === 'TransformerEncoderLayer' ? [self] : [self, cross]) {
      attentions.push(await keep(createMultiHeadAttention(context, config)));
    }
    const ffn = await keep(FeedForwardShards.create(context, c, MIXER_SPLITS.ffn.ffn));
    // One norm per sublayer, in the workers of the sublayer's part.
    const norms = [];
    const norm = { ...c, norm: 'layer_norm', placement: c.normFirst ? 'pre' : 'post',
      layerForm: true };
    for (const part of [...attentions, ffn]) {
      norms.push(await keep(SublayerNorm.create(part, norm)));
    }
    const Class = kind === 'TransformerEncoderLayer' ? TransformerEncoderLayer
      : TransformerDecoderLayer;
    return new Class(context, given, resolved, { attentions, ffn, norms });
  } catch (e) {
    await Promise.all(made.map((part) => part.dispose()));
    throw e;
  }
}
