// TransformerEncoderLayer and TransformerDecoderLayer (torch.nn's, batch
// first, dropout 0) on the shared wasm-object base.
import { checkObject, describe, float32, glueMatrix, optionalBoolean, optionalMask, optionalSize,
  optionsObject, readBackend, readEps, readStorageType, readThreads, requiredSize,
  weightMatrix } from './arguments.js';
import { readCausal, readRope, readSharedAttentionOptions } from './attention.js';
import { holdsKeyValues, kvRaw, readCacheOptions } from './caches.js';
import { unwrap } from './errors.js';
import { DECODER_WEIGHT_GROUPS, ENCODER_WEIGHT_GROUPS, OPTION_KEYS, WEIGHT_MATRICES }
  from './option-keys.js';
import { layerWeightsFromPyTorch } from './pytorch-layer-state.js';
import { readTensor } from './tensors.js';
import { runBackward, TRAINABLE } from './training.js';
import { defineDispose, LIVE, makeWasmObjectBase, READY, WEIGHTS_SET } from './wasm-object.js';

// config.activation, default 'relu' (a layer's FFN, the tiny model's); its
// name is C++'s to judge (kActivations in activation.h).
export function readActivation(where, v) {
  const activation = v === undefined ? 'relu' : v;
  if (typeof activation !== 'string') {
    throw new TypeError(`${where}: config.activation: expected a string, got ` +
      `${describe(activation)}`);
  }
  return activation;
}

// The given fields, types checked; an omitted one stays undefined, which
// the glue leaves at C++'s default (LayerConfig in transformer_layers.h).
// The backend and threads are the module's unless given.
function readLayerConfig(where, config, defaultBackend) {
  checkObject(where, 'config', config, OPTION_KEYS.TransformerLayerConfig);
  const given = (key, read) => (config[key] === undefined ? undefined : read(config[key]));
  return {
    dModel: requiredSize(where, 'config.dModel', config.dModel),
    numHeads: requiredSize(where, 'config.numHeads', config.numHeads),
    ffnDim: requiredSize(where, 'config.ffnDim', config.ffnDim),
    normFirst: given('normFirst', (v) => optionalBoolean(where, 'config.normFirst', v)),
    activation: given('activation', (v) => readActivation(where, v)),
    eps: given('eps', (v) => readEps(where, 'config.eps', v)),
    backend: readBackend(where, config, defaultBackend),
    threads: readThreads(where, config.threads),
    numKvHeads: given('numKvHeads', (v) => optionalSize(where, 'config.numKvHeads', v)),
    rope: readRope(where, config.rope),
    weights: given('weights', () => readStorageType(where, config, 'weights')),
    cacheType: given('cacheType', () => readStorageType(where, config, 'cacheType')),
  };
}

// { group: { key: Float32Array } } with every key of every group required;
// the matrices may also come in config.weights' type (weightMatrix).
export function readLayerWeights(where, weights, groups) {
  const names = Object.keys(groups);
  checkObject(where, 'weights', weights, names);
  const out = {};
  for (const group of names) {
    if (weights[group] === undefined) {
      throw new TypeError(`${where}: ${group}: expected an object { ${groups[group].join(', ')} }, ` +
        'got undefined');
    }
    checkObject(where, group, weights[group], groups[group]);
    out[group] = {};
    for (const key of groups[group]) {
      const check = WEIGHT_MATRICES.includes(key) ? weightMatrix : float32;
      out[group][key] = check(where, `${group}.${key}`, weights[group][key]);
    }
  }
  return out;
}

// { group: { key: array } } as the glue copies it (glueMatrix).
export function glueLayerWeights(w) {
  return Object.fromEntries(Object.entries(w).map(([group, keys]) => [group,
    Object.fromEntries(Object.entries(keys).map(([k, v]) => [k, glueMatrix(v)]))]));
}

// The layers' weights and construction on top of the shared base.
function makeLayerBase(wasm, reclaimer, defaultBackend, kind, Binding, groups) {
  return class LayerBase extends makeWasmObjectBase(wasm, reclaimer, kind,
    'setWeights() or setWeightsFromPyTorch()') {
    constructor(config) {
      const resolved = readLayerConfig(kind, config, defaultBackend);
      // eps as given (C++ holds it as a float32).
      super(new Binding(resolved), resolved.eps === undefined ? {} : { eps: resolved.eps });
    }

    setWeights(weights) {
      const where = `${kind}.setWeights`;
      const raw = super[LIVE](where);
      const w = readLayerWeights(where, weights, groups);
      // All or nothing (C++): after an error the layer keeps its old weights.
      unwrap(wasm, where, raw.setWeights(glueLayerWeights(w)));
      this[WEIGHTS_SET]();
    }

    // An nn.TransformerEncoderLayer / TransformerDecoderLayer state_dict.
    setWeightsFromPyTorch(state) {
      const where = `${kind}.setWeightsFromPyTorch`;
      const raw = super[LIVE](where);
      const w = layerWeightsFromPyTorch(where, kind, this.config, state);
      unwrap(wasm, where, raw.setWeights(glueLayerWeights(w)));
      this[WEIGHTS_SET]();
    }
  };
}

// The TransformerEncoderLayer class of one module (wasm instance).
export function makeEncoderLayer(wasm, reclaimer, defaultBackend) {
  const Base = makeLayerBase(wasm, reclaimer, defaultBackend, 'TransformerEncoderLayer',
    wasm.EncoderLayerBinding, ENCODER_WEIGHT_GROUPS);
  class TransformerEncoderLayer extends Base {
    forward(x, options) {
      const where = 'TransformerEncoderLayer.forward';
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const { dModel } = this.config;
      const o = optionsObject(where, options, OPTION_KEYS.EncoderForwardOptions);
      const data = unwrap(wasm, where, raw.forward(t, {
        ...readSharedAttentionOptions(where, o),
        causal: readCausal(where, o.causal),
        training: optionalBoolean(where, 'options.training', o.training, false),
      }));
      return { data, shape: t.rank === 3 ? [t.batch, t.tokens, dModel] : [t.tokens, dModel] };
    }

    // The gradients of the last forward, a training one, given dOutput.
    backward(dOutput) {
      const where = 'TransformerEncoderLayer.backward';
      const raw = super[READY](where);
      return runBackward(wasm, where, 'encoderBackward', raw, dOutput, (g, tensor) =>
        ({ ...g, dInput: tensor(g.dInput, this.config.dModel) }));
    }

    [TRAINABLE](where) {
      return { raw: super[READY](where), step: 'stepEncoder' };
    }
  }
  return defineDispose(TransformerEncoderLayer);
}

// The TransformerDecoderLayer class of one module (wasm instance).
export function makeDecoderLayer(wasm, reclaimer, defaultBackend, kv) {
  const Base = makeLayerBase(wasm, reclaimer, defaultBackend, 'TransformerDecoderLayer',
    wasm.DecoderLayerBinding, DECODER_WEIGHT_GROUPS);

  // memory: a Tensor or a PrecomputedKeyValue.
  function readMemory(where, memory) {
    return holdsKeyValues(memory)
      ? { precomputed: kvRaw(wasm, where, 'memory', memory, 'PrecomputedKeyValue') }
      : { tensor: readTensor(where, 'memory', memory) };
  }

  class TransformerDecoderLayer extends Base {
    forward(x, memory, options) {
      const where = 'TransformerDecoderLayer.forward';
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const { dModel } = this.config;
      const m = readMemory(where, memory);
      const o = optionsObject(where, options, OPTION_KEYS.DecoderForwardOptions);
      const opts = {
        ...readSharedAttentionOptions(where, o),
        causal: readCausal(where, o.causal, true),
        memoryKeyPaddingMask: optionalMask(where, 'options.memoryKeyPaddingMask',
          o.memoryKeyPaddingMask),
        training: optionalBoolean(where, 'options.training', o.training, false),
      };
      const data = unwrap(wasm, where, m.precomputed
        ? raw.forwardPrecomputed(t, m.precomputed, opts)
        : raw.forward(t, m.tensor, opts));
      return { data, shape: t.rank === 3 ? [t.batch, t.tokens, dModel] : [t.tokens, dModel] };
    }

    // The gradients of the last forward, a training one, given dOutput.
    backward(dOutput) {
      const where = 'TransformerDecoderLayer.backward';
      const raw = super[READY](where);
      const { dModel } = this.config;
      return runBackward(wasm, where, 'decoderBackward', raw, dOutput, (g, tensor) =>
        ({ ...g, dInput: tensor(g.dInput, dModel), dMemory: tensor(g.dMemory, dModel) }));
    }

    [TRAINABLE](where) {
      return { raw: super[READY](where), step: 'stepDecoder' };
    }

    forwardIncremental(x, cache, memory, options) {
      const where = 'TransformerDecoderLayer.forwardIncremental';
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const o = optionsObject(where, options, OPTION_KEYS.SelfAttentionOptions);
      const self = readSharedAttentionOptions(where, o);
      const { dModel } = this.config;
      const rawCache = kvRaw(wasm, where, 'cache', cache, 'KVCache');
      const m = readMemory(where, memory);
      // A memory tensor is projected for this call only (its errors named
      // after this method).
      const temporary = m.precomputed ? null : kv.precompute(where, memory, undefined,
        raw.precomputeMemory);
      try {
        const precomputed = m.precomputed ??
          kvRaw(wasm, where, 'memory', temporary, 'PrecomputedKeyValue');
        const data = unwrap(wasm, where, raw.forwardIncremental(t, rawCache, precomputed, self));
        return { data, shape: t.rank === 3 ? [t.batch, t.tokens, dModel] : [t.tokens, dModel] };
      } finally {
        temporary?.dispose();
      }
    }

    createKVCache(options) {
      const where = 'TransformerDecoderLayer.createKVCache';
      const raw = super[LIVE](where);
      const { batch, maxLength } = readCacheOptions(where, options);
      const { numKvHeads, headDim } = this.config;
      return kv.newCache(where, numKvHeads * headDim, numKvHeads * headDim,
        (into) => raw.createKVCache(into, batch, maxLength));
    }

    precomputeMemory(memory, options) {
      const where = 'TransformerDecoderLayer.precomputeMemory';
      return kv.precompute(where, memory, options, super[READY](where).precomputeMemory);
    }
  }
  return defineDispose(TransformerDecoderLayer);
}
