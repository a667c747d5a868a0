// Keys and values kept between calls: KVCache (autoregressive
// self-attention) and PrecomputedKeyValue (an encoder memory projected once),
// and the options of the methods that make them.
import { checkObject, describe, optionalMask, optionalSize, optionsObject,
  requiredSize } from './arguments.js';
import { unwrap } from './errors.js';
import { OPTION_KEYS } from './option-keys.js';
import { readTensor } from './tensors.js';
import { defineDispose, liveDuringCall } from './wasm-object.js';

// Every KVCache / PrecomputedKeyValue of every module -> { wasm, raw, kind }
// (raw: the Embind object, null once disposed). Lets the objects that
// consume them find the raw handle, and tell "disposed", "from another
// module" and "not one of ours" apart.
const kvHandles = new WeakMap();
// Passed by this file to the constructors below; anything else is refused.
const INTERNAL = Symbol('simd-attention internal');

// Whether v is a KVCache or a PrecomputedKeyValue (of any module, live or not).
export function holdsKeyValues(v) {
  return kvHandles.has(v);
}

// The live Embind object behind a KVCache / PrecomputedKeyValue argument.
export function kvRaw(wasm, where, name, v, kind) {
  const h = kvHandles.get(v);
  if (h === undefined || h.kind !== kind) {
    const from = kind === 'KVCache' ? 'createKVCache()' : 'precomputeKeyValue() or precomputeMemory()';
    throw new TypeError(`${where}: ${name}: expected a ${kind} (from ${from}), got ` +
      `${h ? `a ${h.kind}` : describe(v)}`);
  }
  if (h.wasm !== wasm) {
    throw new Error(`${where}: ${name}: this ${kind} belongs to another module ` +
      '(another createAttentionModule() call, i.e. another wasm instance); it can only be ' +
      'used with the objects of the module that created it');
  }
  if (h.raw === null) {
    throw new Error(`${where}: ${name}: the ${kind} was disposed; create a new one`);
  }
  return liveDuringCall(h, () => `${where}: ${name}: the ${kind} was disposed during the ` +
    'call (by a getter of one of its arguments); create a new one');
}

// Makes an empty Embind `Binding` object, lets `fill` (a call into the
// creating object) fill it, and returns it with its info; frees it on error.
function createFilled(wasm, where, Binding, fill) {
  const raw = new Binding();
  try {
    unwrap(wasm, where, fill(raw));
    return { raw, info: unwrap(wasm, where, raw.info()) };
  } catch (e) {
    raw.delete();
    throw e;
  }
}

// The KVCache and PrecomputedKeyValue classes of one module (wasm instance),
// and how its other classes make them.
export function makeKeyValueClasses(wasm, reclaimer) {
  // Registers `self`, a new KVCache or PrecomputedKeyValue, as the owner of
  // `raw`; only this file's factories may construct one.
  function adopt(self, internal, raw, kind, howToMake) {
    if (internal !== INTERNAL) {
      throw new TypeError(`${kind}: not constructible; use ${howToMake}`);
    }
    const handle = { wasm, raw, kind };
    kvHandles.set(self, handle);
    reclaimer.track(self, handle);
  }

  class KVCache {
    #batch;
    #maxLength;
    #keyWidth;
    #valueWidth;

    constructor(internal, raw, info, keyWidth, valueWidth) {
      adopt(this, internal, raw, 'KVCache',
        'createKVCache() of a MultiHeadAttention or a TransformerDecoderLayer');
      this.#batch = info.batch;
      this.#maxLength = info.maxLength;
      this.#keyWidth = keyWidth;
      this.#valueWidth = valueWidth;
    }

    // The live Embind object of `self`, which must be a KVCache of this module.
    static #live(self, where) {
      // Object(): `in` throws on a primitive, the `this` of a method called bare.
      if (!(#batch in Object(self))) {
        throw new TypeError(`KVCache.${where}: called on ${describe(self)}, not a KVCache`);
      }
      const handle = kvHandles.get(self);
      if (handle.raw === null) {
        throw new Error(`KVCache.${where}: this KVCache was disposed; create a new one`);
      }
      return liveDuringCall(handle, () => `KVCache.${where}: this KVCache was disposed during ` +
        'the call (by a getter of one of its arguments); create a new one');
    }

    /** Sequences cached side by side. */
    get batch() { return this.#batch; }
    /** Tokens the cache can hold. */
    get maxLength() { return this.#maxLength; }
    /** Tokens it holds now. */
    get length() { return KVCache.#live(this, 'length').length(); }
    get disposed() { return kvHandles.get(this).raw === null; }

    append(keys, values) {
      const where = 'KVCache.append';
      const raw = KVCache.#live(this, 'append');
      const k = readTensor(where, 'keys', keys);
      const v = readTensor(where, 'values', values);
      unwrap(wasm, where, raw.append(k, v));
    }

    keys() {
      const raw = KVCache.#live(this, 'keys');
      const data = unwrap(wasm, 'KVCache.keys', raw.keys());
      return { data, shape: [this.#batch, raw.length(), this.#keyWidth] };
    }

    values() {
      const raw = KVCache.#live(this, 'values');
      const data = unwrap(wasm, 'KVCache.values', raw.values());
      return { data, shape: [this.#batch, raw.length(), this.#valueWidth] };
    }

    truncate(n) {
      const where = 'KVCache.truncate';
      const raw = KVCache.#live(this, 'truncate');
      unwrap(wasm, where, raw.truncate(optionalSize(where, 'n', n)));
    }

    reset() {
      unwrap(wasm, 'KVCache.reset', KVCache.#live(this, 'reset').reset());
    }

    dispose() {
      if (!(#batch in Object(this))) {
        throw new TypeError(`KVCache.dispose: called on ${describe(this)}, not a KVCache`);
      }
      reclaimer.release(kvHandles.get(this));
    }
  }
  defineDispose(KVCache);

  class PrecomputedKeyValue {
    #batch;
    #tokens;

    constructor(internal, raw, info) {
      adopt(this, internal, raw, 'PrecomputedKeyValue',
        'MultiHeadAttention.precomputeKeyValue() or TransformerDecoderLayer.precomputeMemory()');
      this.#batch = info.batch;
      this.#tokens = info.tokens;
    }

    /** Batch of the memory. */
    get batch() { return this.#batch; }
    /** Tokens of the memory (keys every query attends over). */
    get tokens() { return this.#tokens; }
    get disposed() { return kvHandles.get(this).raw === null; }

    dispose() {
      if (!(#batch in Object(this))) {
        throw new TypeError('PrecomputedKeyValue.dispose: called on ' +
          `${describe(this)}, not a PrecomputedKeyValue`);
      }
      reclaimer.release(kvHandles.get(this));
    }
  }
  defineDispose(PrecomputedKeyValue);

  return {
    // A new cache filled by fill(rawCache), e.g. mha.createKVCache(raw, b, n).
    newCache(where, keyWidth, valueWidth, fill) {
      const { raw, info } = createFilled(wasm, where, wasm.KVCacheBinding, fill);
      return new KVCache(INTERNAL, raw, info, keyWidth, valueWidth);
    },
    // A cache over `raw`, a KVCacheBinding already filled (a stack's, one
    // call filling every layer's).
    adoptCache(where, raw, keyWidth, valueWidth) {
      return new KVCache(INTERNAL, raw, unwrap(wasm, where, raw.info()), keyWidth, valueWidth);
    },
    // The keys and values of `memory` ({ keyPaddingMask } in `options`),
    // projected by fill(rawPrecomputed, memory, mask): a method of an Embind
    // object reached through liveDuringCall, which keeps it bound.
    precompute(where, memory, options, fill) {
      const m = readTensor(where, 'memory', memory);
      const mask = readPrecomputeOptions(where, options);
      const { raw, info } = createFilled(wasm, where, wasm.PrecomputedBinding,
        (into) => fill(into, m, mask));
      return new PrecomputedKeyValue(INTERNAL, raw, info);
    },
  };
}

export function readCacheOptions(where, options) {
  checkObject(where, 'options', options, OPTION_KEYS.KVCacheOptions);
  return {
    batch: requiredSize(where, 'options.batch', options.batch),
    maxLength: requiredSize(where, 'options.maxLength', options.maxLength),
  };
}

function readPrecomputeOptions(where, options) {
  const o = optionsObject(where, options, OPTION_KEYS.PrecomputeOptions);
  return optionalMask(where, 'options.keyPaddingMask', o.keyPaddingMask);
}
