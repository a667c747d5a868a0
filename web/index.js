// simd-attention: multi-head attention as SIMD C++ kernels compiled to
// WebAssembly. This file is the whole JS side of the package: it picks and
// loads one of the three wasm builds (dist/), checks what is cheap and
// JS-specific (types, disposed objects), and forwards to the Embind glue
// (bindings/ in the repository), which checks shapes and values in C++ and
// returns every failure as a value that is thrown here as a JS error.
// Types and documentation: index.d.ts.

// ---------------------------------------------------------------------------
// Feature detection
// ---------------------------------------------------------------------------

// (module (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt))
// i8x16.popcnt is one of the last instructions added to the SIMD proposal, so
// engines that shipped an earlier draft of it do not count as supporting it.
const SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // func 0 has type 0
  0x0a, 0x0a, 0x01, 0x08, 0x00, // code: 1 body, 8 bytes, no locals
  0x41, 0x00, // i32.const 0
  0xfd, 0x0f, // i8x16.splat
  0xfd, 0x62, // i8x16.popcnt
  0x0b, // end
]);

// (module (func (result v128) i32.const 0 i8x16.splat i32.const 0
//   i8x16.splat i32.const 0 i8x16.splat f32x4.relaxed_madd)): relaxed SIMD
// with its standard opcode (0xfd 0x85 0x02), the one the relaxed build uses.
// Engines that only knew the proposal's drafts reject it.
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // func 0 has type 0
  0x0a, 0x13, 0x01, 0x11, 0x00, // code: 1 body, 17 bytes, no locals
  0x41, 0x00, 0xfd, 0x0f, // i32.const 0, i8x16.splat
  0x41, 0x00, 0xfd, 0x0f,
  0x41, 0x00, 0xfd, 0x0f,
  0xfd, 0x85, 0x02, // f32x4.relaxed_madd
  0x0b, // end
]);

// (module (func try catch_all end)): the exception-handling instructions
// every build uses (C++ exceptions compiled with -fwasm-exceptions).
const EH_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
  0x03, 0x02, 0x01, 0x00,
  0x0a, 0x08, 0x01, 0x06, 0x00, // code: 1 body, 6 bytes, no locals
  0x06, 0x40, // try (empty block type)
  0x19, // catch_all
  0x0b, // end (try)
  0x0b, // end (func)
]);

function validates(bytes) {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

/** Whether this JS engine runs WebAssembly SIMD (the SIMD build). */
export function wasmSimdSupported() {
  return validates(SIMD_PROBE);
}

/** Whether this JS engine runs WebAssembly relaxed SIMD (the fastest build). */
export function wasmRelaxedSimdSupported() {
  return validates(RELAXED_SIMD_PROBE);
}

// ---------------------------------------------------------------------------
// Small helpers: descriptions of values for messages, type checks
// ---------------------------------------------------------------------------

const disposeSymbols = [Symbol.dispose, Symbol.for('Symbol.dispose')].filter(
  (s, i, all) => typeof s === 'symbol' && all.indexOf(s) === i);

// Realm-independent (a Float32Array made in a worker or an iframe passes).
function typedArrayTag(v) {
  return ArrayBuffer.isView(v) ? Object.prototype.toString.call(v).slice(8, -1) : '';
}
const isFloat32Array = (v) => typedArrayTag(v) === 'Float32Array';
const isUint8Array = (v) => typedArrayTag(v) === 'Uint8Array';

function describe(v) {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (ArrayBuffer.isView(v) && 'length' in v) return `${typedArrayTag(v)}(${v.length})`;
  if (Array.isArray(v)) {
    return v.length <= 6 && v.every((x) => typeof x === 'number')
      ? `[${v.join(', ')}]` : `Array(${v.length})`;
  }
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (typeof v === 'function') return 'a function';
  const tag = Object.prototype.toString.call(v).slice(8, -1);
  const name = tag === 'Object' ? v.constructor?.name : undefined;
  return `an object (${typeof name === 'string' && name !== '' ? name : tag})`;
}

function checkObject(where, name, v, allowed) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new TypeError(`${where}: ${name}: expected an object, got ${describe(v)}`);
  }
  if (allowed) {
    for (const key of Object.keys(v)) {
      if (!allowed.includes(key)) {
        throw new TypeError(`${where}: ${name}: unknown key '${key}' ` +
          `(expected ${allowed.join(', ')})`);
      }
    }
  }
}

function optionalBoolean(where, name, v, fallback) {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') {
    throw new TypeError(`${where}: ${name}: expected a boolean, got ${describe(v)}`);
  }
  return v;
}

// A size from JS: a non-negative integer (0 is left to C++ to reject or to
// mean "default").
function optionalSize(where, name, v) {
  if (v === undefined) return 0;
  if (typeof v !== 'number') {
    throw new TypeError(`${where}: ${name}: expected an integer, got ${describe(v)}`);
  }
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
    throw new RangeError(`${where}: ${name}: expected a non-negative integer, got ${v}`);
  }
  return v;
}

function requiredSize(where, name, v) {
  if (v === undefined) {
    throw new TypeError(`${where}: ${name}: required, expected a positive integer`);
  }
  return optionalSize(where, name, v);
}

function float32(where, name, v, optional = false) {
  if (optional && v === undefined) return undefined;
  if (!isFloat32Array(v)) {
    throw new TypeError(`${where}: ${name}: expected a Float32Array, got ${describe(v)}`);
  }
  return v;
}

// {data, shape} -> {data, batch, tokens, features, rank}
function readTensor(where, name, t) {
  if (t === null || typeof t !== 'object' || ArrayBuffer.isView(t) || Array.isArray(t)) {
    throw new TypeError(`${where}: ${name}: expected a tensor ` +
      `{ data: Float32Array, shape: number[] }, got ${describe(t)}`);
  }
  float32(where, `${name}.data`, t.data);
  const shape = t.shape;
  if (!Array.isArray(shape)) {
    throw new TypeError(`${where}: ${name}.shape: expected an array ` +
      `[batch, tokens, features] or [tokens, features], got ${describe(shape)}`);
  }
  if (shape.length !== 2 && shape.length !== 3) {
    throw new RangeError(`${where}: ${name}.shape: expected [batch, tokens, features] ` +
      `or [tokens, features], got ${describe(shape)}`);
  }
  shape.forEach((d, i) => {
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > 0xffffffff) {
      throw new RangeError(`${where}: ${name}.shape[${i}]: expected a non-negative ` +
        `integer, got ${describe(d)}`);
    }
  });
  const length = shape.reduce((a, b) => a * b, 1);
  if (t.data.length !== length) {
    throw new RangeError(`${where}: ${name}: data has ${t.data.length} values but shape ` +
      `${describe(shape)} needs ${length}`);
  }
  const [batch, tokens, features] = shape.length === 3 ? shape : [1, ...shape];
  return { data: t.data, batch, tokens, features, rank: shape.length };
}

// ---------------------------------------------------------------------------
// Errors from the glue
// ---------------------------------------------------------------------------

// The C++ API names things in snake_case; the JS API in camelCase.
const CPP_NAMES = [
  ['w_q', 'wQ'], ['w_k', 'wK'], ['w_v', 'wV'], ['w_o', 'wO'],
  ['b_q', 'bQ'], ['b_k', 'bK'], ['b_v', 'bV'], ['b_o', 'bO'],
  ['key_padding_mask', 'options.keyPaddingMask'], ['attn_mask', 'options.attnMask'],
  ['d_model', 'dModel'], ['num_heads', 'numHeads'], ['head_dim_v', 'headDimV'],
  ['kdim', 'kDim'], ['vdim', 'vDim'], ['ffn_dim', 'ffnDim'],
].map(([cpp, js]) => [new RegExp(`(?<!\\w)${cpp}\\b`, 'g'), js]);

function jsNames(message) {
  return CPP_NAMES.reduce((m, [re, js]) => m.replace(re, js), message);
}

function mib(bytes) {
  return `${Math.round(bytes / 1048576)} MiB`;
}

// The glue returns {saError: kind, message} instead of throwing (see
// bindings/glue.h); everything else is a result.
function unwrap(wasm, where, result) {
  if (result === null || typeof result !== 'object' || typeof result.saError !== 'string') {
    return result;
  }
  // "forwardIncremental: ..." from C++ under where = "X.forwardIncremental"
  // is said once.
  const method = where.slice(where.lastIndexOf('.') + 1);
  const text = result.message.startsWith(`${method}: `)
    ? result.message.slice(method.length + 2) : result.message;
  const message = `${where}: ${jsNames(text)}`;
  switch (result.saError) {
    case 'invalid_argument':
      return fail(new RangeError(message));
    case 'out_of_memory': {
      const m = wasm.memoryStats();
      return fail(new RangeError(`${where}: out of wasm memory: the heap is ` +
        `${mib(m.heapBytes)} and cannot grow past ${mib(m.maxHeapBytes)} ` +
        `(C++: ${result.message}); use smaller inputs or fewer outputs`));
    }
    default:
      return fail(new Error(message));
  }
}

function fail(error) {
  throw error;
}

// ---------------------------------------------------------------------------
// Objects that own wasm memory
// ---------------------------------------------------------------------------

// Frees the wasm object of every JS object that was garbage-collected without
// dispose() (Embind 3.1.6 frees nothing by itself), and warns once per kind
// and module: dispose() releases memory at once, the collector maybe never.
// Each object registers a handle { raw, kind } that it shares with its
// collector entry; dispose() deletes raw, sets it to null and unregisters.
function makeReclaimer() {
  const warned = new Set();
  const registry = typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry((handle) => {
      if (handle.raw === null) return;
      handle.raw.delete();
      handle.raw = null;
      if (warned.has(handle.kind)) return;
      warned.add(handle.kind);
      console.warn(`simd-attention: a ${handle.kind} was garbage-collected without ` +
        'dispose(); its wasm memory was freed then. Call dispose() (or declare it with ' +
        '`using`) when done with it');
    })
    : null;
  return {
    track(object, handle) { registry?.register(object, handle, handle); },
    release(handle) {
      if (handle.raw === null) return;
      handle.raw.delete();
      handle.raw = null;
      registry?.unregister(handle);
    },
  };
}

// obj[Symbol.dispose]() = obj.dispose(), under Symbol.dispose and under the
// Symbol.for('Symbol.dispose') that polyfills use where it is missing.
function defineDispose(Class) {
  const value = function disposeResource() { this.dispose(); };
  for (const symbol of disposeSymbols) {
    Object.defineProperty(Class.prototype, symbol, { value, writable: true, configurable: true });
  }
}

// ---------------------------------------------------------------------------
// Keys and values kept between calls: KVCache, PrecomputedKeyValue
// ---------------------------------------------------------------------------

// Every KVCache / PrecomputedKeyValue of every module -> { wasm, raw, kind }
// (raw: the Embind object, null once disposed). Lets the objects that
// consume them find the raw handle, and tell "disposed", "from another
// module" and "not one of ours" apart.
const kvHandles = new WeakMap();
// Passed by this file to the constructors below; anything else is refused.
const INTERNAL = Symbol('simd-attention internal');

// The live Embind object behind a KVCache / PrecomputedKeyValue argument.
function kvRaw(wasm, where, name, v, kind) {
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
  return h.raw;
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

function makeKeyValueClasses(wasm, reclaimer) {
  class KVCache {
    #batch;
    #maxLength;
    #keyWidth;
    #valueWidth;

    constructor(internal, raw, info, keyWidth, valueWidth) {
      if (internal !== INTERNAL) {
        throw new TypeError('KVCache: not constructible; use createKVCache() of a ' +
          'MultiHeadAttention or a TransformerDecoderLayer');
      }
      const handle = { wasm, raw, kind: 'KVCache' };
      kvHandles.set(this, handle);
      this.#batch = info.batch;
      this.#maxLength = info.maxLength;
      this.#keyWidth = keyWidth;
      this.#valueWidth = valueWidth;
      reclaimer.track(this, handle);
    }

    // The live Embind object of `self`, which must be a KVCache of this module.
    static #live(self, where) {
      if (!(#batch in self)) {
        throw new TypeError(`KVCache.${where}: called on ${describe(self)}, not a KVCache`);
      }
      const { raw } = kvHandles.get(self);
      if (raw === null) {
        throw new Error(`KVCache.${where}: this KVCache was disposed; create a new one`);
      }
      return raw;
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
      const check = (name, given, expected, what) => {
        if (given !== expected) {
          throw new RangeError(`${where}: ${name}: expected ${expected} (${what}), got ${given}`);
        }
      };
      check('keys.batch', k.batch, this.#batch, 'batch of the KV cache');
      check('keys.features', k.features, this.#keyWidth, 'numHeads * headDim');
      check('values.batch', v.batch, this.#batch, 'batch of the KV cache');
      check('values.tokens', v.tokens, k.tokens, 'keys.tokens');
      check('values.features', v.features, this.#valueWidth, 'numHeads * headDimV');
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
      const length = raw.length();
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > length) {
        const Class = typeof n === 'number' ? RangeError : TypeError;
        throw new Class(`${where}: n: expected an integer from 0 to the cache's length ` +
          `(${length}), got ${describe(n)}`);
      }
      unwrap(wasm, where, raw.truncate(n));
    }

    reset() {
      unwrap(wasm, 'KVCache.reset', KVCache.#live(this, 'reset').reset());
    }

    dispose() {
      if (!(#batch in this)) {
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
      if (internal !== INTERNAL) {
        throw new TypeError('PrecomputedKeyValue: not constructible; use ' +
          'MultiHeadAttention.precomputeKeyValue() or TransformerDecoderLayer.precomputeMemory()');
      }
      const handle = { wasm, raw, kind: 'PrecomputedKeyValue' };
      kvHandles.set(this, handle);
      this.#batch = info.batch;
      this.#tokens = info.tokens;
      reclaimer.track(this, handle);
    }

    /** Batch of the memory. */
    get batch() { return this.#batch; }
    /** Tokens of the memory (keys every query attends over). */
    get tokens() { return this.#tokens; }
    get disposed() { return kvHandles.get(this).raw === null; }

    dispose() {
      if (!(#batch in this)) {
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
    newPrecomputed(where, fill) {
      const { raw, info } = createFilled(wasm, where, wasm.PrecomputedBinding, fill);
      return new PrecomputedKeyValue(INTERNAL, raw, info);
    },
  };
}

// ---------------------------------------------------------------------------
// Shared pieces of MultiHeadAttention and the layers
// ---------------------------------------------------------------------------

// The module's backend unless the config names one.
function readBackend(where, config, defaultBackend) {
  const backend = config.backend === undefined ? defaultBackend : config.backend;
  if (typeof backend !== 'string') {
    throw new TypeError(`${where}: config.backend: expected a string, got ${describe(backend)}`);
  }
  return backend;
}

function optionalMask(where, name, v) {
  if (v !== undefined && !isUint8Array(v)) {
    throw new TypeError(`${where}: ${name}: expected a Uint8Array ` +
      `(1 = real token, 0 = padding), got ${describe(v)}`);
  }
  return v;
}

// A mask the JS side can check against the shapes it knows: [batch, tokens].
function checkMaskLength(where, name, mask, batch, tokens) {
  if (mask !== undefined && mask.length !== batch * tokens) {
    throw new RangeError(`${where}: ${name}: expected ${batch * tokens} values for shape ` +
      `[${batch}, ${tokens}], got ${mask.length}`);
  }
}

// Attention options -> what the glue reads (OptionsFromJs in bindings/glue.cc).
function readAttentionOptions(where, options, allowed) {
  const o = options === undefined ? {} : options;
  checkObject(where, 'options', o, allowed);
  return {
    causal: optionalBoolean(where, 'options.causal', o.causal, false),
    keyPaddingMask: optionalMask(where, 'options.keyPaddingMask', o.keyPaddingMask),
    attnMask: float32(where, 'options.attnMask', o.attnMask, true),
    needWeights: optionalBoolean(where, 'options.returnAttnWeights', o.returnAttnWeights, false),
    needPerHeadOutput: optionalBoolean(where, 'options.returnPerHeadOutput',
      o.returnPerHeadOutput, false),
    needIntermediates: optionalBoolean(where, 'options.returnIntermediates',
      o.returnIntermediates, false),
  };
}

// The glue's result -> ForwardResult; unbatched shapes for a 2-D query.
// info: the resolved config (numHeads, dModel, headDim, headDimV).
function attentionResult(r, rank, info) {
  const { numHeads: heads, dModel, headDim, headDimV } = info;
  const batched = (dims) => (rank === 3 ? [r.batch, ...dims] : dims);
  const out = { output: { data: r.output, shape: batched([r.tq, dModel]) } };
  if (r.attnWeights) out.attnWeights = { data: r.attnWeights, shape: batched([heads, r.tq, r.tk]) };
  if (r.perHeadOutput) {
    out.perHeadOutput = { data: r.perHeadOutput, shape: batched([heads, r.tq, dModel]) };
  }
  if (r.q) {
    out.q = { data: r.q, shape: batched([heads, r.tq, headDim]) };
    out.k = { data: r.k, shape: batched([heads, r.tk, headDim]) };
    out.v = { data: r.v, shape: batched([heads, r.tk, headDimV]) };
    out.headOutput = { data: r.headOutput, shape: batched([heads, r.tq, headDimV]) };
  }
  return out;
}

// Checks a layer input against the layer's width (messages name it as JS
// sees it, before C++ would name the attention's query).
function checkActivation(where, name, t, dModel) {
  if (t.features !== dModel) {
    throw new RangeError(`${where}: ${name}.features: expected ${dModel} (dModel), ` +
      `got ${t.features}`);
  }
  for (const d of ['batch', 'tokens']) {
    if (t[d] === 0) throw new RangeError(`${where}: ${name}.${d}: must be > 0, got 0`);
  }
}

// ---------------------------------------------------------------------------
// MultiHeadAttention
// ---------------------------------------------------------------------------

const CONFIG_KEYS = ['dModel', 'numHeads', 'kDim', 'vDim', 'headDimV', 'bias', 'backend'];
const WEIGHT_KEYS = ['wQ', 'wK', 'wV', 'wO', 'bQ', 'bK', 'bV', 'bO'];
const TORCH_KEYS = ['in_proj_weight', 'q_proj_weight', 'k_proj_weight', 'v_proj_weight',
  'in_proj_bias', 'out_proj_weight', 'out_proj.weight', 'out_proj_bias', 'out_proj.bias'];
const FORWARD_OPTION_KEYS = ['causal', 'keyPaddingMask', 'attnMask',
  'returnAttnWeights', 'returnPerHeadOutput', 'returnIntermediates'];
const INCREMENTAL_OPTION_KEYS = ['keyPaddingMask', 'attnMask', 'returnAttnWeights',
  'returnPerHeadOutput', 'returnIntermediates'];
const CACHE_OPTION_KEYS = ['batch', 'maxLength'];
const PRECOMPUTE_OPTION_KEYS = ['keyPaddingMask'];

function readCacheOptions(where, options) {
  checkObject(where, 'options', options, CACHE_OPTION_KEYS);
  return {
    batch: requiredSize(where, 'options.batch', options.batch),
    maxLength: requiredSize(where, 'options.maxLength', options.maxLength),
  };
}

function readPrecomputeOptions(where, options) {
  const o = options === undefined ? {} : options;
  checkObject(where, 'options', o, PRECOMPUTE_OPTION_KEYS);
  return optionalMask(where, 'options.keyPaddingMask', o.keyPaddingMask);
}

// Methods of the base class that its subclasses call (not public API).
const LIVE = Symbol('live');
const READY = Symbol('ready');
const INFO = Symbol('info');
const WEIGHTS_SET = Symbol('weights set');

// What MultiHeadAttention and the layers share: one Embind object (created by
// the subclass from its checked config, then asked for its error and info()),
// config, kernels, the disposed and weights states, dispose. Subclass methods
// reach it through super[LIVE] / super[READY], which also check that `this`
// is of their class (a method called on another kind of object is a
// TypeError naming the method, not an Embind error).
function makeWasmObjectBase(wasm, reclaimer, kind, weightMethods) {
  return class WasmObject {
    #handle; // { raw, kind }: raw is null once disposed or collected
    #info;
    #hasWeights = false;

    constructor(raw, extraInfo) {
      try {
        unwrap(wasm, kind, raw.takeError());
        this.#info = Object.freeze({ ...unwrap(wasm, kind, raw.info()), ...extraInfo });
      } catch (e) {
        raw.delete();
        throw e;
      }
      this.#handle = { raw, kind };
      reclaimer.track(this, this.#handle);
    }

    /** The config with defaults filled in (and the backend). */
    get config() {
      const { kernels, ...config } = this.#info;
      return config;
    }

    /** The kernel table this object runs on, e.g. "highway:WASM". */
    get kernels() {
      return this.#info.kernels;
    }

    get disposed() {
      return this.#handle.raw === null;
    }

    // For the subclasses (private fields are per class).
    get [INFO]() {
      return this.#info;
    }

    [LIVE](where) {
      if (!(#handle in this)) {
        throw new TypeError(`${where}: called on ${describe(this)}, not a ${kind}`);
      }
      if (this.#handle.raw === null) {
        throw new Error(`${where}: this ${kind} was disposed; create a new one`);
      }
      return this.#handle.raw;
    }

    [READY](where) {
      const raw = WasmObject.prototype[LIVE].call(this, where);
      if (!this.#hasWeights) {
        throw new Error(`${where}: no weights yet; call ${weightMethods} first`);
      }
      return raw;
    }

    [WEIGHTS_SET]() {
      this.#hasWeights = true;
    }

    dispose() {
      if (!(#handle in this)) {
        throw new TypeError(`${kind}.dispose: called on ${describe(this)}, not a ${kind}`);
      }
      reclaimer.release(this.#handle);
    }
  };
}

function makeMultiHeadAttention(wasm, reclaimer, defaultBackend, kv) {
  const Base = makeWasmObjectBase(wasm, reclaimer, 'MultiHeadAttention',
    'setWeights() or setWeightsFromPyTorch()');
  class MultiHeadAttention extends Base {
    constructor(config) {
      const where = 'MultiHeadAttention';
      checkObject(where, 'config', config, CONFIG_KEYS);
      const backend = readBackend(where, config, defaultBackend);
      const raw = new wasm.MhaBinding({
        dModel: requiredSize(where, 'config.dModel', config.dModel),
        numHeads: requiredSize(where, 'config.numHeads', config.numHeads),
        kDim: optionalSize(where, 'config.kDim', config.kDim),
        vDim: optionalSize(where, 'config.vDim', config.vDim),
        headDimV: optionalSize(where, 'config.headDimV', config.headDimV),
        bias: optionalBoolean(where, 'config.bias', config.bias, true),
        backend,
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
        const isBias = key.startsWith('b');
        if (isBias && bias && weights[key] === undefined) {
          throw new TypeError(`${where}: ${key}: expected a Float32Array (config.bias ` +
            'is true), got undefined');
        }
        w[key] = float32(where, key, weights[key], isBias);
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
        if (state[key] !== undefined) s[key.replace('.', '_')] = float32(where, key, state[key]);
      }
      unwrap(wasm, where, raw.setWeightsFromPyTorch(s));
      this[WEIGHTS_SET]();
    }

    forward(query, key, value, options) {
      const where = 'MultiHeadAttention.forward';
      const raw = super[READY](where);
      const q = readTensor(where, 'query', query);
      // Cross-attention on K/V projected once by precomputeKeyValue.
      if (kvHandles.has(key)) {
        const kvRawHandle = kvRaw(wasm, where, 'key', key, 'PrecomputedKeyValue');
        if (value !== undefined && value !== null) {
          throw new TypeError(`${where}: value given with precomputed keys/values; ` +
            'omit it (the PrecomputedKeyValue holds both)');
        }
        const o = readAttentionOptions(where, options, FORWARD_OPTION_KEYS);
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
      const o = readAttentionOptions(where, options, FORWARD_OPTION_KEYS);
      const r = unwrap(wasm, where, raw.forward(q, k, v, o));
      return attentionResult(r, q.rank, this[INFO]);
    }

    createKVCache(options) {
      const where = 'MultiHeadAttention.createKVCache';
      const raw = super[LIVE](where);
      const { batch, maxLength } = readCacheOptions(where, options);
      const { numHeads, headDim, headDimV } = this[INFO];
      return kv.newCache(where, numHeads * headDim, numHeads * headDimV,
        (into) => raw.createKVCache(into, batch, maxLength));
    }

    forwardIncremental(x, cache, options) {
      const where = 'MultiHeadAttention.forwardIncremental';
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const rawCache = kvRaw(wasm, where, 'cache', cache, 'KVCache');
      const o = readAttentionOptions(where, options, INCREMENTAL_OPTION_KEYS);
      const r = unwrap(wasm, where, raw.forwardIncremental(t, rawCache, o));
      return attentionResult(r, t.rank, this[INFO]);
    }

    precomputeKeyValue(memory, options) {
      const where = 'MultiHeadAttention.precomputeKeyValue';
      const raw = super[READY](where);
      const m = readTensor(where, 'memory', memory);
      const mask = readPrecomputeOptions(where, options);
      return kv.newPrecomputed(where, (into) => raw.precomputeKeyValue(into, m, mask));
    }
  }
  defineDispose(MultiHeadAttention);
  return MultiHeadAttention;
}

// ---------------------------------------------------------------------------
// TransformerEncoderLayer, TransformerDecoderLayer
// ---------------------------------------------------------------------------

const LAYER_CONFIG_KEYS = ['dModel', 'numHeads', 'ffnDim', 'normFirst', 'activation', 'eps',
  'backend'];
const ACTIVATIONS = ['relu', 'gelu', 'gelu_erf', 'gelu_tanh'];
const FFN_KEYS = ['w1', 'b1', 'w2', 'b2'];
const NORM_KEYS = ['gamma', 'beta'];
const ENCODER_WEIGHT_GROUPS = { attention: WEIGHT_KEYS, ffn: FFN_KEYS, norm1: NORM_KEYS,
  norm2: NORM_KEYS };
const DECODER_WEIGHT_GROUPS = { selfAttention: WEIGHT_KEYS, crossAttention: WEIGHT_KEYS,
  ffn: FFN_KEYS, norm1: NORM_KEYS, norm2: NORM_KEYS, norm3: NORM_KEYS };

function readEps(where, name, v) {
  if (v === undefined) return 1e-5;
  if (typeof v !== 'number') {
    throw new TypeError(`${where}: ${name}: expected a number, got ${describe(v)}`);
  }
  if (!(v > 0) || !Number.isFinite(v)) {
    throw new RangeError(`${where}: ${name}: expected a finite number > 0, got ${v}`);
  }
  return v;
}

function readLayerConfig(where, config, defaultBackend) {
  checkObject(where, 'config', config, LAYER_CONFIG_KEYS);
  const activation = config.activation === undefined ? 'relu' : config.activation;
  if (typeof activation !== 'string') {
    throw new TypeError(`${where}: config.activation: expected a string, got ` +
      `${describe(activation)}`);
  }
  if (!ACTIVATIONS.includes(activation)) {
    throw new RangeError(`${where}: config.activation: expected 'relu', 'gelu' (or ` +
      `'gelu_erf') or 'gelu_tanh', got ${describe(activation)}`);
  }
  return {
    dModel: requiredSize(where, 'config.dModel', config.dModel),
    numHeads: requiredSize(where, 'config.numHeads', config.numHeads),
    ffnDim: requiredSize(where, 'config.ffnDim', config.ffnDim),
    normFirst: optionalBoolean(where, 'config.normFirst', config.normFirst, false),
    activation,
    eps: readEps(where, 'config.eps', config.eps),
    backend: readBackend(where, config, defaultBackend),
  };
}

// { group: { key: Float32Array } } with every key of every group required.
function readLayerWeights(where, weights, groups) {
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
      out[group][key] = float32(where, `${group}.${key}`, weights[group][key]);
    }
  }
  return out;
}

// The layers' weights and construction on top of the shared base.
function makeLayerBase(wasm, reclaimer, defaultBackend, kind, Binding, groups) {
  return class LayerBase extends makeWasmObjectBase(wasm, reclaimer, kind, 'setWeights()') {
    constructor(config) {
      const resolved = readLayerConfig(kind, config, defaultBackend);
      // eps as given (C++ holds it as a float32).
      super(new Binding(resolved), { eps: resolved.eps });
    }

    setWeights(weights) {
      const where = `${kind}.setWeights`;
      const raw = super[LIVE](where);
      const w = readLayerWeights(where, weights, groups);
      // All or nothing (C++): after an error the layer keeps its old weights.
      unwrap(wasm, where, raw.setWeights(w));
      this[WEIGHTS_SET]();
    }
  };
}

function makeEncoderLayer(wasm, reclaimer, defaultBackend) {
  const Base = makeLayerBase(wasm, reclaimer, defaultBackend, 'TransformerEncoderLayer',
    wasm.EncoderLayerBinding, ENCODER_WEIGHT_GROUPS);
  class TransformerEncoderLayer extends Base {
    forward(x, options) {
      const where = 'TransformerEncoderLayer.forward';
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const { dModel } = this.config;
      checkActivation(where, 'x', t, dModel);
      const o = options === undefined ? {} : options;
      checkObject(where, 'options', o, ['keyPaddingMask', 'causal']);
      const keyPaddingMask = optionalMask(where, 'options.keyPaddingMask', o.keyPaddingMask);
      checkMaskLength(where, 'options.keyPaddingMask', keyPaddingMask, t.batch, t.tokens);
      const data = unwrap(wasm, where, raw.forward(t, {
        keyPaddingMask, causal: optionalBoolean(where, 'options.causal', o.causal, false),
      }));
      return { data, shape: t.rank === 3 ? [t.batch, t.tokens, dModel] : [t.tokens, dModel] };
    }
  }
  defineDispose(TransformerEncoderLayer);
  return TransformerEncoderLayer;
}

function makeDecoderLayer(wasm, reclaimer, defaultBackend, kv) {
  const Base = makeLayerBase(wasm, reclaimer, defaultBackend, 'TransformerDecoderLayer',
    wasm.DecoderLayerBinding, DECODER_WEIGHT_GROUPS);

  // memory: a Tensor (checked against x) or a PrecomputedKeyValue.
  function readMemory(where, memory, x, dModel) {
    if (kvHandles.has(memory)) {
      const raw = kvRaw(wasm, where, 'memory', memory, 'PrecomputedKeyValue');
      if (memory.batch !== x.batch) {
        throw new RangeError(`${where}: x.batch: expected ${memory.batch} (batch of the ` +
          `precomputed memory), got ${x.batch}`);
      }
      return { precomputed: raw, batch: memory.batch, tokens: memory.tokens };
    }
    const m = readTensor(where, 'memory', memory);
    checkActivation(where, 'memory', m, dModel);
    if (m.batch !== x.batch) {
      throw new RangeError(`${where}: memory.batch: expected ${x.batch} (x.batch), got ${m.batch}`);
    }
    return { tensor: m, batch: m.batch, tokens: m.tokens };
  }

  class TransformerDecoderLayer extends Base {
    forward(x, memory, options) {
      const where = 'TransformerDecoderLayer.forward';
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const { dModel } = this.config;
      checkActivation(where, 'x', t, dModel);
      const m = readMemory(where, memory, t, dModel);
      const o = options === undefined ? {} : options;
      checkObject(where, 'options', o, ['causal', 'keyPaddingMask', 'memoryKeyPaddingMask']);
      const keyPaddingMask = optionalMask(where, 'options.keyPaddingMask', o.keyPaddingMask);
      checkMaskLength(where, 'options.keyPaddingMask', keyPaddingMask, t.batch, t.tokens);
      const memoryKeyPaddingMask = optionalMask(where, 'options.memoryKeyPaddingMask',
        o.memoryKeyPaddingMask);
      checkMaskLength(where, 'options.memoryKeyPaddingMask', memoryKeyPaddingMask, m.batch,
        m.tokens);
      const opts = {
        causal: optionalBoolean(where, 'options.causal', o.causal, true),
        keyPaddingMask,
        memoryKeyPaddingMask,
      };
      const data = unwrap(wasm, where, m.precomputed
        ? raw.forwardPrecomputed(t, m.precomputed, opts)
        : raw.forward(t, m.tensor, opts));
      return { data, shape: t.rank === 3 ? [t.batch, t.tokens, dModel] : [t.tokens, dModel] };
    }

    forwardIncremental(x, cache, memory) {
      const where = 'TransformerDecoderLayer.forwardIncremental';
      const raw = super[READY](where);
      const t = readTensor(where, 'x', x);
      const { dModel } = this.config;
      checkActivation(where, 'x', t, dModel);
      const rawCache = kvRaw(wasm, where, 'cache', cache, 'KVCache');
      const m = readMemory(where, memory, t, dModel);
      // A memory tensor is projected for this call only.
      const temporary = m.precomputed ? null : this.precomputeMemory(memory);
      try {
        const precomputed = m.precomputed ?? kvHandles.get(temporary).raw;
        const data = unwrap(wasm, where, raw.forwardIncremental(t, rawCache, precomputed));
        return { data, shape: t.rank === 3 ? [t.batch, t.tokens, dModel] : [t.tokens, dModel] };
      } finally {
        temporary?.dispose();
      }
    }

    createKVCache(options) {
      const where = 'TransformerDecoderLayer.createKVCache';
      const raw = super[LIVE](where);
      const { batch, maxLength } = readCacheOptions(where, options);
      const { dModel } = this.config;
      return kv.newCache(where, dModel, dModel,
        (into) => raw.createKVCache(into, batch, maxLength));
    }

    precomputeMemory(memory, options) {
      const where = 'TransformerDecoderLayer.precomputeMemory';
      const raw = super[READY](where);
      const m = readTensor(where, 'memory', memory);
      checkActivation(where, 'memory', m, this.config.dModel);
      const mask = readPrecomputeOptions(where, options);
      checkMaskLength(where, 'options.keyPaddingMask', mask, m.batch, m.tokens);
      return kv.newPrecomputed(where, (into) => raw.precomputeMemory(into, m, mask));
    }
  }
  defineDispose(TransformerDecoderLayer);
  return TransformerDecoderLayer;
}

// ---------------------------------------------------------------------------
// Module functions: positionalEncoding, layerNorm
// ---------------------------------------------------------------------------

function makeFunctions(wasm, defaultBackend) {
  function positionalEncoding(t, dModel) {
    const where = 'positionalEncoding';
    for (const [name, v] of [['t', t], ['dModel', dModel]]) {
      if (requiredSize(where, name, v) === 0) {
        throw new RangeError(`${where}: ${name}: must be > 0, got 0`);
      }
    }
    return { data: unwrap(wasm, where, wasm.positionalEncoding(t, dModel)), shape: [t, dModel] };
  }

  function layerNorm(x, options) {
    const where = 'layerNorm';
    const t = readTensor(where, 'x', x);
    checkObject(where, 'options', options, ['gamma', 'beta', 'eps', 'backend']);
    const data = unwrap(wasm, where, wasm.layerNorm(t, {
      gamma: float32(where, 'options.gamma', options.gamma),
      beta: float32(where, 'options.beta', options.beta),
      eps: readEps(where, 'options.eps', options.eps),
      backend: readBackend(where, options, defaultBackend),
    }));
    return { data, shape: [...x.shape] };
  }

  return { positionalEncoding, layerNorm };
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

const isNode = typeof process === 'object' && process !== null &&
  typeof process.versions?.node === 'string' && typeof window === 'undefined';

// The builds, fastest first: dist/<file>.{js,wasm}. The imports are spelled
// out so that bundlers see every file.
const BUILDS = {
  'relaxed-simd': {
    file: 'simd_attention_relaxed',
    factory: () => import('./dist/simd_attention_relaxed.js'),
  },
  simd: { file: 'simd_attention_simd', factory: () => import('./dist/simd_attention_simd.js') },
  nosimd: {
    file: 'simd_attention_nosimd',
    factory: () => import('./dist/simd_attention_nosimd.js'),
  },
};
const WASM_FILES = Object.values(BUILDS).map((b) => `${b.file}.wasm`);

// Where a .wasm file is: a URL, or in Node a file path.
function wasmLocation(file, wasmPath) {
  if (wasmPath === undefined) return new URL(`./dist/${file}`, import.meta.url);
  const isUrl = typeof wasmPath !== 'string';
  let dir = isUrl ? wasmPath.href : wasmPath;
  if (/\.wasm$/i.test(dir)) {
    throw new TypeError('createAttentionModule: options.wasmPath: expected the ' +
      `folder (or URL prefix) that holds ${WASM_FILES.slice(0, -1).join(', ')} and ` +
      `${WASM_FILES.at(-1)}, got the file ${JSON.stringify(dir)}`);
  }
  if (!dir.endsWith('/')) dir += '/';
  // A scheme of two letters or more (file:, http:, blob: ...), not a drive letter.
  if (isUrl || /^[a-z][a-z0-9+.-]+:/i.test(dir)) return new URL(file, dir);
  if (isNode) return { path: dir + file };
  const base = typeof document === 'object' && document?.baseURI
    ? document.baseURI : globalThis.location?.href;
  return new URL(file, new URL(dir, base));
}

// Instantiates the .wasm at `where` with `imports`.
async function instantiate(where, imports) {
  const nodeFile = isNode && (where.path !== undefined || where.protocol === 'file:');
  if (nodeFile) {
    // emcc 3.1.6's own loader would fetch() the file path here, which Node
    // rejects; read the file instead. The specifier is hidden from bundlers.
    const fsName = 'node:fs/promises';
    const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsName);
    const file = where.path ?? where;
    let bytes;
    try {
      bytes = await fs.readFile(file);
    } catch (e) {
      throw new Error(`createAttentionModule: cannot read the wasm file ${file} ` +
        `(${e.code ?? e.message}); build the package (npm run build) or set ` +
        'options.wasmPath', { cause: e });
    }
    return WebAssembly.instantiate(bytes, imports);
  }
  const response = await fetch(where);
  if (!response.ok) {
    throw new Error(`createAttentionModule: fetching ${where} failed: HTTP ` +
      `${response.status}; set options.wasmPath to where the .wasm files are served`);
  }
  if (typeof WebAssembly.instantiateStreaming === 'function') {
    try {
      return await WebAssembly.instantiateStreaming(response.clone(), imports);
    } catch {
      // E.g. served without Content-Type: application/wasm: compile from the
      // bytes instead (a real compile error shows up again there).
    }
  }
  return WebAssembly.instantiate(await response.arrayBuffer(), imports);
}

// Runs the emcc factory with our instantiateWasm hook; rejects if loading
// the .wasm fails (emcc would otherwise never settle its promise).
async function startBuild(factory, where) {
  let rejectLoad;
  const loadFailed = new Promise((_, reject) => { rejectLoad = reject; });
  const ready = factory({
    instantiateWasm(imports, receiveInstance) {
      instantiate(where, imports).then(
        ({ instance, module }) => receiveInstance(instance, module), rejectLoad);
      return {}; // exports arrive asynchronously
    },
  });
  return Promise.race([ready, loadFailed]);
}

const MODULE_OPTION_KEYS = ['backend', 'simd', 'relaxedSimd', 'wasmPath'];

// Which build to load: the fastest the engine runs, unless forced.
function pickBuild(where, forceSimd, forceRelaxed) {
  if (forceSimd === false && forceRelaxed === true) {
    throw new RangeError(`${where}: options.relaxedSimd: true asks for the relaxed-SIMD ` +
      'build, which needs WebAssembly SIMD, but options.simd is false; pass only one of them');
  }
  const hasSimd = wasmSimdSupported();
  if (forceSimd === true && !hasSimd) {
    throw new Error(`${where}: options.simd: true asks for the SIMD build, but this ` +
      'engine does not support WebAssembly SIMD; omit the option or pass false');
  }
  const hasRelaxed = hasSimd && wasmRelaxedSimdSupported();
  if (forceRelaxed === true && !hasRelaxed) {
    throw new Error(`${where}: options.relaxedSimd: true asks for the relaxed-SIMD build, ` +
      'but this engine does not support WebAssembly relaxed SIMD (Chrome/Edge 114+, ' +
      'Node 22+; Node 20 with --experimental-wasm-relaxed-simd); omit the option or ' +
      'pass false');
  }
  if (!(forceSimd ?? hasSimd)) return 'nosimd';
  return (forceRelaxed ?? hasRelaxed) ? 'relaxed-simd' : 'simd';
}

export async function createAttentionModule(options = {}) {
  const where = 'createAttentionModule';
  checkObject(where, 'options', options, MODULE_OPTION_KEYS);
  if (options.backend !== undefined && typeof options.backend !== 'string') {
    throw new TypeError(`${where}: options.backend: expected a string, got ` +
      `${describe(options.backend)}`);
  }
  const forceSimd = optionalBoolean(where, 'options.simd', options.simd, undefined);
  const forceRelaxed = optionalBoolean(where, 'options.relaxedSimd', options.relaxedSimd,
    undefined);
  const isUrl = (v) => v !== null && typeof v === 'object' && typeof v.href === 'string';
  if (options.wasmPath !== undefined && typeof options.wasmPath !== 'string' &&
      !isUrl(options.wasmPath)) {
    throw new TypeError(`${where}: options.wasmPath: expected a string or URL, got ` +
      `${describe(options.wasmPath)}`);
  }
  if (typeof WebAssembly !== 'object') {
    throw new Error(`${where}: this JavaScript engine has no WebAssembly`);
  }
  if (!validates(EH_PROBE)) {
    throw new Error(`${where}: this engine lacks WebAssembly exception handling, which ` +
      'every build needs (Chrome/Edge 95+, Firefox 100+, Safari 15.2+, Node 17+)');
  }
  const build = pickBuild(where, forceSimd, forceRelaxed);
  const file = `${BUILDS[build].file}.wasm`;
  const factory = (await BUILDS[build].factory()).default;
  const wasm = await startBuild(factory, wasmLocation(file, options.wasmPath));
  if (wasm.build() !== build) {
    throw new Error(`${where}: ${file} is the ${wasm.build()} build, not the ${build} ` +
      'build; the files in dist/ are mixed up');
  }

  const backends = Object.freeze(wasm.backends());
  const backend = options.backend ?? backends[0];
  const { kernels } = unwrap(wasm, where, wasm.kernelInfo(backend));

  const reclaimer = makeReclaimer();
  const kv = makeKeyValueClasses(wasm, reclaimer);
  return Object.freeze({
    backend,
    build,
    simd: build !== 'nosimd',
    backends,
    kernels,
    MultiHeadAttention: makeMultiHeadAttention(wasm, reclaimer, backend, kv),
    TransformerEncoderLayer: makeEncoderLayer(wasm, reclaimer, backend),
    TransformerDecoderLayer: makeDecoderLayer(wasm, reclaimer, backend, kv),
    ...makeFunctions(wasm, backend),
    memoryStats: () => {
      const { heapBytes, maxHeapBytes, allocatedBytes } = wasm.memoryStats();
      return { heapBytes, maxHeapBytes, allocatedBytes, jsHandles: wasm.count_emval_handles() };
    },
  });
}

export default createAttentionModule;
