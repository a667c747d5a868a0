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
// synchronous object names) and its known keys wherever they are (inherited,
// or getters of a class), anything else whole: typed arrays and buffers
// copied, arrays element by element, objects from their own enumerable
// properties. The package's objects (a pool's, a module's) stay themselves,
// and so do functions and symbols, which hold nothing to read later; an
// object of a class keeps its class's name for describe() (arguments.js) on
// a stand-in prototype.
//
// A message cannot carry functions, symbols or class names, so toMessage
// takes them out and notes where they were, and the worker's fromMessage
// puts stand-ins back: a function (never called), a symbol of the same
// description, an object of the same class name. The workers' synchronous
// objects then refuse or ignore them as the synchronous API does the
// originals, with its messages.
import { holdsKeyValues } from './caches.js';
import { DECODER_WEIGHT_GROUPS, ENCODER_WEIGHT_GROUPS, OPTION_KEYS, WEIGHT_MATRICES }
  from './option-keys.js';
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

function copyView(v) {
  if (tagOf(v) === 'DataView') {
    return new DataView(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
  }
  // This realm's constructor of the same name: a copy that owns its memory,
  // whatever the original's class (a Node Buffer's slice() shares it).
  const Type = globalThis[tagOf(v)];
  return typeof Type === 'function' ? new Type(v) : v.slice();
}

// A plain object described as `v` is (see className).
function like(v) {
  const name = className(v);
  return name === 'Object' ? {} : Object.create(standInPrototype(name));
}

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
    } else if (tagOf(v) === 'ArrayBuffer' || tagOf(v) === 'SharedArrayBuffer') {
      copies.set(v, v.slice(0));
    } else {
      const out = Array.isArray(v) ? new Array(v.length) : like(v);
      copies.set(v, out);
      for (const key of Object.keys(v)) out[key] = copy(v[key]);
    }
    return copies.get(v);
  };
  return copy(value);
}

// { data, shape } (a pool object, or what is not a record, whole).
export function tensor(v) {
  if (!isRecord(v)) return whole(v);
  return Object.assign(like(v), { data: whole(v.data), shape: whole(v.shape) });
}

// An object whose keys are `keys` (their values copied by fields[key], by
// default whole): its own keys in their order, then the known keys it has
// elsewhere. What is not a record, whole.
export function record(keys, fields = {}) {
  return (v) => {
    if (!isRecord(v)) return whole(v);
    const out = like(v);
    const put = (key, x) => { out[key] = (Object.hasOwn(fields, key) ? fields[key] : whole)(x); };
    for (const key of Object.keys(v)) put(key, v[key]);
    for (const key of keys) {
      if (Object.hasOwn(out, key)) continue;
      const x = v[key];
      if (x !== undefined) put(key, x);
    }
    return out;
  };
}

// A call's arguments copied now by `schemas` (one per argument), for its
// job to take later: a function that returns the copies, or throws what
// copying threw (a getter's error), when the job asks, after the object's
// own checks, as the synchronous API orders its errors. The same object
// given twice (key = query) is one copy, as the synchronous API, which
// compares them, sees one object.
export function copyArguments(args, schemas) {
  try {
    const copied = new Map(); // argument -> [schema, copy]
    const copies = args.map((arg, i) => {
      const earlier = copied.get(arg);
      if (earlier?.[0] === schemas[i]) return earlier[1];
      const copy = schemas[i](arg);
      if (arg !== null && typeof arg === 'object') copied.set(arg, [schemas[i], copy]);
      return copy;
    });
    return () => copies;
  } catch (e) {
    return () => { throw e; };
  }
}

// `value` as a message carries it: { value, notes }, its functions and
// symbols replaced by null and its objects of a class by plain ones, each
// noted [path, 'function' | 'symbol' | 'object', symbol description or
// class name]. Typed arrays and buffers are left as they are (a transfer
// list may name their buffers).
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
    if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v) ||
      tagOf(v) === 'ArrayBuffer' || tagOf(v) === 'SharedArrayBuffer') return v;
    if (seen.has(v)) return seen.get(v);
    const array = Array.isArray(v);
    const out = array ? new Array(v.length) : {};
    if (!array && className(v) !== 'Object') notes.push([path, 'object', className(v)]);
    seen.set(v, out);
    for (const key of Object.keys(v)) out[key] = walk(v[key], [...path, key]);
    return out;
  };
  return { value: walk(value, []), notes };
}

// What toMessage took out of `value`, put back as stand-ins (in `value`
// itself where a note's path is inside it); returns the value.
export function fromMessage(value, notes) {
  const standIn = (kind, detail) => (kind === 'function' ? () => {} : Symbol(detail));
  let root = value;
  for (const [path, kind, detail] of notes) {
    if (path.length === 0) {
      if (kind === 'object') Object.setPrototypeOf(root, standInPrototype(detail));
      else root = standIn(kind, detail);
      continue;
    }
    let parent = root;
    for (const key of path.slice(0, -1)) parent = parent[key];
    const key = path[path.length - 1];
    if (kind === 'object') Object.setPrototypeOf(parent[key], standInPrototype(detail));
    else parent[key] = standIn(kind, detail);
  }
  return root;
}

// ---------------------------------------------------------------------------
// The schemas of the pooled methods' arguments
// ---------------------------------------------------------------------------

const int8 = record(OPTION_KEYS.Int8Weights);
// Weights whose matrices may be int8 { values, scales }.
const weights = (keys) => record(keys,
  Object.fromEntries(keys.filter((k) => WEIGHT_MATRICES.includes(k)).map((k) => [k, int8])));
const layerWeights = (groups) => record(Object.keys(groups),
  Object.fromEntries(Object.entries(groups).map(([group, keys]) => [group, weights(keys)])));
// Options whose masks may be tensors.
const options = (keys) => record(keys, { attnMask: tensor, boolMask: tensor });
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
  forwardOptions: options(OPTION_KEYS.ForwardOptions),
  incrementalOptions: options(OPTION_KEYS.IncrementalForwardOptions),
  cacheOptions: record(OPTION_KEYS.KVCacheOptions),
  precomputeOptions: record(OPTION_KEYS.PrecomputeOptions),
  encoderOptions: options(OPTION_KEYS.EncoderForwardOptions),
  decoderOptions: options(OPTION_KEYS.DecoderForwardOptions),
  selfAttentionOptions: options(OPTION_KEYS.SelfAttentionOptions),
  layerNormOptions: record(OPTION_KEYS.LayerNormOptions),
  attentionOptions: options(OPTION_KEYS.AttentionOptions),
};
