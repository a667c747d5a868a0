// TransformerBlock (a layer as an ordered list of sublayers: Llama's,
// Gemma 2's, GPT-J's, an encoder's or a decoder's) and TransformerStack (N
// blocks with a KV cache per layer), each trained in the training build,
// on the shared wasm-object base. JS
// checks types; the names of mixers, norms and activations and every value
// are C++'s to judge (bindings/block_binding.cc).
import { checkObject, describe, float32, glueMatrix, optionalBoolean, optionalMask, optionalSize,
  optionsObject, readBackend, readEps, readStorageType, readThreads, requiredSize,
  weightMatrix } from './arguments.js';
import { readCausal, readQkNorm, readRope, readSharedAttentionOptions } from './attention.js';
import { kvRaw, readCacheOptions } from './caches.js';
import { unwrap } from './errors.js';
import { OPTION_KEYS } from './option-keys.js';
import { readTensor } from './tensors.js';
import { runBackward, TRAINABLE } from './training.js';
import { defineDispose, LIVE, makeWasmObjectBase, READY, WEIGHTS_SET } from './wasm-object.js';

const optionalString = (where, name, v) => {
  if (v !== undefined && typeof v !== 'string') {
    throw new TypeError(`${where}: ${name}: expected a string, got ${describe(v)}`);
  }
  return v;
};

function readSublayers(where, list) {
  if (!Array.isArray(list)) {
    throw new TypeError(`${where}: config.sublayers: expected an array of { mixer, norm?, ` +
      `parallel? }, got ${describe(list)}`);
  }
  return list.map((s, i) => {
    const at = `config.sublayers[${i}]`;
    checkObject(where, at, s, OPTION_KEYS.SublayerConfig);
    if (typeof s.mixer !== 'string') {
      throw new TypeError(`${where}: ${at}.mixer: expected a string, got ${describe(s.mixer)}`);
    }
    return { mixer: s.mixer, norm: optionalString(where, `${at}.norm`, s.norm),
      parallel: optionalBoolean(where, `${at}.parallel`, s.parallel, false) };
  });
}

// The given fields, types checked; omitted ones stay undefined (C++'s
// defaults, BlockConfig in transformer_block.h).
function readBlockConfig(where, config, defaultBackend, keys) {
  checkObject(where, 'config', config, keys);
  const given = (key, read) => (config[key] === undefined ? undefined : read(config[key]));
  return {
    dModel: requiredSize(where, 'config.dModel', config.dModel),
    numHeads: requiredSize(where, 'config.numHeads', config.numHeads),
    numKvHeads: given('numKvHeads', (v) => optionalSize(where, 'config.numKvHeads', v)),
    headDim: given('headDim', (v) => optionalSize(where, 'config.headDim', v)),
    ffnDim: given('ffnDim', (v) => optionalSize(where, 'config.ffnDim', v)),
    numExperts: given('numExperts', (v) => optionalSize(where, 'config.numExperts', v)),
    expertsPerToken: given('expertsPerToken',
      (v) => optionalSize(where, 'config.expertsPerToken', v)),
    normalizeTopK: given('normalizeTopK',
      (v) => optionalBoolean(where, 'config.normalizeTopK', v, true)),
    activation: optionalString(where, 'config.activation', config.activation),
    norm: optionalString(where, 'config.norm', config.norm),
    eps: given('eps', (v) => readEps(where, 'config.eps', v)),
    rope: readRope(where, config.rope),
    qkNorm: readQkNorm(where, config.qkNorm),
    sublayers: readSublayers(where, config.sublayers),
    backend: readBackend(where, config, defaultBackend),
    threads: readThreads(where, config.threads),
    weights: given('weights', () => readStorageType(where, config, 'weights')),
    cacheType: given('cacheType', () => readStorageType(where, config, 'cacheType')),
  };
}

// A group of weights: matrices may come in config.weights' type, the rest
// are Float32Arrays; every key optional here (C++ says which it needs).
function readGroup(where, name, v, keys, matrices) {
  if (v === undefined) return undefined;
  checkObject(where, name, v, keys);
  const out = {};
  for (const key of keys) {
    if (v[key] === undefined) continue;
    out[key] = matrices.includes(key) ? glueMatrix(weightMatrix(where, `${name}.${key}`, v[key]))
      : float32(where, `${name}.${key}`, v[key]);
  }
  return out;
}

const MATRICES = ['wQ', 'wK', 'wV', 'wO', 'w1', 'w2', 'wGate', 'wUp', 'wDown'];

// A mixture of experts' weights: { router, experts: [gated FFN weights] }.
function readMoe(where, name, v) {
  if (v === undefined) return undefined;
  checkObject(where, name, v, OPTION_KEYS.MixtureOfExpertsWeights);
  if (!Array.isArray(v.experts)) {
    throw new TypeError(`${where}: ${name}.experts: expected an array (one gated FFN's ` +
      `weights per expert), got ${describe(v.experts)}`);
  }
  return {
    router: v.router === undefined ? undefined : float32(where, `${name}.router`, v.router),
    experts: v.experts.map((e, i) => readGroup(where, `${name}.experts[${i}]`, e,
      OPTION_KEYS.GatedFeedForwardWeights, MATRICES) ?? {}),
  };
}

// { sublayers: [{ norm, outputNorm?, attention?, ffn?, gatedFfn?, moe? }] }
function readBlockWeights(where, name, w) {
  checkObject(where, name, w, OPTION_KEYS.TransformerBlockWeights);
  if (!Array.isArray(w.sublayers)) {
    throw new TypeError(`${where}: ${name}.sublayers: expected an array (one entry per ` +
      `sublayer), got ${describe(w.sublayers)}`);
  }
  return {
    sublayers: w.sublayers.map((s, i) => {
      const at = `${name}.sublayers[${i}]`;
      checkObject(where, at, s, OPTION_KEYS.SublayerWeights);
      const group = (key, keys) => readGroup(where, `${at}.${key}`, s[key], keys, MATRICES);
      return {
        norm: group('norm', OPTION_KEYS.BlockNormWeights) ?? {},
        outputNorm: group('outputNorm', OPTION_KEYS.BlockNormWeights),
        attention: group('attention', OPTION_KEYS.MultiHeadAttentionWeights),
        ffn: group('ffn', OPTION_KEYS.FeedForwardWeights),
        gatedFfn: group('gatedFfn', OPTION_KEYS.GatedFeedForwardWeights),
        moe: readMoe(where, `${at}.moe`, s.moe),
      };
    }),
  };
}

export function readBlockForwardOptions(where, options, keys) {
  const o = optionsObject(where, options, keys);
  return {
    ...readSharedAttentionOptions(where, o),
    causal: readCausal(where, o.causal),
    memoryKeyPaddingMask: optionalMask(where, 'options.memoryKeyPaddingMask',
      o.memoryKeyPaddingMask),
    positionOffset: optionalSize(where, 'options.positionOffset', o.positionOffset) ?? 0,
    training: optionalBoolean(where, 'options.training', o.training, false),
  };
}

// Whether forward(x, memoryOrOptions, maybeOptions) was given a memory.
export function givesMemory(memoryOrOptions, maybeOptions) {
  return maybeOptions !== undefined || (memoryOrOptions !== undefined &&
    (ArrayBuffer.isView(memoryOrOptions) || ArrayBuffer.isView(memoryOrOptions?.data)));
}

export function readIncrementalOptions(where, options) {
  const o = optionsObject(where, options, OPTION_KEYS.SelfAttentionOptions);
  return readSharedAttentionOptions(where, o);
}

const shaped = (t, data, dModel) => ({ data,
  shape: t.rank === 3 ? [t.batch, t.tokens, dModel] : [t.tokens, dModel] });

// What TransformerBlock and TransformerStack share on the wasm-object base:
// a `Binding` made from the config, read with the fields `more(config)`
// adds (OPTION_KEYS[`${kind}Config`] its keys), and training through the
// training glue's `backward` and optimizer `step` functions.
function makeBlockBase(wasm, reclaimer, defaultBackend, kind, Binding, more, training) {
  return class BlockBase extends makeWasmObjectBase(wasm, reclaimer, kind, 'setWeights()') {
    constructor(config) {
      const resolved = readBlockConfig(kind, config, defaultBackend, OPTION_KEYS[`${kind}Config`]);
      // eps as given (C++ holds it as a float32).
      super(new Binding({ ...resolved, ...more(config) }),
        resolved.eps === undefined ? {} : { eps: resolved.eps });
    }

    // The gradients of the last forward, a training one, given dOutput.
    backward(dOutput) {
      const where = `${kind}.backward`;
      const raw = super[READY](where);
      const { dModel } = this.config;
      return runBackward(wasm, where, training.backward, raw, dOutput, (g, tensor) => ({
        ...g,
        dInput: tensor(g.dInput, dModel),
        ...(g.dMemory ? { dMemory: tensor(g.dMemory, dModel) } : {}),
      }));
    }

    [TRAINABLE](where) {
      return { raw: super[READY](where), step: training.step };
    }
  };
}

// The TransformerBlock class of one module (wasm instance).
export function makeTransformerBlock(wasm, reclaimer, defaultBackend, kv) {
  const kind = 'TransformerBlock';
  const Base = makeBlockBase(wasm, reclaimer, defaultBackend, kind, wasm.BlockBinding, () => ({}),
    { backward: 'blockBackward', step: 'stepBlock' });
  class TransformerBlock extends Base {
    setWeights(weights) {
      const where = `${kind}.setWeights`;
      const raw = super[LIVE](where);
      unwrap(wasm, where, raw.setWeights(readBlockWeights(where, 'weights', weights)));
      this[WEIGHTS_SET]();
    }

    // memory: [B, S, dModel] for a block with a cross_attention sublayer.
    forward(x, memoryOrOptions, maybeOptions) {
      const where = `${kind}.forward`;
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const hasMemory = givesMemory(memoryOrOptions, maybeOptions);
      const memory = hasMemory ? readTensor(where, 'memory', memoryOrOptions) : undefined;
      const o = readBlockForwardOptions(where, hasMemory ? maybeOptions : memoryOrOptions,
        OPTION_KEYS.BlockTrainingForwardOptions);
      return shaped(t, unwrap(wasm, where, raw.forward(t, memory, o)), this.config.dModel);
    }

    createKVCache(options) {
      const where = `${kind}.createKVCache`;
      const raw = super[LIVE](where);
      const { batch, maxLength } = readCacheOptions(where, options);
      const { numKvHeads, headDim } = this.config;
      return kv.newCache(where, numKvHeads * headDim, numKvHeads * headDim,
        (into) => raw.createKVCache(into, batch, maxLength));
    }

    forwardIncremental(x, cache, options) {
      const where = `${kind}.forwardIncremental`;
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const rawCache = kvRaw(wasm, where, 'cache', cache, 'KVCache');
      const o = readIncrementalOptions(where, options);
      return shaped(t, unwrap(wasm, where, raw.forwardIncremental(t, rawCache, o)),
        this.config.dModel);
    }
  }
  return defineDispose(TransformerBlock);
}

// A stack's caches: an array of one per layer (their types are the
// caller's to check).
export function readCaches(where, caches, numLayers) {
  if (!Array.isArray(caches) || caches.length !== numLayers) {
    throw new TypeError(`${where}: caches: expected an array of ${numLayers} KVCache ` +
      `(createKVCaches()), got ${describe(caches)}`);
  }
}

// The TransformerStack class of one module (wasm instance).
export function makeTransformerStack(wasm, reclaimer, defaultBackend, kv) {
  const kind = 'TransformerStack';
  const Base = makeBlockBase(wasm, reclaimer, defaultBackend, kind, wasm.StackBinding, (config) => {
    const windows = config.layerWindows;
    if (windows !== undefined && !Array.isArray(windows)) {
      throw new TypeError(`${kind}: config.layerWindows: expected an array of [left, right] ` +
        `(one per layer), got ${describe(windows)}`);
    }
    return {
      numLayers: requiredSize(kind, 'config.numLayers', config.numLayers),
      finalNorm: optionalBoolean(kind, 'config.finalNorm', config.finalNorm, false),
      layerWindows: windows,
    };
  }, { backward: 'stackBackward', step: 'stepStack' });
  class TransformerStack extends Base {

    // { layers: [{ sublayers }], finalNorm?: { gamma, beta? } }
    setWeights(weights) {
      const where = `${kind}.setWeights`;
      const raw = super[LIVE](where);
      checkObject(where, 'weights', weights, OPTION_KEYS.TransformerStackWeights);
      if (!Array.isArray(weights.layers)) {
        throw new TypeError(`${where}: weights.layers: expected an array (one entry per ` +
          `layer), got ${describe(weights.layers)}`);
      }
      unwrap(wasm, where, raw.setWeights({
        layers: weights.layers.map((l, i) => readBlockWeights(where, `weights.layers[${i}]`, l)),
        finalNorm: readGroup(where, 'weights.finalNorm', weights.finalNorm,
          OPTION_KEYS.BlockNormWeights, []),
      }));
      this[WEIGHTS_SET]();
    }

    forward(x, options) {
      const where = `${kind}.forward`;
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const o = readBlockForwardOptions(where, options, OPTION_KEYS.StackTrainingForwardOptions);
      return shaped(t, unwrap(wasm, where, raw.forward(t, o)), this.config.dModel);
    }

    // One KVCache per layer, in order.
    createKVCaches(options) {
      const where = `${kind}.createKVCaches`;
      const raw = super[LIVE](where);
      const { batch, maxLength } = readCacheOptions(where, options);
      const { numKvHeads, headDim, numLayers } = this.config;
      const width = numKvHeads * headDim;
      const made = [];
      // Each cache made empty, then all filled in one call.
      const empties = Array.from({ length: numLayers }, () => new wasm.KVCacheBinding());
      try {
        unwrap(wasm, where, raw.createKVCaches(empties, batch, maxLength));
        for (const e of empties) made.push(kv.adoptCache(where, e, width, width));
      } catch (error) {
        for (const e of empties.slice(made.length)) e.delete();
        for (const c of made) c.dispose();
        throw error;
      }
      return made;
    }

    forwardIncremental(x, caches, options) {
      const where = `${kind}.forwardIncremental`;
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      readCaches(where, caches, this.config.numLayers);
      const raws = caches.map((c, i) => kvRaw(wasm, where, `caches[${i}]`, c, 'KVCache'));
      const o = readIncrementalOptions(where, options);
      return shaped(t, unwrap(wasm, where, raw.forwardIncremental(t, raws, o)),
        this.config.dModel);
    }
  }
  return defineDispose(TransformerStack);
}
