// simd-attention: multi-head attention as SIMD C++ kernels compiled to
// WebAssembly. This file is the whole JS side of the package: it picks and
// loads one of the two wasm builds (dist/), checks what is cheap and
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

// (module (func try catch_all end)): the exception-handling instructions both
// builds use (C++ exceptions compiled with -fwasm-exceptions).
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

/** Whether this JS engine runs WebAssembly SIMD (the fast build). */
export function wasmSimdSupported() {
  return validates(SIMD_PROBE);
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
  return `an object (${Object.prototype.toString.call(v).slice(8, -1)})`;
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
  ['kdim', 'kDim'], ['vdim', 'vDim'],
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
  const message = `${where}: ${jsNames(result.message)}`;
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

// Warns about objects that were never disposed. Embind frees their C++ side
// once they are garbage-collected, but that may be much later: dispose() is
// how memory is meant to be released.
const leakWarnings = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry((kind) => {
    console.warn(`simd-attention: a ${kind} was garbage-collected without ` +
      'dispose(); call dispose() (or declare it with `using`) when done with it');
  })
  : null;

// obj[Symbol.dispose]() = obj.dispose(), under Symbol.dispose and under the
// Symbol.for('Symbol.dispose') that polyfills use where it is missing.
function defineDispose(Class) {
  const value = function disposeResource() { this.dispose(); };
  for (const symbol of disposeSymbols) {
    Object.defineProperty(Class.prototype, symbol, { value, writable: true, configurable: true });
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
  'returnAttnWeights', 'returnPerHeadOutput'];

function makeMultiHeadAttention(wasm, defaultBackend) {
  class MultiHeadAttention {
    #raw;
    #hasWeights = false;
    #info;
    #token = {};

    constructor(config) {
      const where = 'MultiHeadAttention';
      checkObject(where, 'config', config, CONFIG_KEYS);
      const backend = config.backend === undefined ? defaultBackend : config.backend;
      if (typeof backend !== 'string') {
        throw new TypeError(`${where}: config.backend: expected a string, got ${describe(backend)}`);
      }
      const raw = new wasm.MhaBinding({
        dModel: requiredSize(where, 'config.dModel', config.dModel),
        numHeads: requiredSize(where, 'config.numHeads', config.numHeads),
        kDim: optionalSize(where, 'config.kDim', config.kDim),
        vDim: optionalSize(where, 'config.vDim', config.vDim),
        headDimV: optionalSize(where, 'config.headDimV', config.headDimV),
        bias: optionalBoolean(where, 'config.bias', config.bias, true),
        backend,
      });
      try {
        unwrap(wasm, where, raw.takeError());
        this.#info = Object.freeze(unwrap(wasm, where, raw.info()));
      } catch (e) {
        raw.delete();
        throw e;
      }
      this.#raw = raw;
      leakWarnings?.register(this, 'MultiHeadAttention', this.#token);
    }

    /** The config with defaults filled in (kDim, vDim, headDim, headDimV, backend). */
    get config() {
      const { kernels, ...config } = this.#info;
      return config;
    }

    /** The kernel table this object runs on, e.g. "highway:WASM". */
    get kernels() {
      return this.#info.kernels;
    }

    get disposed() {
      return this.#raw === null;
    }

    #live(where) {
      if (this.#raw === null) {
        throw new Error(`${where}: this MultiHeadAttention was disposed; ` +
          'create a new one');
      }
      return this.#raw;
    }

    setWeights(weights) {
      const where = 'MultiHeadAttention.setWeights';
      const raw = this.#live(where);
      checkObject(where, 'weights', weights, WEIGHT_KEYS);
      const { bias } = this.#info;
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
      this.#hasWeights = true;
    }

    setWeightsFromPyTorch(state) {
      const where = 'MultiHeadAttention.setWeightsFromPyTorch';
      const raw = this.#live(where);
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
      this.#hasWeights = true;
    }

    forward(query, key, value, options) {
      const where = 'MultiHeadAttention.forward';
      const raw = this.#live(where);
      if (!this.#hasWeights) {
        throw new Error(`${where}: no weights yet; call setWeights() or ` +
          'setWeightsFromPyTorch() first');
      }
      const q = readTensor(where, 'query', query);
      // The same tensor as key (or value) is copied once, not twice.
      const selfAttention = key === undefined || key === null || key === query;
      const k = selfAttention ? undefined : readTensor(where, 'key', key);
      if (selfAttention && value !== undefined && value !== null && value !== query) {
        throw new TypeError(`${where}: value given without key; pass key too ` +
          '(value omitted means value = key)');
      }
      const v = selfAttention || value === undefined || value === null || value === key
        ? undefined : readTensor(where, 'value', value);
      const o = options === undefined ? {} : options;
      checkObject(where, 'options', o, FORWARD_OPTION_KEYS);
      if (o.keyPaddingMask !== undefined && !isUint8Array(o.keyPaddingMask)) {
        throw new TypeError(`${where}: options.keyPaddingMask: expected a Uint8Array ` +
          `(1 = real token, 0 = padding), got ${describe(o.keyPaddingMask)}`);
      }
      const r = unwrap(wasm, where, raw.forward(q, k, v, {
        causal: optionalBoolean(where, 'options.causal', o.causal, false),
        keyPaddingMask: o.keyPaddingMask,
        attnMask: float32(where, 'options.attnMask', o.attnMask, true),
        needWeights: optionalBoolean(where, 'options.returnAttnWeights', o.returnAttnWeights, false),
        needPerHeadOutput: optionalBoolean(where, 'options.returnPerHeadOutput',
          o.returnPerHeadOutput, false),
      }));
      // An unbatched [T, features] query gives unbatched results.
      const batched = (dims) => (q.rank === 3 ? [r.batch, ...dims] : dims);
      const { numHeads: h, dModel } = this.#info;
      const out = { output: { data: r.output, shape: batched([r.tq, dModel]) } };
      if (r.attnWeights) out.attnWeights = { data: r.attnWeights, shape: batched([h, r.tq, r.tk]) };
      if (r.perHeadOutput) {
        out.perHeadOutput = { data: r.perHeadOutput, shape: batched([h, r.tq, dModel]) };
      }
      return out;
    }

    dispose() {
      if (this.#raw === null) return;
      this.#raw.delete();
      this.#raw = null;
      leakWarnings?.unregister(this.#token);
    }
  }
  defineDispose(MultiHeadAttention);
  return MultiHeadAttention;
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

const isNode = typeof process === 'object' && process !== null &&
  typeof process.versions?.node === 'string' && typeof window === 'undefined';

const BUILD_FILES = ['simd_attention_simd.wasm', 'simd_attention_nosimd.wasm'];

// Where a .wasm file is: a URL, or in Node a file path.
function wasmLocation(file, wasmPath) {
  if (wasmPath === undefined) return new URL(`./dist/${file}`, import.meta.url);
  const isUrl = typeof wasmPath !== 'string';
  let dir = isUrl ? wasmPath.href : wasmPath;
  if (/\.wasm$/i.test(dir)) {
    throw new TypeError('createAttentionModule: options.wasmPath: expected the ' +
      `folder (or URL prefix) that holds ${BUILD_FILES.join(' and ')}, got the file ` +
      `${JSON.stringify(dir)}`);
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

const MODULE_OPTION_KEYS = ['backend', 'simd', 'wasmPath'];

export async function createAttentionModule(options = {}) {
  const where = 'createAttentionModule';
  checkObject(where, 'options', options, MODULE_OPTION_KEYS);
  if (options.backend !== undefined && typeof options.backend !== 'string') {
    throw new TypeError(`${where}: options.backend: expected a string, got ` +
      `${describe(options.backend)}`);
  }
  const forceSimd = optionalBoolean(where, 'options.simd', options.simd, undefined);
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
      'both builds need (Chrome/Edge 95+, Firefox 100+, Safari 15.2+, Node 17+)');
  }
  const hasSimd = wasmSimdSupported();
  if (forceSimd === true && !hasSimd) {
    throw new Error(`${where}: options.simd: true asks for the SIMD build, but this ` +
      'engine does not support WebAssembly SIMD; omit the option or pass false');
  }
  const simd = forceSimd ?? hasSimd;
  const file = simd ? BUILD_FILES[0] : BUILD_FILES[1];
  const factory = (simd
    ? await import('./dist/simd_attention_simd.js')
    : await import('./dist/simd_attention_nosimd.js')).default;
  const wasm = await startBuild(factory, wasmLocation(file, options.wasmPath));
  if (wasm.compiledWithSimd() !== simd) {
    throw new Error(`${where}: ${file} is the ${simd ? 'non-' : ''}SIMD build; the ` +
      'files in dist/ are mixed up');
  }

  const backends = Object.freeze(wasm.backends());
  const backend = options.backend ?? backends[0];
  const { kernels } = unwrap(wasm, where, wasm.kernelInfo(backend));

  return Object.freeze({
    backend,
    simd,
    backends,
    kernels,
    MultiHeadAttention: makeMultiHeadAttention(wasm, backend),
    memoryStats: () => {
      const { heapBytes, maxHeapBytes, allocatedBytes } = wasm.memoryStats();
      return { heapBytes, maxHeapBytes, allocatedBytes, jsHandles: wasm.count_emval_handles() };
    },
  });
}

export default createAttentionModule;
