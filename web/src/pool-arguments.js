// The arguments of the pool's calls: copied when a call is made, and carried
// to the workers so that their synchronous objects judge what the caller
// gave.
//
// A pooled method returns its promise before its call runs (the calls on one
// object run in turn), so it copies its arguments first: the caller may
// write its next input into the same arrays at once, and the call still
// computes with the values it was given. Copies, not transfers: callers keep
// their arrays. A copy is plain data read as the synchronous API reads the
// argument, by the place it has (a schema below): a tensor's `data` and
// `shape`, an options object's own keys (unknown ones too, which the
// synchronous object names, a key named __proto__ included) and its known
// keys wherever they are (inherited, or getters of a class), anything else
// whole: typed arrays and buffers copied, arrays element by element,
// objects from their own enumerable properties. The elements of typed arrays
// are copied once all of the call's arguments are read, as the synchronous
// API hands them to C++ after reading its arguments (whose getters may write
// into them); a detached or shrunk view as an empty one of its type, as the
// synchronous API reads it; a DataView, whose bytes the package never reads,
// as an empty one. The package's objects (a pool's, a module's) stay
// themselves, and so do functions and symbols, which hold nothing to read
// later; an object of a class keeps its class's name for describe()
// (arguments.js) on a stand-in prototype.
//
// A read that throws (a getter, a Proxy's trap) does not end the copy: the
// copy keeps the error where it was thrown and throws it where the copy is
// read, so that the call meets it where the synchronous API reads that
// value, after the errors of what it reads first. A key whose read threw is
// an accessor that throws it; an object whose keys could not be listed, a
// copy of what could be read (its class, its known keys) that throws it
// when its keys are listed (an array is read by index instead); an object
// whose class name could not be read has a `constructor` that throws it,
// which describe() reads; a value that could not be read at all (a revoked
// Proxy) throws it at any use but `instanceof`. Such errors are marked as
// the caller's (pool-join.js), which the pool throws as they are.
//
// A message cannot carry functions, symbols, class names or errors to throw,
// so toMessage takes them out and notes where they were, and the worker's
// fromMessage puts stand-ins back: a function (never called), a symbol of
// the same description, an object of the same class name, the accessors and
// values that throw an error of the same class and message. The workers'
// synchronous objects then refuse or ignore them as the synchronous API does
// the originals, with its messages.
import { holdsKeyValues } from './caches.js';
import { DECODER_WEIGHT_GROUPS, ENCODER_WEIGHT_GROUPS, OPTION_KEYS, WEIGHT_MATRICES }
  from './option-keys.js';
import { errorMessage, markFromCaller, rebuild } from './pool-join.js';
import { ownerOf } from './wasm-object.js';

// The pool's objects (KVCaches, attentions, layers of every pool): passed by
// reference, the pool sends their refs.
export const POOL_OBJECTS = new WeakSet();

// The package's objects, a pool's or a module's, which are not data: kept
// as themselves, for the pool to use or refuse by what they are.
const isPackageObject = (v) => POOL_OBJECTS.has(v) || holdsKeyValues(v) ||
  ownerOf(v) !== undefined;

const tagOf = (v) => Object.prototype.toString.call(v).slice(8, -1);

// The name describe() gives an object: its tag, or a plain one's class.
function className(v) {
  const tag = tagOf(v);
  const name = tag === 'Object' ? v.constructor?.name : undefined;
  return typeof name === 'string' && name !== '' ? name : tag;
}

// A prototype under which an object is described as `name`.
function standInPrototype(name) {
  return Object.create(Object.prototype, { constructor: { value: { name } } });
}

// ---------------------------------------------------------------------------
// Errors kept in copies
// ---------------------------------------------------------------------------

// The accessors and values of copies that throw: -> their error.
const THROWN = new WeakMap();
// Copies whose keys cannot be listed: -> { error, target }, target the
// copy of what could be read.
const UNLISTED = new WeakMap();

function throwingAccessor(error) {
  const get = () => { throw error; };
  THROWN.set(get, error);
  return { get, enumerable: true, configurable: true };
}

// Its prototype stays readable, for the pool's `instanceof` tests.
function throwingValue(error) {
  const fail = () => { throw error; };
  const value = new Proxy({}, { get: fail, set: fail, has: fail, ownKeys: fail,
    getOwnPropertyDescriptor: fail, defineProperty: fail, deleteProperty: fail });
  THROWN.set(value, error);
  return value;
}

function unlisted(target, error) {
  const value = new Proxy(target, { ownKeys: () => { throw error; } });
  UNLISTED.set(value, { error, target });
  return value;
}

// A prototype under which describe() throws `error`.
function throwingPrototype(error) {
  return Object.create(Object.prototype, { constructor: throwingAccessor(error) });
}

// The class of a copy as its prototype gives it (its own keys, a key named
// constructor too, travel as data): { name } or, for a prototype whose
// constructor throws, { error }.
function prototypeClass(v) {
  const proto = Object.getPrototypeOf(v);
  const { get, value } = (proto && Object.getOwnPropertyDescriptor(proto, 'constructor')) ?? {};
  if (get !== undefined) return { error: THROWN.get(get) };
  const name = value?.name;
  return { name: typeof name === 'string' && name !== '' ? name : 'Object' };
}

// v[key] of a copy where reading it throws nothing: undefined where it
// would throw (the synchronous object the call reaches meets that error
// where the synchronous API does), or where v is not an object.
export function plainMember(v, key) {
  if (v === null || typeof v !== 'object' || THROWN.has(v)) return undefined;
  const property = Object.getOwnPropertyDescriptor(v, key);
  return property === undefined ? v[key] : property.get === undefined ? property.value : undefined;
}

// An own data property, a key named __proto__ too.
function define(out, key, value) {
  Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
}

// A copy `v` with `members` ({ key: value }) in place of its own, its other
// properties as they are (those that throw too) and its prototype.
export function withMembers(v, members) {
  const out = Object.create(Object.getPrototypeOf(v), Object.getOwnPropertyDescriptors(v));
  for (const [key, x] of Object.entries(members)) define(out, key, x);
  return out;
}

// copyValue(x), or a value that throws what copying threw.
function copied(x, copyValue) {
  try {
    return copyValue(x);
  } catch (e) {
    return throwingValue(markFromCaller(e));
  }
}

// out[key] = copyValue(read()), or an accessor that throws what read() threw.
function put(out, key, read, copyValue) {
  let x;
  try {
    x = read();
  } catch (e) {
    Object.defineProperty(out, key, throwingAccessor(markFromCaller(e)));
    return;
  }
  define(out, key, copied(x, copyValue));
}

// ---------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------

// A typed array's type name, length and memory as the engine knows them (a
// typed array may have own properties of those names); the type undefined
// for a DataView.
const typedArrayGetter = (key) => Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Int8Array.prototype), key).get;
const typedTag = typedArrayGetter(Symbol.toStringTag);
const typedLength = typedArrayGetter('length');
const typedBuffer = typedArrayGetter('buffer');
const typedOffset = typedArrayGetter('byteOffset');

// While copyArguments runs: the typed arrays to fill at its end, [copy,
// original].
let fills = null;

function copyView(v) {
  const tag = typedTag.call(v);
  if (tag === undefined) return new DataView(new ArrayBuffer(0));
  // This realm's constructor of the same name: a copy that owns its memory,
  // whatever the original's class (a Node Buffer's slice() shares it).
  const copy = new globalThis[tag](typedLength.call(v));
  if (fills === null) fill(copy, v);
  else fills.push([copy, v]);
  return copy;
}

// The elements `original` has, up to the copy's length (its buffer may have
// been detached, shrunk or grown since the copy was made).
function fill(copy, original) {
  const length = typedLength.call(original);
  const n = Math.min(copy.length, length);
  if (n === 0) return;
  copy.set(n === length ? original
    : new copy.constructor(typedBuffer.call(original), typedOffset.call(original), n));
}

// The intrinsic that copies `v` if it is an ArrayBuffer or a
// SharedArrayBuffer (by what it is, not by its tag, which an object or a
// Proxy may give), else undefined.
const BUFFERS = [ArrayBuffer, globalThis.SharedArrayBuffer].filter((B) => typeof B === 'function');
function bufferCopier(v) {
  for (const Type of BUFFERS) {
    const bytes = Object.getOwnPropertyDescriptor(Type.prototype, 'byteLength').get;
    try {
      bytes.call(v);
    } catch {
      continue; // not of this type
    }
    // (A detached ArrayBuffer has no bytes, and cannot be sliced.)
    return () => (bytes.call(v) === 0 ? new Type(0) : Type.prototype.slice.call(v, 0));
  }
  return undefined;
}

// A plain object described as `v` is (see className), or, where reading its
// class throws, one whose describe() throws that.
function like(v) {
  let name;
  try {
    name = className(v);
  } catch (e) {
    return Object.create(throwingPrototype(markFromCaller(e)));
  }
  return name === 'Object' ? {} : Object.create(standInPrototype(name));
}

// The most elements of an array whose keys cannot be listed read by index.
const INDEXED_ELEMENTS = 4096;

// A record: an object, not an array, a typed array or the package's object.
const isRecord = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) &&
  !ArrayBuffer.isView(v) && !isPackageObject(v);

// Any value, whole (see the top of this file). Shared and cyclic objects
// stay shared and cyclic.
export function whole(value) {
  const copies = new Map();
  const copy = (v) => {
    if (v === null || typeof v !== 'object' || isPackageObject(v)) return v;
    if (copies.has(v)) return copies.get(v);
    if (ArrayBuffer.isView(v)) {
      copies.set(v, copyView(v));
      return copies.get(v);
    }
    const buffer = bufferCopier(v);
    if (buffer !== undefined) {
      copies.set(v, buffer());
      return copies.get(v);
    }
    // What may throw for the whole value before it is shared.
    const array = Array.isArray(v);
    const out = array ? new Array(v.length) : like(v);
    let keys;
    try {
      keys = Object.keys(v);
    } catch (e) {
      // An array is read by index instead, as the synchronous API reads one
      // (up to a bound).
      if (!array) {
        copies.set(v, unlisted(out, markFromCaller(e)));
        return copies.get(v);
      }
      keys = Array.from({ length: Math.min(out.length, INDEXED_ELEMENTS) }, (_, i) => i)
        .filter((i) => i in v);
    }
    copies.set(v, out);
    for (const key of keys) put(out, key, () => v[key], copy);
    return out;
  };
  return copied(value, copy);
}

// { data, shape } (a pool object, or what is not a record, whole).
export function tensor(v) {
  if (!isRecord(v)) return whole(v);
  const out = like(v);
  for (const key of ['data', 'shape']) put(out, key, () => v[key], whole);
  return out;
}

// An object whose keys are `keys` (their values copied by fields[key], by
// default whole): its own keys in their order, then the known keys it has
// elsewhere; and `alsoRead`, keys that the synchronous method reads though
// it does not take them (not enumerable in the copy, so that they are read
// as there and not named as unknown). What is not a record, whole.
export function record(keys, fields = {}, alsoRead = []) {
  const fieldOf = (key) => (Object.hasOwn(fields, key) ? fields[key] : whole);
  return (v) => {
    if (!isRecord(v)) return whole(v);
    const out = like(v);
    let listed;
    try {
      listed = Object.keys(v);
    } catch (e) {
      listed = markFromCaller(e);
    }
    if (Array.isArray(listed)) for (const key of listed) put(out, key, () => v[key], fieldOf(key));
    for (const key of [...keys, ...alsoRead]) {
      if (Object.hasOwn(out, key)) continue;
      const enumerable = !alsoRead.includes(key);
      let x;
      try {
        x = v[key];
      } catch (e) {
        Object.defineProperty(out, key, { ...throwingAccessor(markFromCaller(e)), enumerable });
        continue;
      }
      if (x !== undefined) {
        Object.defineProperty(out, key, { value: copied(x, fieldOf(key)), writable: true,
          enumerable, configurable: true });
      }
    }
    return Array.isArray(listed) ? out : unlisted(out, listed);
  };
}

// A call's arguments copied now by `schemas` (one per argument), for its
// job to take later: a function that returns the copies (which throw what
// reading the arguments threw where they are read). The same object given
// twice (key = query) is one copy, as the synchronous API, which compares
// them, sees one object.
export function copyArguments(args, schemas) {
  const copies = new Map(); // argument -> [schema, copy]
  // (A getter may make a call of the pool, which copies its own arguments.)
  const outer = fills;
  fills = [];
  let taken;
  try {
    taken = args.map((arg, i) => {
      const earlier = copies.get(arg);
      if (earlier?.[0] === schemas[i]) return earlier[1];
      const copy = copied(arg, schemas[i]);
      if (arg !== null && typeof arg === 'object') copies.set(arg, [schemas[i], copy]);
      return copy;
    });
    for (const [copy, original] of fills) fill(copy, original);
  } finally {
    fills = outer;
  }
  return () => taken;
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

// `value` as a message carries it: { value, notes }, its functions, symbols
// and values that throw replaced by null, its objects of a class by plain
// ones, its accessors that throw by null and its objects whose keys cannot
// be listed by what they hold, each noted [path, kind, detail]: 'function';
// 'symbol' (its description); 'object' (its class name); 'unnamed' (an
// object whose class throws: the error); 'throws' (an accessor: the error);
// 'thrower' (a value: the error); 'unlisted' (the error); 'hidden' (a key
// that is not enumerable); errors as errorMessage makes them. Typed arrays
// and buffers are left as they are (a
// transfer list may name their buffers).
export function toMessage(value) {
  const notes = [];
  const seen = new Map();
  const walk = (v, path) => {
    if (typeof v === 'function') {
      notes.push([path, 'function']);
      return null;
    }
    if (typeof v === 'symbol') {
      notes.push([path, 'symbol', v.description]);
      return null;
    }
    if (THROWN.has(v)) {
      notes.push([path, 'thrower', errorMessage(THROWN.get(v))]);
      return null;
    }
    if (UNLISTED.has(v)) {
      const { error, target } = UNLISTED.get(v);
      notes.push([path, 'unlisted', errorMessage(error)]);
      return walk(target, path);
    }
    if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v) ||
      tagOf(v) === 'ArrayBuffer' || tagOf(v) === 'SharedArrayBuffer') return v;
    if (seen.has(v)) return seen.get(v);
    const array = Array.isArray(v);
    const out = array ? new Array(v.length) : {};
    const { name, error } = array ? { name: 'Object' } : prototypeClass(v);
    if (error !== undefined) notes.push([path, 'unnamed', errorMessage(error)]);
    else if (name !== 'Object') notes.push([path, 'object', name]);
    seen.set(v, out);
    for (const key of Object.getOwnPropertyNames(v)) {
      if (array && key === 'length') continue;
      const { get, value: x, enumerable } = Object.getOwnPropertyDescriptor(v, key);
      if (get !== undefined) notes.push([[...path, key], 'throws', errorMessage(THROWN.get(get))]);
      define(out, key, get === undefined ? walk(x, [...path, key]) : null);
      if (!enumerable) notes.push([[...path, key], 'hidden']);
    }
    return out;
  };
  return { value: walk(value, []), notes };
}

// What toMessage took out of `value`, put back as stand-ins (in `value`
// itself where a note's path is inside it); returns the value.
export function fromMessage(value, notes) {
  let root = value;
  for (const [path, kind, detail] of notes) {
    let parent = root;
    for (const key of path.slice(0, -1)) parent = parent[key];
    const key = path.at(-1);
    // (Not read for the notes of a key: an earlier note may have made it
    // an accessor that throws.)
    const target = path.length === 0 ? root
      : ['object', 'unnamed', 'unlisted'].includes(kind) ? parent[key] : undefined;
    if (kind === 'object') Object.setPrototypeOf(target, standInPrototype(detail));
    else if (kind === 'unnamed') Object.setPrototypeOf(target, throwingPrototype(rebuild(detail)));
    else if (kind === 'throws') Object.defineProperty(parent, key, throwingAccessor(rebuild(detail)));
    else if (kind === 'hidden') Object.defineProperty(parent, key, { enumerable: false });
    else if (kind === 'unlisted') {
      const standIn = unlisted(target, rebuild(detail));
      if (path.length === 0) root = standIn;
      else define(parent, key, standIn);
    } else {
      const standIn = kind === 'function' ? () => {} : kind === 'symbol' ? Symbol(detail)
        : throwingValue(rebuild(detail));
      if (path.length === 0) root = standIn;
      else define(parent, key, standIn);
    }
  }
  return root;
}

// ---------------------------------------------------------------------------
// The schemas of the pooled methods' arguments
// ---------------------------------------------------------------------------

const stored = record([...OPTION_KEYS.Int8Weights, ...OPTION_KEYS.Q4Weights]);
// Weights whose matrices may be int8 { values, scales } or q4 blocks { q4 }.
const weights = (keys) => record(keys,
  Object.fromEntries(keys.filter((k) => WEIGHT_MATRICES.includes(k)).map((k) => [k, stored])));
const layerWeights = (groups) => record(Object.keys(groups),
  Object.fromEntries(Object.entries(groups).map(([group, keys]) => [group, weights(keys)])));
// Options whose masks may be tensors.
const options = (keys, alsoRead) => record(keys, { attnMask: tensor, boolMask: tensor },
  alsoRead);
const config = (keys) => record(keys, { rope: record(OPTION_KEYS.RopeConfig) });

export const ARGUMENTS = {
  mhaConfig: config(OPTION_KEYS.MultiHeadAttentionConfig),
  layerConfig: config(OPTION_KEYS.TransformerLayerConfig),
  placement: record(OPTION_KEYS.PooledLayerOptions),
  mhaWeights: weights(OPTION_KEYS.MultiHeadAttentionWeights),
  mhaState: record(OPTION_KEYS.PyTorchMultiheadAttentionState),
  TransformerEncoderLayer: {
    weights: layerWeights(ENCODER_WEIGHT_GROUPS),
    state: record(OPTION_KEYS.PyTorchTransformerEncoderLayerState),
  },
  TransformerDecoderLayer: {
    weights: layerWeights(DECODER_WEIGHT_GROUPS),
    state: record(OPTION_KEYS.PyTorchTransformerDecoderLayerState),
  },
  TransformerBlock: { weights: whole },
  TransformerStack: { weights: whole },
  // (A block's config or a stack's.)
  blockConfig: whole,
  blockOptions: options(OPTION_KEYS.BlockForwardOptions),
  stackOptions: options(OPTION_KEYS.StackForwardOptions),
  forwardOptions: options(OPTION_KEYS.ForwardOptions),
  // (The synchronous method reads its options as forward does.)
  incrementalOptions: options(OPTION_KEYS.IncrementalForwardOptions,
    ['causal', 'positionOffset', 'training']),
  cacheOptions: record(OPTION_KEYS.KVCacheOptions),
  precomputeOptions: record(OPTION_KEYS.PrecomputeOptions),
  encoderOptions: options(OPTION_KEYS.EncoderForwardOptions),
  decoderOptions: options(OPTION_KEYS.DecoderForwardOptions),
  selfAttentionOptions: options(OPTION_KEYS.SelfAttentionOptions, ['keyPaddingMask']),
  layerNormOptions: record(OPTION_KEYS.LayerNormOptions),
  attentionOptions: options(OPTION_KEYS.AttentionOptions),
};
