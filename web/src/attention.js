// MultiHeadAttention: self- and cross-attention, incremental decoding over a
// KVCache, cross-attention over a PrecomputedKeyValue.
import { additiveValues, booleanValues, checkObject, describe, float32, glueMatrix, integers,
  optionalBoolean, optionalLengths, optionalMask, optionalNumber, optionalSize, optionsObject,
  readBackend, readQueryOffset, readReturnScores, readStorageType, readThreads, requiredSize,
  shapedMask, torchMatrix, weightMatrix } from './arguments.js';
import { holdsKeyValues, kvRaw, readCacheOptions } from './caches.js';
import { unwrap } from './errors.js';
import { OPTION_KEYS } from './option-keys.js';
import { readTensor } from './tensors.js';
import { runBackward, TRAINABLE } from './training.js';
import { defineDispose, INFO, LIVE, makeWasmObjectBase, READY, WEIGHTS_SET }
  from './wasm-object.js';

// The options every attention call takes (its window, scale, soft-cap,
// masks and valid lengths; JsAttentionOptions in bindings/glue.cc reads
// them), types checked, under the user's names.
export function readSharedAttentionOptions(where, o) {
  const attnMask = shapedMask(where, 'options.attnMask', o.attnMask, additiveValues);
  const boolMask = shapedMask(where, 'options.boolMask', o.boolMask, booleanValues);
  return {
    keyPaddingMask: optionalMask(where, 'options.keyPaddingMask', o.keyPaddingMask),
    kvLengths: optionalLengths(where, 'options.kvLengths', o.kvLengths),
    attnMask: attnMask.data,
    attnMaskShape: attnMask.shape,
    boolMask: boolMask.data,
    boolMaskShape: boolMask.shape,
    window: o.window === undefined ? undefined : integers(where, 'options.window', o.window, 2),
    scale: optionalNumber(where, 'options.scale', o.scale),
    softcap: optionalNumber(where, 'options.softcap', o.softcap),
  };
}

// Attention options, types checked and defaults filled in, under the
// user's names (JsForwardOptions in bindings/glue.h reads them). None
// given: undefined, for which C++ keeps its defaults without reading a
// property (a decoding step's call costs a few microseconds less).
function readAttentionOptions(where, options, allowed) {
  if (options === undefined) return undefined;
  const o = optionsObject(where, options, allowed);
  return {
    ...readSharedAttentionOptions(where, o),
    causal: readCausal(where, o.causal),
    queryOffset: readQueryOffset(where, o.queryOffset),
    returnAttnWeights: optionalBoolean(where, 'options.returnAttnWeights',
      o.returnAttnWeights, false),
    ...readReturnScores(where, o.returnScores),
    returnPerHeadOutput: optionalBoolean(where, 'options.returnPerHeadOutput',
      o.returnPerHeadOutput, false),
    returnIntermediates: optionalBoolean(where, 'options.returnIntermediates',
      o.returnIntermediates, false),
    positionOffset: optionalSize(where, 'options.positionOffset', o.positionOffset),
    training: optionalBoolean(where, 'options.training', o.training, false),
  };
}

// options.causal of MultiHeadAttention, attention() and the layers: a
// boolean (true = bottom-right) or an alignment's name, whose value C++
// judges; `fallback` when omitted.
export function readCausal(where, v, fallback = false) {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean' && typeof v !== 'string') {
    throw new TypeError(`${where}: options.causal: expected a boolean or 'none', 'top-left' ` +
      `or 'bottom-right', got ${describe(v)}`);
  }
  return v;
}

// config.rope: { style: 'half' | 'interleaved', base?, rotaryDim? }.
export function readRope(where, rope) {
  if (rope === undefined) return undefined;
  checkObject(where, 'config.rope', rope, OPTION_KEYS.RopeConfig);
  if (rope.style !== 'half' && rope.style !== 'interleaved') {
    throw new TypeError(`${where}: config.rope.style: expected 'half' or 'interleaved', got ` +
      `${describe(rope.style)}`);
  }
  return {
    style: rope.style,
    base: optionalNumber(where, 'config.rope.base', rope.base) ?? 10000,
    rotaryDim: optionalSize(where, 'config.rope.rotaryDim', rope.rotaryDim),
  };
}

// config.qkNorm: { kind?, eps? } (the kind's name is C++'s to judge).
export function readQkNorm(where, v) {
  if (v === undefined) return undefined;
  checkObject(where, 'config.qkNorm', v, OPTION_KEYS.QkNormConfig);
  if (v.kind !== undefined && typeof v.kind !== 'string') {
    throw new TypeError(`${where}: config.qkNorm.kind: expected a string, got ${describe(v.kind)}`);
  }
  return { kind: v.kind, eps: optionalNumber(where, 'config.qkNorm.eps', v.eps) };
}

// The glue's result -> ForwardResult; unbatched shapes for a 2-D query.
// info: the resolved config (numHeads, numKvHeads, dModel, headDim, headDimV).
function attentionResult(r, rank, info) {
  const { numHeads: heads, numKvHeads: kvHeads, dModel, headDim, headDimV } = info;
  const batched = (dims) => (rank === 3 ? [r.batch, ...dims] : dims);
  const out = { output: { data: r.output, shape: batched([r.tq, dModel]) } };
  if (r.attnWeights) out.attnWeights = { data: r.attnWeights, shape: batched([heads, r.tq, r.tk]) };
  if (r.scores) out.scores = { data: r.scores, shape: batched([heads, r.tq, r.tk]) };
  if (r.perHeadOutput) {
    out.perHeadOutput = { data: r.perHeadOutput, shape: batched([heads, r.tq, dModel]) };
  }
  if (r.q) {
    out.q = { data: r.q, shape: batched([heads, r.tq, headDim]) };
    out.k = { data: r.k, shape: batched([kvHeads, r.tk, headDim]) };
    out.v = { data: r.v, shape: batched([kvHeads, r.tk, headDimV]) };
    out.headOutput = { data: r.headOutput, shape: batched([heads, r.tq, headDimV]) };
  }
  return out;
}

const WEIGHT_KEYS = OPTION_KEYS.MultiHeadAttentionWeights;
const TORCH_KEYS = OPTION_KEYS.PyTorchMultiheadAttentionState;

// The MultiHeadAttention class of one module (wasm instance).
export function makeMultiHeadAttention(wasm, reclaimer, defaultBackend, kv) {
  const Base = makeWasmObjectBase(wasm, reclaimer, 'MultiHeadAttention',
    'setWeights() or setWeightsFromPyTorch()');
  class MultiHeadAttention extends Base {
    constructor(config) {
      const where = 'MultiHeadAttention';
      checkObject(where, 'config', config, OPTION_KEYS.MultiHeadAttentionConfig);
      const backend = readBackend(where, config, defaultBackend);
      const raw = new wasm.MhaBinding({
        dModel: requiredSize(where, 'config.dModel', config.dModel),
        numHeads: requiredSize(where, 'config.numHeads', config.numHeads),
        kDim: optionalSize(where, 'config.kDim', config.kDim),
        vDim: optionalSize(where, 'config.vDim', config.vDim),
        headDim: optionalSize(where, 'config.headDim', config.headDim),
        headDimV: optionalSize(where, 'config.headDimV', config.headDimV),
        numKvHeads: optionalSize(where, 'config.numKvHeads', config.numKvHeads),
        rope: readRope(where, config.rope),
        qkNorm: readQkNorm(where, config.qkNorm),
        bias: optionalBoolean(where, 'config.bias', config.bias, true),
        backend,
        threads: readThreads(where, config.threads),
        weights: readStorageType(where, config, 'weights'),
        cacheType: readStorageType(where, config, 'cacheType'),
      });
      super(raw);
    }

    setWeights(weights) {
      const where = 'MultiHeadAttention.setWeights';
      const raw = super[LIVE](where);
      checkObject(where, 'weights', weights, WEIGHT_KEYS);
      const { bias } = this[INFO];
      const w = {};
      for (const key of WEIGHT_KEYS) {
        // QK-norm's scales: C++ says whether the config needs them.
        if (key === 'qNorm' || key === 'kNorm') {
          w[key] = float32(where, key, weights[key], true);
          continue;
        }
        const isBias = key.startsWith('b');
        if (isBias && bias && weights[key] === undefined) {
          throw new TypeError(`${where}: ${key}: expected a Float32Array (config.bias ` +
            'is true), got undefined');
        }
        w[key] = isBias ? float32(where, key, weights[key], true)
          : glueMatrix(weightMatrix(where, key, weights[key]));
      }
      unwrap(wasm, where, raw.setWeights(w));
      this[WEIGHTS_SET]();
    }

    setWeightsFromPyTorch(state) {
      const where = 'MultiHeadAttention.setWeightsFromPyTorch';
      const raw = super[LIVE](where);
      checkObject(where, 'state', state);
      for (const key of Object.keys(state)) {
        if (key === 'bias_k' || key === 'bias_v') {
          throw new RangeError(`${where}: ${key}: add_bias_kv=True is not supported`);
        }
        if (!TORCH_KEYS.includes(key)) {
          throw new TypeError(`${where}: state: unknown key '${key}' (expected the ` +
            `nn.MultiheadAttention state_dict names: ${TORCH_KEYS.join(', ')})`);
        }
      }
      for (const [a, b] of [['out_proj_weight', 'out_proj.weight'], ['out_proj_bias', 'out_proj.bias']]) {
        if (state[a] !== undefined && state[b] !== undefined) {
          throw new TypeError(`${where}: state: both '${a}' and '${b}' given; pass one`);
        }
      }
      const s = {};
      for (const key of TORCH_KEYS) {
        if (state[key] === undefined) continue;
        s[key.replace('.', '_')] = key.includes('bias') ? float32(where, key, state[key])
          : glueMatrix(torchMatrix(where, key, state[key]));
      }
      unwrap(wasm, where, raw.setWeightsFromPyTorch(s));
      this[WEIGHTS_SET]();
    }

    forward(query, key, value, options) {
      const where = 'MultiHeadAttention.forward';
      const raw = super[READY](where);
      const q = readTensor(where, 'query', query);
      // Cross-attention on K/V projected once by precomputeKeyValue.
      if (holdsKeyValues(key)) {
        const kvRawHandle = kvRaw(wasm, where, 'key', key, 'PrecomputedKeyValue');
        if (value !== undefined && value !== null) {
          throw new TypeError(`${where}: value given with precomputed keys/values; ` +
            'omit it (the PrecomputedKeyValue holds both)');
        }
        const o = readAttentionOptions(where, options, OPTION_KEYS.ForwardOptions);
        const r = unwrap(wasm, where, raw.forwardPrecomputed(q, kvRawHandle, o));
        return attentionResult(r, q.rank, this[INFO]);
      }
      // The same tensor as key (or value) is copied once, not twice.
      const selfAttention = key === undefined || key === null || key === query;
      const k = selfAttention ? undefined : readTensor(where, 'key', key);
      if (selfAttention && value !== undefined && value !== null && value !== query) {
        throw new TypeError(`${where}: value given without key; pass key too ` +
          '(value omitted means value = key)');
      }
      const v = selfAttention || value === undefined || value === null || value === key
        ? undefined : readTensor(where, 'value', value);
      const o = readAttentionOptions(where, options, OPTION_KEYS.ForwardOptions);
      const r = unwrap(wasm, where, raw.forward(q, k, v, o));
      return attentionResult(r, q.rank, this[INFO]);
    }

    // The gradients of the last forward, a training one, given dOutput.
    backward(dOutput) {
      const where = 'MultiHeadAttention.backward';
      const raw = super[READY](where);
      const { dModel, kDim, vDim } = this[INFO];
      return runBackward(wasm, where, 'mhaBackward', raw, dOutput, (g, tensor) => ({
        ...g,
        dQuery: tensor(g.dQuery, dModel),
        dKey: tensor(g.dKey, kDim),
        dValue: tensor(g.dValue, vDim),
        ...(g.dInput ? { dInput: tensor(g.dInput, dModel) } : {}),
      }));
    }

    [TRAINABLE](where) {
      return { raw: super[READY](where), step: 'stepAttention' };
    }

    createKVCache(options) {
      const where = 'MultiHeadAttention.createKVCache';
      const raw = super[LIVE](where);
      const { batch, maxLength } = readCacheOptions(where, options);
      const { numKvHeads, headDim, headDimV } = this[INFO];
      return kv.newCache(where, numKvHeads * headDim, numKvHeads * headDimV,
        (into) => raw.createKVCache(into, batch, maxLength));
    }

    forwardIncremental(x, cache, options) {
      const where = 'MultiHeadAttention.forwardIncremental';
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const rawCache = kvRaw(wasm, where, 'cache', cache, 'KVCache');
      const o = readAttentionOptions(where, options, OPTION_KEYS.IncrementalForwardOptions);
      const r = unwrap(wasm, where, raw.forwardIncremental(t, rawCache, o));
      return attentionResult(r, t.rank, this[INFO]);
    }

    precomputeKeyValue(memory, options) {
      const where = 'MultiHeadAttention.precomputeKeyValue';
      return kv.precompute(where, memory, options, super[READY](where).precomputeKeyValue);
    }
  }
  return defineDispose(MultiHeadAttention);
}
