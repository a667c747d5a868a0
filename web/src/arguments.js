// Checks of the arguments the JS side can judge by itself (types, integers,
// keys of option objects), and descriptions of values for their messages.
import { OPTION_KEYS } from './option-keys.js';

// Realm-independent (a Float32Array made in a worker or an iframe passes).
function typedArrayTag(v) {
  return ArrayBuffer.isView(v) ? Object.prototype.toString.call(v).slice(8, -1) : '';
}
const isFloat32Array = (v) => typedArrayTag(v) === 'Float32Array';
const isUint8Array = (v) => typedArrayTag(v) === 'Uint8Array';

export function describe(v) {
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
  if (typeof v === 'symbol') return 'a symbol';
  const tag = Object.prototype.toString.call(v).slice(8, -1);
  const name = tag === 'Object' ? v.constructor?.name : undefined;
  return `an object (${typeof name === 'string' && name !== '' ? name : tag})`;
}

export function checkObject(where, name, v, allowed) {
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

// A call's options (undefined: none given), an object of `allowed` keys.
export function optionsObject(where, options, allowed) {
  const o = options === undefined ? {} : options;
  checkObject(where, 'options', o, allowed);
  return o;
}

export function optionalBoolean(where, name, v, fallback) {
  if (v === undefined) return fallback;
  if (typeof v !== 'boolean') {
    throw new TypeError(`${where}: ${name}: expected a boolean, got ${describe(v)}`);
  }
  return v;
}

// A size from JS: a non-negative integer (0 is left to C++ to reject or to
// mean "default").
export function optionalSize(where, name, v) {
  if (v === undefined) return 0;
  if (typeof v !== 'number') {
    throw new TypeError(`${where}: ${name}: expected an integer, got ${describe(v)}`);
  }
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
    throw new RangeError(`${where}: ${name}: expected a non-negative integer, got ${v}`);
  }
  return v;
}

export function requiredSize(where, name, v) {
  if (v === undefined) {
    throw new TypeError(`${where}: ${name}: required, expected a positive integer`);
  }
  return optionalSize(where, name, v);
}

export function float32(where, name, v, optional = false) {
  if (optional && v === undefined) return undefined;
  if (!isFloat32Array(v)) {
    throw new TypeError(`${where}: ${name}: expected a Float32Array, got ${describe(v)}`);
  }
  return v;
}

// A weight matrix: a Float32Array, or already in the storage type of an
// object whose config.weights is 'f16' or 'bf16' (a Uint16Array of their
// bits; a Float16Array, where the engine has one, is read as its bits) or
// 'int8' ({ values: Int8Array, scales: Float32Array }) or 'q4' ({ q4:
// Uint8Array }, GGUF q4_0 blocks). Whether the form fits config.weights,
// and its lengths and values, are C++'s to judge.
export function weightMatrix(where, name, v) {
  const tag = typedArrayTag(v);
  if (tag === 'Float32Array' || tag === 'Uint16Array') return v;
  if (tag === 'Float16Array') return halfBits(v);
  if (v !== null && typeof v === 'object' && !ArrayBuffer.isView(v) && !Array.isArray(v) &&
      v.q4 !== undefined) {
    checkObject(where, name, v, OPTION_KEYS.Q4Weights);
    if (typedArrayTag(v.q4) !== 'Uint8Array') {
      throw new TypeError(`${where}: ${name}.q4: expected a Uint8Array, got ${describe(v.q4)}`);
    }
    return { q4: v.q4 };
  }
  if (v !== null && typeof v === 'object' && !ArrayBuffer.isView(v) && !Array.isArray(v) &&
      (v.values !== undefined || v.scales !== undefined)) {
    checkObject(where, name, v, OPTION_KEYS.Int8Weights);
    if (typedArrayTag(v.values) !== 'Int8Array') {
      throw new TypeError(`${where}: ${name}.values: expected an Int8Array, got ` +
        `${describe(v.values)}`);
    }
    return { values: v.values, scales: float32(where, `${name}.scales`, v.scales) };
  }
  throw new TypeError(`${where}: ${name}: expected a Float32Array (or, for config.weights ` +
    `'f16' or 'bf16', a Uint16Array of their bits; for 'int8', { values: Int8Array, ` +
    `scales: Float32Array }; for 'q4', { q4: Uint8Array }), got ${describe(v)}`);
}

// A matrix as the glue copies it (JsMatrix in bindings/glue.h): a
// Float32Array as it is, the stored forms as their bytes.
export function glueMatrix(m) {
  // (A view of a detached buffer has no bytes, and no buffer to view.)
  const bytes = (a) => (a.byteLength === 0 ? new Uint8Array(0)
    : new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  if (m === undefined || typeof m !== 'object' || m.BYTES_PER_ELEMENT === 4) return m;
  if (m.q4 !== undefined) return { q4: bytes(m.q4) };
  return m.scales !== undefined ? { values: bytes(m.values), scales: m.scales } : { bits: bytes(m) };
}

// A PyTorch weight matrix: a Float32Array, or float16/bfloat16 bits for an
// object whose config.weights is that type (a Uint16Array or Float16Array).
export function torchMatrix(where, name, v) {
  const tag = typedArrayTag(v);
  if (tag === 'Float32Array' || tag === 'Uint16Array') return v;
  if (tag === 'Float16Array') return halfBits(v);
  throw new TypeError(`${where}: ${name}: expected a Float32Array (or, for config.weights ` +
    `'f16' or 'bf16', a Uint16Array of their bits), got ${describe(v)}`);
}

// A Float16Array's bits, without a copy.
function halfBits(v) {
  return new Uint16Array(v.buffer, v.byteOffset, v.length);
}

// config.weights or config.cacheType (`field`): 'f32' when omitted; which
// names exist is C++'s to judge (its message lists them, as module.choices
// does).
export function readStorageType(where, config, field) {
  const v = config[field];
  if (v === undefined) return 'f32';
  if (typeof v !== 'string') {
    throw new TypeError(`${where}: config.${field}: expected a string (a name of ` +
      `module.choices.${field}), got ${describe(v)}`);
  }
  return v;
}

// The module's backend unless the config names one.
export function readBackend(where, config, defaultBackend) {
  const backend = config.backend === undefined ? defaultBackend : config.backend;
  if (typeof backend !== 'string') {
    throw new TypeError(`${where}: config.backend: expected a string, got ${describe(backend)}`);
  }
  return backend;
}

// C++ reads an empty mask as no mask (its spans cannot tell "not given"
// from "empty"), so a mask given with no values is refused here, the one
// place that can tell them apart.
function nonEmptyMask(where, name, v) {
  if (v !== undefined && v.length === 0) {
    throw new RangeError(`${where}: ${name}: given with no values; omit the option instead`);
  }
  return v;
}

export function optionalMask(where, name, v) {
  if (v !== undefined && !isUint8Array(v)) {
    throw new TypeError(`${where}: ${name}: expected a Uint8Array ` +
      `(1 = real token, 0 = padding), got ${describe(v)}`);
  }
  return nonEmptyMask(where, name, v);
}

// {data, shape} with data of `check`'s type.
export function tensor(where, name, t, check) {
  if (t === null || typeof t !== 'object' || ArrayBuffer.isView(t) || Array.isArray(t)) {
    throw new TypeError(`${where}: ${name}: expected a tensor { data, shape: number[] }, ` +
      `got ${describe(t)}`);
  }
  return { data: check(where, `${name}.data`, t.data), shape: integers(where, `${name}.shape`, t.shape) };
}

// A mask given as its data alone (C++ infers [Tq, Tk] or [B, H, Tq, Tk] from
// its length) or as a tensor with the shape it broadcasts from: { data,
// shape? }, or {} when omitted. check: additiveValues or booleanValues.
export function shapedMask(where, name, v, check) {
  if (v === undefined) return {};
  if (ArrayBuffer.isView(v)) return { data: check(where, name, v) };
  return tensor(where, name, v, check);
}

// An additive mask's values: a non-empty Float32Array (may hold -Infinity).
export function additiveValues(where, name, v) {
  return nonEmptyMask(where, name, float32(where, name, v));
}

// A boolean mask's values: a non-empty Uint8Array, 1 = may attend.
export function booleanValues(where, name, v) {
  if (!isUint8Array(v)) {
    throw new TypeError(`${where}: ${name}: expected a Uint8Array (1 = may attend, ` +
      `0 = masked), got ${describe(v)}`);
  }
  return nonEmptyMask(where, name, v);
}

// Valid key lengths per batch item: a non-empty array of integers.
export function optionalLengths(where, name, v) {
  return v === undefined ? undefined : nonEmptyMask(where, name, integers(where, name, v));
}

// config.threads: 1 when omitted (0 = every logical processor).
// An object's threads; 0 (also when omitted) is the module's: one, or the
// threads of a threaded build (C++ resolves it).
export function readThreads(where, v) {
  return optionalSize(where, 'config.threads', v);
}

// LayerNorm's eps, 1e-5 when omitted (its range is C++'s to judge).
export function readEps(where, name, v) {
  if (v === undefined) return 1e-5;
  if (typeof v !== 'number') {
    throw new TypeError(`${where}: ${name}: expected a number, got ${describe(v)}`);
  }
  return v;
}

const isInteger = (x) => typeof x === 'number' && Number.isInteger(x);

// Whether every element is an integer, holes too (read as undefined):
// every() skips holes, walking all of a sparse array of length 2^32 - 1.
function allIntegers(list) {
  for (let i = 0; i < list.length; ++i) if (!isInteger(list[i])) return false;
  return true;
}

// An array (or typed array) of `length` integers.
export function integers(where, name, v, length) {
  const list = Array.isArray(v) ? v
    // (slice, not Array.from: a view of a detached buffer has no elements
    // to iterate, and its iterator throws.)
    : ArrayBuffer.isView(v) && 'length' in v
      ? Array.prototype.slice.call(/** @type {ArrayLike<number>} */ (/** @type {unknown} */ (v)))
      : undefined;
  if (list === undefined || (length !== undefined && list.length !== length) ||
      !allIntegers(list)) {
    throw new TypeError(`${where}: ${name}: expected an array of ` +
      `${length === undefined ? '' : `${length} `}integers, got ${describe(v)}`);
  }
  return list;
}

export function optionalNumber(where, name, v) {
  if (v !== undefined && typeof v !== 'number') {
    throw new TypeError(`${where}: ${name}: expected a number, got ${describe(v)}`);
  }
  return v;
}

// options.queryOffset: an integer (every batch item's) or an array of them
// (one each), given to C++ as an array.
export function readQueryOffset(where, v) {
  if (v === undefined || Number.isInteger(v)) return v === undefined ? v : [v];
  if (typeof v === 'number') {
    throw new TypeError(`${where}: options.queryOffset: expected an integer or an array of ` +
      `integers, got ${describe(v)}`);
  }
  return optionalLengths(where, 'options.queryOffset', v);
}

// options.returnScores: a boolean or a stage's name (C++ judges it), as
// the glue takes it: { returnScores: boolean, scoresStage?: name }.
export function readReturnScores(where, v) {
  if (v !== undefined && typeof v !== 'boolean' && typeof v !== 'string') {
    throw new TypeError(`${where}: options.returnScores: expected a boolean or 'scaled', ` +
      `'capped' or 'masked', got ${describe(v)}`);
  }
  return { returnScores: v !== undefined && v !== false,
    scoresStage: typeof v === 'string' ? v : undefined };
}
