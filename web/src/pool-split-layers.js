// The pool's transformer layers split over its workers: a layer is the
// block of its sublayers (as in C++), [self-attention, (cross-attention,)
// FFN] with LayerNorms pre or post, split as pool-split-blocks.js splits a
// block (attentions by heads, with their sharded KV cache and precomputed
// memory; the FFN by hidden units; each sublayer one gathered call whose
// gathering worker adds the residual and normalizes):
//   post-LN: h = LN(h + f(h)) for each sublayer f
//   pre-LN:  h = h + f(LN(h)), each worker normalizing h for its part
// What is the layers' own: their weights' groups, setWeightsFromPyTorch,
// the decoder's memories and its step's memory, their sublayers' names.
// Errors as every split object's (pool-split-object.js).
import { checkObject, optionalMask } from './arguments.js';
import { readCausal, readSharedAttentionOptions } from './attention.js';
import { readCacheOptions } from './caches.js';
import { readLayerWeights } from './layers.js';
import { DECODER_WEIGHT_GROUPS, ENCODER_WEIGHT_GROUPS, OPTION_KEYS } from './option-keys.js';
import { layerWeightsFromPyTorch } from './pytorch-layer-state.js';
import { ARGUMENTS, tensor, whole } from './pool-arguments.js';
import { isKeyValues, KVCache, poolObject, PrecomputedKeyValue, standIn }
  from './pool-key-values.js';
import { checkReceivers } from './pool-object.js';
import { createSublayers, runSublayers } from './pool-split-blocks.js';
import { SplitObject } from './pool-split-object.js';
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

// The layers' sublayers by their weights' groups, in order: the block
// mixer each is, and its name in the synchronous layer's messages
// (transformer_layers.cc).
const ENCODER_MIXERS = ['attention', 'ffn'];
const DECODER_MIXERS = ['selfAttention', 'crossAttention', 'ffn'];
const LAYER_MIXERS = { attention: 'self_attention', selfAttention: 'self_attention',
  crossAttention: 'cross_attention', ffn: 'ffn' };
const SUBLAYER_NAMES = { attention: 'the self-attention sublayer',
  selfAttention: 'the self-attention sublayer', crossAttention: 'the cross-attention sublayer',
  ffn: 'the feed-forward sublayer' };

// What the encoder and decoder share: parts, weights, the sublayers run
// here, and the synchronous errors.
class PooledLayer extends SplitObject {
  #sublayers; // createSublayers'

  constructor(context, kind, given, resolved, sublayers) {
    super(context, kind, given, resolved, sublayers.flatMap(({ part, norm }) => [part, norm]));
    this.#sublayers = sublayers;
  }

  get sublayers() { return this.#sublayers; }

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

  // Sends weights that fit to the parts: sublayer i's mixer's w[mixers[i]],
  // its norm's w[norms[i]].
  async apply(w, mixers, norms) {
    await Promise.all(this.#sublayers.flatMap(({ part, norm }, i) => [part.setWeights(w[mixers[i]]),
      norm.setWeights(w[norms[i]], norms[i])]));
    this.weightsSet();
  }

  // setWeights or setWeightsFromPyTorch (`method`) of `argument`, read by
  // `schema`, its weights convert(where, copy).
  setWeightsWith(method, argument, schema, convert, groups, mixerGroups, normGroups) {
    return this.run(method, false, [argument], [schema], async (where, args) => {
      const { w, fits } = this.setWeightsOf(where, convert(where, args[0]), groups);
      if (!fits) {
        // All or nothing: nothing is sent before the synchronous layer
        // names what it refuses.
        await this.synchronousError(where, method, args, {});
      }
      await this.apply(w, mixerGroups, normGroups);
    });
  }

}

class TransformerEncoderLayer extends PooledLayer {
  constructor(context, given, resolved, sublayers) {
    super(context, 'TransformerEncoderLayer', given, resolved, sublayers);
  }

  setWeights(weights) {
    return this.setWeightsWith('setWeights', weights, ENCODER.weights, (_, w) => w,
      ENCODER_WEIGHT_GROUPS, ENCODER_MIXERS, ['norm1', 'norm2']);
  }

  setWeightsFromPyTorch(state) {
    return this.setWeightsWith('setWeightsFromPyTorch', state, ENCODER.state,
      (where, s) => layerWeightsFromPyTorch(where, 'TransformerEncoderLayer', this.config, s),
      ENCODER_WEIGHT_GROUPS, ENCODER_MIXERS, ['norm1', 'norm2']);
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
        return runSublayers(where, x, this.sublayers, (s, h, sublayer) =>
          s.part.forward(h, undefined, undefined, { ...attention, ...sublayer }));
      });
  }
}

class TransformerDecoderLayer extends PooledLayer {
  #self;
  #cross;

  constructor(context, given, resolved, sublayers) {
    super(context, 'TransformerDecoderLayer', given, resolved, sublayers);
    [this.#self, this.#cross] = sublayers.map((s) => s.part);
  }

  setWeights(weights) {
    return this.setWeightsWith('setWeights', weights, DECODER.weights, (_, w) => w,
      DECODER_WEIGHT_GROUPS, DECODER_MIXERS, ['norm1', 'norm2', 'norm3']);
  }

  setWeightsFromPyTorch(state) {
    return this.setWeightsWith('setWeightsFromPyTorch', state, DECODER.state,
      (where, s) => layerWeightsFromPyTorch(where, 'TransformerDecoderLayer', this.config, s),
      DECODER_WEIGHT_GROUPS, DECODER_MIXERS, ['norm1', 'norm2', 'norm3']);
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

  // x through the sublayers: the self-attention by `self(h, sublayer)`,
  // the cross-attention over `kv` (a pooled PrecomputedKeyValue) with its
  // key padding.
  #sublayers(where, x, self, kv, keyPaddingMask) {
    const options = keyPaddingMask === undefined ? {} : { keyPaddingMask };
    return runSublayers(where, x, this.sublayers, (s, h, sublayer) => (s.part === this.#cross
      ? this.#cross.forward(h, kv, undefined, { ...options, ...sublayer }) : self(h, sublayer)));
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
          return await this.#sublayers(where, x, (h, sublayer) => this.#self
            .forward(h, undefined, undefined, { ...self, causal, ...sublayer }), kv, memoryMask);
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
          return await this.#sublayers(where, x, async (h, sublayer) => {
            const next = await this.#self.forwardIncremental(h, cache, { ...o, ...sublayer });
            attended = true;
            return next;
          }, kv);
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
  const encoder = kind === 'TransformerEncoderLayer';
  // The layer as a block's sublayers, named as the synchronous layer names
  // them.
  const placement = c.normFirst ? 'pre' : 'post';
  const entries = (encoder ? ENCODER_MIXERS : DECODER_MIXERS).map((group) => ({
    mixer: LAYER_MIXERS[group], placement, parallel: false, name: SUBLAYER_NAMES[group] }));
  // The decoder's cross-attention has no rotary positions (as in C++).
  const self = attentionConfig(given);
  const { rope, ...cross } = self;
  const sublayers = await createSublayers(context, c, entries,
    (split) => (split.attention.memory ? cross : self), { norm: 'layer_norm', layerForm: true });
  const Class = encoder ? TransformerEncoderLayer : TransformerDecoderLayer;
  return new Class(context, given, resolved, sublayers);
}
