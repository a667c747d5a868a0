// TinyTransformer (the training build): a token embedding with sinusoidal
// positions, causal attention layers, a projection to the vocabulary and
// softmax cross-entropy, trained by the optimizers of training.js. The
// model is C++'s (src/include/simd_attention/tiny_model.h); this file checks JS types.
import { checkObject, describe, float32, optionalBoolean, optionalSize, readBackend,
  requiredSize } from './arguments.js';
import { unwrap } from './errors.js';
import { readActivation } from './layers.js';
import { OPTION_KEYS } from './option-keys.js';
import { trainingGlue, TRAINABLE } from './training.js';
import { defineDispose, INFO, LIVE, makeWasmObjectBase, WEIGHTS_SET } from './wasm-object.js';

const LAYER_KEYS = OPTION_KEYS.TinyTransformerLayerWeights;

// Token ids { data: Int32Array, shape: [batch, tokens] or [tokens] }.
function readTokens(where, name, t) {
  if (t === null || typeof t !== 'object' || !(t.data instanceof Int32Array) ||
      !Array.isArray(t.shape) || (t.shape.length !== 1 && t.shape.length !== 2) ||
      !t.shape.every((d) => Number.isInteger(d) && d >= 0 && d <= 0xffffffff)) {
    throw new TypeError(`${where}: ${name}: expected token ids { data: Int32Array, shape: ` +
      `[batch, tokens] or [tokens] }, got ${describe(t)}`);
  }
  const [batch, tokens] = t.shape.length === 2 ? t.shape : [1, t.shape[0]];
  return { data: t.data, batch, tokens, rank: t.shape.length };
}

// A seed: an integer a double holds exactly.
function readSeed(where, name, seed) {
  if (typeof seed !== 'number') {
    throw new TypeError(`${where}: ${name}: expected an integer, got ${describe(seed)}`);
  }
  if (!Number.isSafeInteger(seed) || seed < 0) {
    throw new RangeError(`${where}: ${name}: expected an integer in [0, 2^53), got ${seed}`);
  }
  return seed;
}

function readConfig(where, config, defaultBackend) {
  checkObject(where, 'config', config, OPTION_KEYS.TinyTransformerConfig);
  const activation = readActivation(where, config.activation);
  const seed = readSeed(where, 'config.seed', config.seed ?? 0);
  return {
    vocab: requiredSize(where, 'config.vocab', config.vocab),
    dModel: requiredSize(where, 'config.dModel', config.dModel),
    numHeads: requiredSize(where, 'config.numHeads', config.numHeads),
    numLayers: requiredSize(where, 'config.numLayers', config.numLayers),
    maxTokens: requiredSize(where, 'config.maxTokens', config.maxTokens),
    ffnDim: optionalSize(where, 'config.ffnDim', config.ffnDim),
    activation,
    seed,
    backend: readBackend(where, config, defaultBackend),
  };
}

// The glue's { embedding, layers, unembedding, unembeddingBias } checked
// for types (C++ judges lengths).
function readWeights(where, w) {
  checkObject(where, 'weights', w, OPTION_KEYS.TinyTransformerWeights);
  if (!Array.isArray(w.layers)) {
    throw new TypeError(`${where}: weights.layers: expected an array, got ${describe(w.layers)}`);
  }
  return {
    embedding: float32(where, 'weights.embedding', w.embedding),
    layers: w.layers.map((layer, i) => {
      const name = `weights.layers[${i}]`;
      checkObject(where, name, layer, LAYER_KEYS);
      return Object.fromEntries(LAYER_KEYS.filter((k) => layer[k] !== undefined)
        .map((k) => [k, float32(where, `${name}.${k}`, layer[k])]));
    }),
    unembedding: float32(where, 'weights.unembedding', w.unembedding),
    unembeddingBias: float32(where, 'weights.unembeddingBias', w.unembeddingBias),
  };
}

// The TinyTransformer class of one module.
export function makeTinyTransformer(wasm, reclaimer, defaultBackend) {
  const Base = makeWasmObjectBase(wasm, reclaimer, 'TinyTransformer', 'setWeights()');
  class TinyTransformer extends Base {
    constructor(config) {
      const where = 'TinyTransformer';
      const Binding = trainingGlue(wasm, where, 'TinyModelBinding');
      super(new Binding(readConfig(where, config, defaultBackend)));
      this[WEIGHTS_SET](); // initialized from config.seed
    }

    // Logits, loss and accuracy of token ids; targets (-1: not scored)
    // make the loss; training keeps what backward() needs.
    forward(tokens, options) {
      const where = 'TinyTransformer.forward';
      const raw = super[LIVE](where);
      const t = readTokens(where, 'tokens', tokens);
      const o = options === undefined ? {} : options;
      checkObject(where, 'options', o, OPTION_KEYS.TinyForwardOptions);
      if (o.targets !== undefined && !(o.targets instanceof Int32Array)) {
        throw new TypeError(`${where}: options.targets: expected an Int32Array, got ` +
          `${describe(o.targets)}`);
      }
      const returnAttnWeights = optionalBoolean(where, 'options.returnAttnWeights',
        o.returnAttnWeights, false);
      const r = unwrap(wasm, where, raw.forward(t.data, o.targets, t.batch, t.tokens,
        optionalBoolean(where, 'options.training', o.training, false), returnAttnWeights));
      const { vocab, numHeads } = this[INFO];
      const shaped = (data, dims) => ({ data, shape: t.rank === 2 ? [t.batch, ...dims] : dims });
      return {
        loss: r.loss,
        accuracy: r.accuracy,
        counted: r.counted,
        logits: shaped(r.logits, [t.tokens, vocab]),
        ...(returnAttnWeights ? { attnWeights: r.attnWeights.map((w) =>
          shaped(w, [numHeads, t.tokens, t.tokens])) } : {}),
      };
    }

    // The gradients of the last training forward's loss, for an optimizer
    // and gradients().
    backward() {
      const where = 'TinyTransformer.backward';
      unwrap(wasm, where, super[LIVE](where).backward());
    }

    // Every weight drawn again from `seed`.
    reset(seed) {
      const where = 'TinyTransformer.reset';
      const raw = super[LIVE](where);
      unwrap(wasm, where, raw.reset(readSeed(where, 'seed', seed)));
    }

    getWeights() {
      const where = 'TinyTransformer.getWeights';
      return unwrap(wasm, where, super[LIVE](where).weights());
    }

    setWeights(weights) {
      const where = 'TinyTransformer.setWeights';
      const raw = super[LIVE](where);
      unwrap(wasm, where, raw.setWeights(readWeights(where, weights)));
    }

    gradients() {
      const where = 'TinyTransformer.gradients';
      return unwrap(wasm, where, super[LIVE](where).gradients());
    }

    [TRAINABLE](where) {
      return { raw: super[LIVE](where), step: 'stepTinyModel' };
    }
  }
  defineDispose(TinyTransformer);
  return TinyTransformer;
}
