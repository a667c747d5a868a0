// A randomized fuzz of the pool's argument path, driven by fast-check for a
// bounded time (tests/fuzz/README.md):
//   node tests/fuzz/js/pool-arguments.fuzz.mjs [seconds]   (default 15; SEED=n repeats a run)
// Arguments of every kind a caller can pass (tensors whose data or shape is
// odd, getters that throw or write, proxies, functions, symbols, bigints,
// huge, negative and NaN sizes, cycles, sparse arrays, typed arrays of every
// kind on plain, shared, detached, resizable, shrunk or offset buffers,
// options with inherited, hidden and unknown keys) go
// - through the copy a pooled call makes when called (pool-arguments.js): it
//   must throw nothing, reading it may throw only what reading the
//   arguments threw (a getter's or a trap's error), and it must go through
//   a message (a structured clone) and share no memory with the caller's
//   arrays;
// - for a bounded share of the run, through the pool's methods on pools of 1
//   and 2 workers and the same methods of the synchronous objects
//   (createAttentionModule({ threads: 1 })): both must succeed with equal
//   outputs or fail with the same error, a message the package composed,
//   and the pooled object must then still answer a good call.
// An input slower than 2 s, or a pooled call that never settles, fails the
// run; scripts/fuzz.sh runs this under a wall-clock timeout and a heap
// limit, so a hang or unbounded memory fails it too (FUZZ_TRACE=1 prints
// each pooled input before it runs, to find the one that hung). The process
// must end on its own.
import fc from 'fast-check';
import { createAttentionModule, createAttentionPool } from '../../../web/index.js';
import { ARGUMENTS, copyArguments, fromMessage, tensor, toMessage, whole }
  from '../../../web/src/pool-arguments.js';

const seconds = Number(process.argv[2] ?? 15);
const seed = process.env.SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.SEED);
// Of the run's time, the share of the pooled calls (each a few round trips
// to the workers); the rest copies arguments only.
const POOLED_SHARE = 0.6;
const SLOW_MS = 2000;
// A pooled call that has not settled by then is a hang.
const SETTLE_MS = 10000;
const trace = process.env.FUZZ_TRACE === '1';

// What an input threw by itself: its getters' and traps' errors, and a
// revoked Proxy's, which the engine throws at any use of it.
const OWN_ERROR = /^fuzz: |proxy that has been revoked/;
const isOwn = (e) => e instanceof Error && OWN_ERROR.test(e.message);
// The package's messages: "Class.method: ..." or "function: ...".
const OUR_MESSAGE = new RegExp('^((MultiHeadAttention|TransformerEncoderLayer|' +
  'TransformerDecoderLayer|KVCache|PrecomputedKeyValue)(\\.\\w+)?|attention|layerNorm|' +
  'positionalEncoding|quantizeInt8): ');
const OUR_CLASSES = ['Error', 'TypeError', 'RangeError'];
const isOurs = (e) => e instanceof Error && OUR_CLASSES.includes(e.constructor.name) &&
  OUR_MESSAGE.test(e.message);

function fail(what, message, error) {
  const e = new Error(`${what}: ${message}${error === undefined ? ''
    : `: ${error?.constructor?.name}: ${error?.message ?? String(error)}`}`);
  if (error?.stack) e.stack += `\ncaused by ${error.stack}`;
  throw e;
}

// ---------------------------------------------------------------------------
// Values: a description (what fast-check draws, shrinks and prints) built
// into a fresh value for each use, so that getters with state start afresh
// ---------------------------------------------------------------------------

const TYPED = ['Int8Array', 'Uint8Array', 'Uint8ClampedArray', 'Int16Array', 'Uint16Array',
  'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array', 'BigInt64Array', 'BigUint64Array',
  'Float16Array'].filter((name) => typeof globalThis[name] === 'function');
const canResize = typeof ArrayBuffer.prototype.resize === 'function';

function detach(buffer) {
  structuredClone(buffer, { transfer: [buffer] });
  return buffer;
}

function revokedProxy() {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

// Values that are not data, made fresh each time.
const MAKERS = {
  function: () => () => {},
  asyncFunction: () => async () => {},
  class: () => class Tensor {},
  classInstance: () => new (class Tensor { constructor() { this.data = 1; } })(),
  nullPrototype: () => Object.assign(Object.create(null), { data: 1 }),
  date: () => new Date(0),
  regexp: () => /x/g,
  map: () => new Map([['data', 1]]),
  set: () => new Set([1]),
  weakMap: () => new WeakMap(),
  error: () => new TypeError('an Error as a value'),
  promise: () => Promise.resolve(1),
  boxedNumber: () => Object(3),
  boxedString: () => Object('ab'),
  boxedBigInt: () => Object(3n),
  arrayBuffer: () => new ArrayBuffer(8),
  sharedArrayBuffer: () => new SharedArrayBuffer(8),
  detachedArrayBuffer: () => detach(new ArrayBuffer(8)),
  dataView: () => new DataView(new ArrayBuffer(8), 2),
  detachedDataView: () => {
    const v = new DataView(new ArrayBuffer(8));
    detach(v.buffer);
    return v;
  },
  nodeBuffer: () => Buffer.from([1, 1, 0, 1]),
  revokedProxy,
  arguments: function () { return arguments; }, // eslint-disable-line prefer-rest-params
  generator: () => (function* g() { yield 1; })(),
};

const PRIMITIVES = [undefined, null, true, false, 0, -0, 1, 2, 3, 4, 8, -1, 1.5, NaN, Infinity,
  -Infinity, 2 ** 31, 2 ** 32, 2 ** 53, 1e9, 1e308, 5e-324, 'x', '', 'top-left', 'bottom-right',
  'none', 'whole', 'split', '__proto__', 10n, -1n, 2n ** 64n, Symbol('s'), Symbol.iterator];

// Fills `array` (seeded): values in [-0.5, 0.5), ones, such values with a
// NaN or an infinity, or values up to 5e37 in magnitude.
function fillTyped(array, fill, seedValue) {
  let s = seedValue >>> 0 || 1;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const big = array instanceof BigInt64Array || array instanceof BigUint64Array;
  for (let i = 0; i < array.length; ++i) {
    const v = fill === 'ones' ? 1 : fill === 'nan' && i === 1 ? NaN
      : fill === 'inf' && i === 0 ? Infinity : fill === 'huge' ? 1e38 * (next() - 0.5)
        : next() - 0.5;
    array[i] = big ? BigInt(Number.isFinite(v) ? Math.trunc(v * 4) : 0) : v;
  }
}

// A typed array: { typed, n, fill, form, seed }.
function buildTyped({ typed, n, fill, form, seed: s }, ctx) {
  const Type = globalThis[typed];
  const bytes = n * Type.BYTES_PER_ELEMENT;
  let array;
  if (form === 'shared') array = new Type(new SharedArrayBuffer(bytes));
  else if (form === 'offset') {
    const one = Type.BYTES_PER_ELEMENT;
    array = new Type(new ArrayBuffer(bytes + 3 * one), one, n);
  } else if (form === 'subclass') array = new (class Tensor extends Type {})(n);
  else if (form === 'resizable' && canResize) {
    // Length-tracking: its length follows the buffer's.
    array = new Type(new ArrayBuffer(bytes, { maxByteLength: bytes + 64 }));
  } else if (form === 'shrunk' && canResize) {
    // Of a fixed length, then out of its buffer's bounds.
    array = new Type(new ArrayBuffer(bytes, { maxByteLength: bytes + 64 }), 0, n);
  } else array = new Type(n);
  fillTyped(array, fill, s);
  if (form === 'detached') detach(array.buffer);
  if (form === 'shrunk' && canResize) array.buffer.resize(0);
  ctx.arrays.push(array);
  return array;
}

const TRAP_ERROR = () => new Error('fuzz: a trap threw');

// A Proxy over `target` whose `trap` throws (for every key, or for `key`);
// a primitive as it is.
function proxied(target, trap, key) {
  if (target === null || (typeof target !== 'object' && typeof target !== 'function')) {
    return target;
  }
  if (trap === 'none') return new Proxy(target, {});
  if (trap === 'getKey') {
    return new Proxy(target, { get(t, k, r) {
      if (k === key) throw TRAP_ERROR();
      return Reflect.get(t, k, r);
    } });
  }
  return new Proxy(target, { [trap]() { throw TRAP_ERROR(); } });
}

// An object { object: [[key, value, how]], proto }. how: value (own,
// enumerable), hidden (own, not enumerable), getter, lazy (a getter that
// makes itself a value), throws, writes (a getter that returns its value and
// writes NaN into every typed array built before it; not as `constructor`,
// which the pool reads for the class name describe() gives, where the
// synchronous API reads it only to describe), inherited (on its prototype),
// symbol (under a symbol of the key's name).
function buildObject({ object: entries, proto }, ctx) {
  const inherited = {};
  const out = proto === 'null' ? Object.create(null)
    : proto === 'class' ? new (class Options {})()
      : proto === 'inherited' ? Object.create(inherited) : {};
  ctx.stack.push(out);
  for (const [key, desc, how] of entries) {
    const value = build(desc, ctx);
    const at = (get) => Object.defineProperty(out, key,
      { get, enumerable: true, configurable: true });
    if (how === 'hidden') {
      Object.defineProperty(out, key, { value, writable: true, configurable: true });
    }
    else if (how === 'getter') at(() => value);
    else if (how === 'lazy') {
      at(function lazy() {
        Object.defineProperty(this, key, { value, enumerable: true, writable: true });
        return value;
      });
    } else if (how === 'throws') at(() => { throw new Error('fuzz: a getter threw'); });
    else if (how === 'writes' && key !== 'constructor') {
      const earlier = [...ctx.arrays];
      at(() => {
        for (const a of earlier) {
          try {
            a.fill(a instanceof BigInt64Array || a instanceof BigUint64Array ? 0n : NaN);
          } catch {
            // detached or out of bounds: nothing to write
          }
        }
        return value;
      });
    } else if (how === 'inherited') {
      Object.defineProperty(inherited, key, { value, writable: true, enumerable: true });
    } else if (how === 'symbol') out[Symbol(key)] = value;
    else {
      Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
    }
  }
  ctx.stack.pop();
  return out;
}

// A JS array { list: [items], holes, length }.
function buildList({ list, holes = [], length }, ctx) {
  const out = [];
  ctx.stack.push(out);
  for (const item of list) out.push(build(item, ctx));
  ctx.stack.pop();
  for (const h of holes) delete out[h % Math.max(out.length, 1)];
  if (length !== undefined) out.length = length;
  return out;
}

// desc -> a fresh value. ctx: { arrays (every typed array made, in order),
// stack (enclosing objects, for cycles: none at the top), args (the call's
// arguments so far, for refs), side (the sync or pooled objects, for
// `use`) }.
function build(desc, ctx) {
  if ('value' in desc) return desc.value;
  if ('make' in desc) return MAKERS[desc.make]();
  if ('use' in desc) return ctx.side[desc.use];
  if ('ref' in desc) return ctx.args[desc.ref % Math.max(ctx.args.length, 1)];
  if ('cycle' in desc) return ctx.stack.at(-1);
  if ('typed' in desc) return buildTyped(desc, ctx);
  if ('list' in desc) return buildList(desc, ctx);
  if ('object' in desc) return buildObject(desc, ctx);
  if ('proxy' in desc) return proxied(build(desc.proxy, ctx), desc.trap, desc.key);
  throw new Error(`fuzz: no such description ${JSON.stringify(desc)}`);
}

// The arguments of one call, built in order (a later one may refer to an
// earlier one), with a fresh context.
function buildArgs(descs, side) {
  const ctx = { arrays: [], stack: [], args: [], side };
  for (const desc of descs) ctx.args.push(build(desc, ctx));
  return ctx;
}

// ---------------------------------------------------------------------------
// Descriptions: good arguments of each kind, and twists of them
// ---------------------------------------------------------------------------

const [B, T, S, d, f, H] = [2, 3, 4, 8, 4, 2];
const num = (value) => ({ value });
const f32 = (n, seedValue = 1, fill = 'random') => ({ typed: 'Float32Array', n, fill, form: 'plain',
  seed: seedValue });
const u8 = (n) => ({ typed: 'Uint8Array', n, fill: 'ones', form: 'plain', seed: 1 });
const obj = (entries) => ({ object: entries.map(([k, v]) => [k, v, 'value']), proto: 'plain' });
const tensorOf = (shape, seedValue) => obj([
  ['data', f32(shape.reduce((a, b) => a * b, 1), seedValue)],
  ['shape', { list: shape.map(num) }]]);
const attentionWeights = (seedValue) => obj([['wQ', f32(d * d, seedValue)],
  ['wK', f32(d * d, seedValue + 1)], ['wV', f32(d * d, seedValue + 2)],
  ['wO', f32(d * d, seedValue + 3)], ['bQ', f32(d, seedValue + 4)], ['bK', f32(d, seedValue + 5)],
  ['bV', f32(d, seedValue + 6)], ['bO', f32(d, seedValue + 7)]]);
const norm = (seedValue) => obj([['gamma', f32(d, seedValue)], ['beta', f32(d, seedValue + 1)]]);
const ffn = (seedValue) => obj([['w1', f32(d * f, seedValue)], ['b1', f32(f, seedValue + 1)],
  ['w2', f32(f * d, seedValue + 2)], ['b2', f32(d, seedValue + 3)]]);

// Good values by kind of argument; options as a subset of good entries.
const GOOD = {
  x: () => tensorOf([B, T, d], 11),
  memory: () => tensorOf([B, S, d], 12),
  step: () => tensorOf([B, 1, d], 13),
  heads: () => tensorOf([B, H, T, d / H], 14),
  cache: () => ({ use: 'cache' }),
  decoderCache: () => ({ use: 'decoderCache' }),
  decoderMemory: () => ({ use: 'decoderKv' }),
  size: () => num(2),
  dModel: () => num(d),
  matrix: () => f32(d * 2, 15),
  mhaWeights: () => attentionWeights(20),
  mhaState: () => obj([['in_proj_weight', f32(3 * d * d, 30)], ['in_proj_bias', f32(3 * d, 31)],
    ['out_proj.weight', f32(d * d, 32)], ['out_proj.bias', f32(d, 33)]]),
  encoderWeights: () => obj([['attention', attentionWeights(40)], ['ffn', ffn(50)],
    ['norm1', norm(55)], ['norm2', norm(57)]]),
  none: () => num(undefined),
  mhaConfig: () => obj([['dModel', num(d)], ['numHeads', num(H)]]),
  layerConfig: () => obj([['dModel', num(d)], ['numHeads', num(H)], ['ffnDim', num(f)]]),
  cacheOptions: () => obj([['batch', num(B)], ['maxLength', num(4)]]),
};
const OPTION_ENTRIES = {
  forwardOptions: [['causal', num(true)], ['returnAttnWeights', num(true)],
    ['keyPaddingMask', u8(B * S)], ['attnMask', tensorOf([T, S], 16)],
    ['window', { list: [num(1), num(1)] }],
    ['scale', num(0.5)], ['softcap', num(5)], ['kvLengths', { list: [num(4), num(2)] }],
    ['returnPerHeadOutput', num(true)]],
  incrementalOptions: [['returnAttnWeights', num(true)], ['scale', num(0.5)],
    ['window', { list: [num(2), num(0)] }], ['softcap', num(3)]],
  precomputeOptions: [['keyPaddingMask', u8(B * S)]],
  encoderOptions: [['causal', num(true)], ['keyPaddingMask', u8(B * T)], ['scale', num(0.5)],
    ['attnMask', tensorOf([T, T], 17)], ['window', { list: [num(1), num(1)] }]],
  decoderOptions: [['causal', num(false)], ['memoryKeyPaddingMask', u8(B * S)],
    ['keyPaddingMask', u8(B * T)], ['softcap', num(4)]],
  selfAttentionOptions: [['scale', num(0.5)], ['softcap', num(4)]],
  layerNormOptions: [['gamma', f32(d, 60)], ['beta', f32(d, 61)], ['eps', num(1e-3)]],
  attentionOptions: [['causal', num('top-left')], ['scale', num(0.5)],
    ['attnMask', tensorOf([T, T], 18)], ['window', { list: [num(1), num(0)] }]],
};
// (layerNorm's gamma and beta are required.)
const goodOf = (kind, pick) => {
  if (GOOD[kind]) return GOOD[kind]();
  const entries = OPTION_ENTRIES[kind].filter((_, i) => (kind === 'layerNormOptions' && i < 2) ||
    pick & (1 << i));
  return obj(entries);
};

const KEYS = ['data', 'shape', 'causal', 'attnMask', 'keyPaddingMask', 'window', 'scale',
  'batch', 'maxLength', 'wQ', 'bO', 'gamma', 'dModel', 'numHeads', 'rope', 'values', 'scales',
  '__proto__', 'constructor', 'toString', 'length', 'then', 'bogus', '0'];
const HOWS = ['value', 'hidden', 'getter', 'lazy', 'throws', 'writes', 'inherited', 'symbol'];
// The traps of a Proxy whose errors a copy keeps: those of reading a value,
// listing its keys or its prototype.
const TRAPS = ['none', 'get', 'getKey', 'ownKeys', 'getPrototypeOf', 'getOwnPropertyDescriptor'];
const FORMS = ['plain', 'plain', 'shared', 'detached', 'offset', 'subclass', 'resizable', 'shrunk'];

const typedArb = fc.record({
  typed: fc.constantFrom(...TYPED),
  n: fc.constantFrom(0, 1, 4, 8, 16, 48),
  fill: fc.constantFrom('random', 'ones', 'nan', 'inf', 'huge'),
  form: fc.constantFrom(...FORMS),
  seed: fc.nat(99),
});

// Any value: leaves, typed arrays, and nested lists, objects and proxies.
const { anyValue } = fc.letrec((tie) => ({
  anyValue: fc.oneof({ maxDepth: 3, depthIdentifier: 'value' },
    { arbitrary: fc.constantFrom(...PRIMITIVES).map(num), weight: 4 },
    { arbitrary: fc.constantFrom(...Object.keys(MAKERS)).map((make) => ({ make })), weight: 2 },
    { arbitrary: typedArb, weight: 2 },
    fc.record({ list: fc.array(tie('anyValue'), { maxLength: 4 }),
      holes: fc.array(fc.nat(5), { maxLength: 2 }),
      length: fc.option(fc.constantFrom(0, 5, 2 ** 32 - 1), { nil: undefined }),
    }, { requiredKeys: ['list'] }),
    fc.record({ object: fc.array(fc.tuple(fc.constantFrom(...KEYS), tie('anyValue'),
      fc.constantFrom(...HOWS)), { maxLength: 4 }),
    proto: fc.constantFrom('plain', 'null', 'class', 'inherited') }),
    fc.record({ proxy: tie('anyValue'), trap: fc.constantFrom(...TRAPS),
      key: fc.constantFrom(...KEYS) }),
    fc.constant({ cycle: true }),
    fc.record({ ref: fc.nat(4) })),
}));

// A twist of a good description: at the node `at` (in a walk of the tree),
// one change.
const twistArb = fc.record({
  at: fc.nat(),
  op: fc.constantFrom('replace', 'proxy', 'how', 'proto', 'add', 'drop', 'typed', 'holes',
    'length', 'cycle'),
  value: anyValue,
  key: fc.constantFrom(...KEYS),
  how: fc.constantFrom(...HOWS),
  proto: fc.constantFrom('null', 'class', 'inherited'),
  trap: fc.constantFrom(...TRAPS),
  typed: typedArb,
  n: fc.nat(7),
});

// A copy of a description (symbols and bigints included).
function cloneDesc(v) {
  if (Array.isArray(v)) return v.map(cloneDesc);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).map(([k, e]) =>
    [k, k === 'value' ? e : cloneDesc(e)]));
}

// The nodes of a description: [node, replace(newNode)].
function nodesOf(desc, replace, out = []) {
  out.push([desc, replace]);
  if ('object' in desc) {
    desc.object.forEach(([key, value, how], i) =>
      nodesOf(value, (v) => { desc.object[i] = [key, v, how]; }, out));
  } else if ('list' in desc) {
    desc.list.forEach((item, i) => nodesOf(item, (v) => { desc.list[i] = v; }, out));
  } else if ('proxy' in desc) nodesOf(desc.proxy, (v) => { desc.proxy = v; }, out);
  return out;
}

function applyTwists(good, twists) {
  let root = cloneDesc(good);
  for (const t of twists) {
    const nodes = nodesOf(root, (v) => { root = v; });
    const [node, replace] = nodes[t.at % nodes.length];
    if (t.op === 'replace') replace(cloneDesc(t.value));
    else if (t.op === 'proxy') replace({ proxy: node, trap: t.trap, key: t.key });
    else if ('object' in node) {
      const e = node.object;
      const i = t.n % Math.max(e.length, 1);
      if (t.op === 'how' && e.length > 0) e[i] = [e[i][0], e[i][1], t.how];
      else if (t.op === 'proto') node.proto = t.proto;
      else if (t.op === 'add') e.push([t.key, cloneDesc(t.value), t.how]);
      else if (t.op === 'drop' && e.length > 0) e.splice(i, 1);
      else if (t.op === 'cycle') e.push([t.key, { cycle: true }, 'value']);
    } else if ('list' in node) {
      if (t.op === 'holes') node.holes = [t.n];
      else if (t.op === 'add') node.list.push(cloneDesc(t.value));
      else if (t.op === 'drop') node.list.splice(t.n % Math.max(node.list.length, 1), 1);
      else if (t.op === 'cycle') node.list.push({ cycle: true });
      else if (t.op === 'length') node.length = [0, 2 ** 32 - 1, 1][t.n % 3];
    } else if ('typed' in node && t.op === 'typed') {
      replace({ ...t.typed, n: t.n % 2 === 0 ? node.n : t.typed.n });
    }
  }
  return root;
}

// A call's argument: mostly good, or good with twists, or anything.
const argumentOf = (kind) => fc.oneof(
  { arbitrary: fc.nat(1023).map((pick) => goodOf(kind, pick)), weight: 3 },
  { arbitrary: fc.tuple(fc.nat(1023), fc.array(twistArb, { minLength: 1, maxLength: 3 }))
    .map(([pick, twists]) => applyTwists(goodOf(kind, pick), twists)), weight: 6 },
  { arbitrary: anyValue, weight: 1 },
  { arbitrary: fc.nat(3).map((ref) => ({ ref })), weight: 1 });

// ---------------------------------------------------------------------------
// The copy step
// ---------------------------------------------------------------------------

// Every schema a pooled call copies its arguments by, with the argument
// kind whose good values it reads.
const SCHEMAS = [
  ['tensor', tensor, 'x'], ['whole', whole, 'matrix'],
  ['mhaConfig', ARGUMENTS.mhaConfig, 'mhaConfig'],
  ['layerConfig', ARGUMENTS.layerConfig, 'layerConfig'],
  ['mhaWeights', ARGUMENTS.mhaWeights, 'mhaWeights'], ['mhaState', ARGUMENTS.mhaState, 'mhaState'],
  ['encoder weights', ARGUMENTS.TransformerEncoderLayer.weights, 'encoderWeights'],
  ['encoder state', ARGUMENTS.TransformerEncoderLayer.state, 'mhaState'],
  ['decoder weights', ARGUMENTS.TransformerDecoderLayer.weights, 'encoderWeights'],
  ['decoder state', ARGUMENTS.TransformerDecoderLayer.state, 'mhaState'],
  ['placement', ARGUMENTS.placement, 'layerConfig'],
  ['cacheOptions', ARGUMENTS.cacheOptions, 'cacheOptions'],
  ...Object.keys(OPTION_ENTRIES).map((k) => [k, ARGUMENTS[k], k]),
];

// Reads every member of `v` (a copy; its keys that are not enumerable
// too), each read's error judged.
function readAll(what, v, seen = new Set()) {
  if (v === null || typeof v !== 'object' || seen.has(v) || ArrayBuffer.isView(v)) return;
  seen.add(v);
  let keys;
  try {
    keys = Object.getOwnPropertyNames(v).filter((k) => !(Array.isArray(v) && k === 'length'));
  } catch (e) {
    if (!isOwn(e)) fail(what, "listing a copy's keys threw what the argument did not", e);
    return;
  }
  for (const key of keys) {
    try {
      readAll(what, v[key], seen);
    } catch (e) {
      if (!isOwn(e)) {
        fail(what, `reading a copy's ${String(key)} threw what the argument did not`, e);
      }
    }
  }
}

// Every typed array and buffer in a message's value (plain data).
function buffersIn(v, out = new Set(), seen = new Set()) {
  if (v === null || typeof v !== 'object' || seen.has(v)) return out;
  seen.add(v);
  if (ArrayBuffer.isView(v)) out.add(v.buffer);
  else if (v instanceof ArrayBuffer || v instanceof SharedArrayBuffer) out.add(v);
  else for (const key of Object.keys(v)) buffersIn(v[key], out, seen);
  return out;
}

const copies = fc.property(fc.array(fc.nat(SCHEMAS.length - 1), { minLength: 1, maxLength: 3 })
  .chain((slots) => fc.tuple(fc.constant(slots),
    fc.tuple(...slots.map((i) => argumentOf(SCHEMAS[i][2]))))),
([slots, descs]) => {
  const what = `copying ${slots.map((i) => SCHEMAS[i][0]).join(', ')}`;
  const ctx = buildArgs(descs, {});
  const start = performance.now();
  let copied;
  try {
    copied = copyArguments(ctx.args, slots.map((i) => SCHEMAS[i][1]))();
  } catch (e) {
    fail(what, 'threw', e);
  }
  const ms = performance.now() - start;
  if (ms > SLOW_MS) fail(what, `took ${ms.toFixed(0)} ms`);
  // As a message carries it to a worker, and back to stand-ins there.
  let message;
  try {
    message = toMessage(copied);
    fromMessage(structuredClone(message.value), message.notes);
  } catch (e) {
    fail(what, 'a copy a message cannot carry', e);
  }
  // The caller's arrays stay the caller's.
  const callers = new Set(ctx.arrays.map((a) => a.buffer));
  for (const buffer of buffersIn(message.value)) {
    if (callers.has(buffer)) fail(what, "a copy shares memory with the caller's array");
  }
  // Reading the copies throws only what reading the arguments threw.
  readAll(what, copied);
});

// ---------------------------------------------------------------------------
// Pooled calls against the synchronous ones
// ---------------------------------------------------------------------------

const module = await createAttentionModule({ threads: 1 });
const pools = { 1: await createAttentionPool({ workers: 1 }),
  2: await createAttentionPool({ workers: 2 }) };

const buildGood = (kind) => buildArgs([goodOf(kind, 0)], {}).args[0];
const goodWeights = { mha: buildGood('mhaWeights'), encoder: buildGood('encoderWeights') };
const decoderWeights = (() => {
  const w = buildGood('encoderWeights');
  return { selfAttention: w.attention, crossAttention: buildGood('mhaWeights'), ffn: w.ffn,
    norm1: w.norm1, norm2: w.norm2, norm3: buildGood('encoderWeights').norm1 };
})();
const mhaConfig = { dModel: d, numHeads: H };
const layerConfig = { dModel: d, numHeads: H, ffnDim: f };

// The objects calls run on, for one side: the module (sync) or a pool with
// its layers placed `placement`. reset(target) brings those a call on
// `target` may change back to their state after setup.
async function makeSide(api, placement) {
  const sync = api === module;
  const create = (Class, config) => (sync ? new api[Class](config)
    : api[Class](config, Class === 'MultiHeadAttention' ? undefined : { placement }));
  const side = { api, mha: await create('MultiHeadAttention', mhaConfig),
    encoder: await create('TransformerEncoderLayer', layerConfig),
    decoder: await create('TransformerDecoderLayer', layerConfig) };
  side.reset = async (target) => {
    if (target === 'mha' || target === 'cache') {
      await side.mha.setWeights(goodWeights.mha);
      await side.cache.reset();
    } else if (target === 'encoder') {
      await side.encoder.setWeights(goodWeights.encoder);
    } else if (target === 'decoder') {
      await side.decoder.setWeights(decoderWeights);
      await side.decoderCache.reset();
    }
  };
  await side.mha.setWeights(goodWeights.mha);
  await side.encoder.setWeights(goodWeights.encoder);
  await side.decoder.setWeights(decoderWeights);
  side.cache = await side.mha.createKVCache({ batch: B, maxLength: 4 });
  side.decoderCache = await side.decoder.createKVCache({ batch: B, maxLength: 4 });
  side.decoderKv = await side.decoder.precomputeMemory(buildGood('memory'));
  side.kv = await side.mha.precomputeKeyValue(buildGood('memory'));
  return side;
}

const SIDES = {
  sync: await makeSide(module),
  '1 whole': await makeSide(pools[1], 'whole'),
  '2 whole': await makeSide(pools[2], 'whole'),
  '2 split': await makeSide(pools[2], 'split'),
};

// [name, target (a member of a side, or its api), method, argument kinds]
const CALLS = [
  ['MultiHeadAttention.forward', 'mha', 'forward', ['x', 'memory', 'memory', 'forwardOptions']],
  ['MultiHeadAttention.forward (self)', 'mha', 'forward', ['x', 'none', 'none', 'forwardOptions']],
  ['MultiHeadAttention.forwardIncremental', 'mha', 'forwardIncremental',
    ['step', 'cache', 'incrementalOptions']],
  ['MultiHeadAttention.precomputeKeyValue', 'mha', 'precomputeKeyValue',
    ['memory', 'precomputeOptions']],
  ['MultiHeadAttention.createKVCache', 'mha', 'createKVCache', ['cacheOptions']],
  ['MultiHeadAttention.setWeights', 'mha', 'setWeights', ['mhaWeights']],
  ['MultiHeadAttention.setWeightsFromPyTorch', 'mha', 'setWeightsFromPyTorch', ['mhaState']],
  ['KVCache.append', 'cache', 'append', ['step', 'step']],
  ['KVCache.truncate', 'cache', 'truncate', ['size']],
  ['TransformerEncoderLayer.forward', 'encoder', 'forward', ['x', 'encoderOptions']],
  ['TransformerEncoderLayer.setWeights', 'encoder', 'setWeights', ['encoderWeights']],
  ['TransformerDecoderLayer.forward', 'decoder', 'forward', ['x', 'memory', 'decoderOptions']],
  ['TransformerDecoderLayer.forwardIncremental', 'decoder', 'forwardIncremental',
    ['step', 'decoderCache', 'decoderMemory', 'selfAttentionOptions']],
  ['TransformerDecoderLayer.precomputeMemory', 'decoder', 'precomputeMemory',
    ['memory', 'precomputeOptions']],
  ['attention', 'api', 'attention', ['heads', 'heads', 'heads', 'attentionOptions']],
  ['layerNorm', 'api', 'layerNorm', ['x', 'layerNormOptions']],
  ['positionalEncoding', 'api', 'positionalEncoding', ['size', 'dModel']],
  ['quantizeInt8', 'api', 'quantizeInt8', ['matrix', 'dModel', 'size']],
  ['MultiHeadAttention (made)', 'api', 'MultiHeadAttention', ['mhaConfig']],
  ['TransformerEncoderLayer (made)', 'api', 'TransformerEncoderLayer', ['layerConfig']],
];

// A call's value or error, within SETTLE_MS.
async function outcome(fn) {
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ hung: true }), SETTLE_MS);
  });
  try {
    return await Promise.race([(async () => ({ value: await fn() }))(), late]);
  } catch (error) {
    return { error };
  } finally {
    clearTimeout(timer);
  }
}

// The package's objects a call made: [their class, their sizes].
const madeObject = (v) => v !== null && typeof v === 'object' && typeof v.dispose === 'function';
const summary = (v) => [v.constructor.name, v.batch, v.maxLength, v.tokens,
  JSON.stringify(v.config)];

// Where two results differ (a path), or undefined where they are equal:
// typed arrays to float32 rounding (a split attention adds its heads' parts
// in another order), objects made by the call by their class and sizes.
function difference(a, b, path = 'the result') {
  if (madeObject(a) || madeObject(b)) {
    const [x, y] = [a, b].map((v) => JSON.stringify(madeObject(v) && summary(v)));
    return x === y ? undefined : `${path}: ${x} vs ${y}`;
  }
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.length !== b.length ||
      a.constructor.name !== b.constructor.name) {
      return `${path}: ${fc.stringify(a)} vs ${fc.stringify(b)}`;
    }
    const scale = b.reduce((m, v) => Math.max(m, Math.abs(Number(v))), 0);
    const i = a.findIndex((v, j) => !Object.is(v, b[j]) &&
      !(Math.abs(Number(v) - Number(b[j])) <= 1e-5 * scale));
    return i < 0 ? undefined : `${path}[${i}]: ${a[i]} vs ${b[i]}`;
  }
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    return Object.is(a, b) ? undefined : `${path}: ${fc.stringify(a)} vs ${fc.stringify(b)}`;
  }
  const keys = Object.keys(b);
  if (JSON.stringify(Object.keys(a)) !== JSON.stringify(keys)) {
    return `${path}: keys ${Object.keys(a)} vs ${keys}`;
  }
  for (const k of keys) {
    const found = difference(a[k], b[k], `${path}.${k}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

// An error as the two sides are compared: its class and message; a revoked
// Proxy's engine errors are one (which use of it threw differs). A layer
// split over the workers judges overflows that depend on its weights by its
// parts, as the pool documents (pool-split-layers.js: its whole stand-in has no
// weights to judge them by), so its overflow errors are one too.
function errorKey(e, split) {
  if (e instanceof Error && /proxy that has been revoked/.test(e.message)) return 'a revoked proxy';
  if (split && e instanceof RangeError && OUR_MESSAGE.test(e.message) &&
    /overflow/.test(e.message)) return 'an overflow';
  return `${e?.constructor?.name}: ${e?.message ?? String(e)}`;
}

async function disposeMade(v) {
  if (madeObject(v)) await v.dispose();
}

const good = {
  mha: { call: (s) => s.mha.forward(buildGood('x')) },
  cache: { call: (s) => s.mha.forward(buildGood('x')) },
  encoder: { call: (s) => s.encoder.forward(buildGood('x')) },
  decoder: { call: (s) => s.decoder.forward(buildGood('x'), buildGood('memory')) },
  api: { call: (s) => s.api.layerNorm(buildGood('x'), buildGood('layerNormOptions')) },
};
for (const g of Object.values(good)) g.want = await g.call(SIDES.sync);

// want and got: the synchronous and pooled outcomes of one call; split:
// whether it is a call of a split layer.
function compare(what, want, got, split) {
  if (got.hung) fail(what, `the pooled call did not settle in ${SETTLE_MS} ms`);
  for (const [side, o] of [['synchronous', want], ['pooled', got]]) {
    if ('error' in o && !isOwn(o.error) && !isOurs(o.error)) {
      fail(what, `the ${side} call threw what the package did not compose`, o.error);
    }
  }
  if ('error' in want !== 'error' in got) {
    const said = (o) => ('error' in o ? `threw ${errorKey(o.error)}` : 'succeeded');
    fail(what, `the synchronous call ${said(want)}, the pooled one ${said(got)}`);
  }
  if ('error' in want && errorKey(want.error, split) !== errorKey(got.error, split)) {
    fail(what, `the synchronous call threw ${errorKey(want.error)}, the pooled one ` +
      `${errorKey(got.error)}`);
  }
  const differs = 'value' in want ? difference(got.value, want.value) : undefined;
  if (differs !== undefined) {
    fail(what, `the pooled and synchronous calls' results differ at ${differs}`);
  }
  if (pools[1].dead || pools[2].dead) fail(what, 'the pool died');
}

const pooled = fc.asyncProperty(fc.nat(CALLS.length - 1).chain((c) => fc.tuple(fc.constant(c),
  fc.tuple(...CALLS[c][3].map(argumentOf)), fc.constantFrom('1 whole', '2 whole', '2 split'))),
async ([c, descs, where]) => {
  const [name, target, method] = CALLS[c];
  const what = `${name} on the pool of ${where}`;
  if (trace) console.log(`fuzz: ${what}: ${fc.stringify(descs)}`);
  // (The module's classes are made with new, the pool's by its functions.)
  const run = (side) => {
    const { args } = buildArgs(descs, side);
    const on = target === 'api' ? side.api : side[target];
    return outcome(() => (on === module && /^[A-Z]/.test(method) ? new on[method](...args)
      : on[method](...args)));
  };
  const start = performance.now();
  const want = await run(SIDES.sync);
  const got = await run(SIDES[where]);
  try {
    compare(what, want, got, where.endsWith('split') && ['encoder', 'decoder'].includes(target));
  } finally {
    await disposeMade(want.value);
    await disposeMade(got.value);
    // The objects back as they were.
    await SIDES.sync.reset(target);
    await SIDES[where].reset(target);
  }
  // The pooled object still answers.
  const check = good[target];
  const after = await outcome(() => check.call(SIDES[where]));
  if (!('value' in after)) fail(what, 'a good call after it failed', after.error);
  const wrong = difference(after.value, check.want);
  if (wrong !== undefined) fail(what, `a good call after it is wrong at ${wrong}`);
  const ms = performance.now() - start;
  if (ms > SLOW_MS) fail(what, `took ${ms.toFixed(0)} ms`);
});

// ---------------------------------------------------------------------------

const TARGETS = [
  ['copying arguments', copies, 1 - POOLED_SHARE],
  ['pooled calls against synchronous ones', pooled, POOLED_SHARE],
];
console.log(`fuzz: pool arguments (fast-check ${fc.__version}) for ${seconds} s, SEED=${seed}`);
let failed = false;
for (const [name, property, share] of TARGETS) {
  const run = await fc.check(property, {
    seed, numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: seconds * share * 1000,
    includeErrorInReport: true,
  });
  if (run.failed) {
    failed = true;
    console.log(`fuzz: ${name}: FAILED\n${fc.defaultReportMessage(run)}`);
  } else {
    console.log(`fuzz: ${name}: ${run.numRuns} inputs, passed`);
  }
}
for (const side of Object.values(SIDES)) {
  for (const o of [side.kv, side.decoderKv, side.cache, side.decoderCache, side.mha, side.encoder,
    side.decoder]) await o.dispose();
}
await Promise.all(Object.values(pools).map((p) => p.dispose()));
module.dispose();
if (failed) {
  console.log(`fuzz: pool arguments FAILED; repeat with SEED=${seed}`);
  process.exitCode = 1;
} else {
  console.log('fuzz: pool arguments passed');
}
