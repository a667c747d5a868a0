// Every pooled method, given each class of bad argument in each place
// (wrong types, functions and symbols, objects of a class, wrong shapes and
// ranks, sizes C++ refuses, non-finite values, unknown and mistyped option
// keys, malformed weights, states and configs, caches and memories of the
// wrong kind), answers as the synchronous API: the same error class and
// message, or success where it succeeds. Pools of 1 and 2 workers, layers
// split and whole.
import { randomFloats, randomLayerWeights } from './support/layers.mjs';
import { track } from './support/modules.mjs';
import { randomTensor as tensor, simdModule, startPools } from './support/pools.mjs';

const module = await simdModule();
const pools = startPools([1, 2]);

const [B, T, S, d, f] = [2, 3, 4, 8, 6];
const x = tensor([B, T, d], 1);
const step = tensor([B, 1, d], 2);
const memory = tensor([B, S, d], 3);
class Foo {
  constructor() { this.data = x.data; }
}

// Bad values for a tensor argument.
const badTensors = [
  undefined, null, 'x', 3, [1, 2], new Float32Array(4), Symbol('t'), () => {}, new Map(),
  new Foo(), { data: 'x', shape: [2, d] }, { data: () => {}, shape: [2, d] },
  { data: x.data, shape: 'x' }, { data: x.data, shape: () => {} }, { data: x.data, shape: [d] },
  { data: x.data, shape: [B, T, d, 1] }, { data: x.data, shape: [B, -1, d] },
  { data: x.data, shape: [B, 1.5, d] }, { data: x.data, shape: [B, Symbol('n'), d] },
  { data: x.data, shape: [B, T + 1, d] }, { data: x.data, shape: [B * T, d + 1] },
  { data: Float32Array.from(x.data, (v, i) => (i === 5 ? NaN : v)), shape: x.shape },
  { data: Float32Array.from(x.data, (v, i) => (i === 2 ? -Infinity : v)), shape: x.shape },
  { data: x.data, shape: x.shape, extra: () => {}, [Symbol('s')]: 1 },
];

// Bad options objects for options with `keys`: not objects, unknown keys,
// and each key of a wrong type.
function badOptions(keys) {
  const out = ['x', 3, null, [], () => {}, { bogus: 1 }, { bogus: () => {} }, { bogus: Symbol('b') }];
  for (const key of keys) {
    for (const v of ['x', () => {}, Symbol('o'), {}, new Foo(), -1, 1.5, [1.5], true,
      new Uint8Array(1), new Float32Array(1), { data: new Float32Array(1), shape: [1, 1] }]) {
      out.push({ [key]: v });
    }
  }
  return out;
}

// Bad weights objects: not objects, unknown keys, and each key missing or
// of a wrong type, length or value; `keys` the keys of one group.
function badGroup(w, keys) {
  const out = ['x', null, [], () => {}, { ...w, bogus: 1 }];
  for (const key of keys) {
    for (const v of [undefined, 'x', () => {}, Symbol('w'), new Foo(), new Float64Array(4),
      new Float32Array(3), Float32Array.from(w[key], (e, i) => (i === 1 ? NaN : e)),
      { values: new Int8Array(3) }, { values: 'x', scales: new Float32Array(1) }]) {
      out.push({ ...w, [key]: v });
    }
  }
  return out;
}

const mhaWeights = (seed) => randomLayerWeights(d, f, seed).attention;
const mhaKeys = ['wQ', 'wK', 'wV', 'wO', 'bQ', 'bK', 'bV', 'bO'];

// The calls of each kind of object: [label, call(target, caches), bad...]
// where each bad value replaces the argument `at`. `caches` holds the
// target's cache and memory of the same kind (sync or pooled).
function attentionCalls() {
  const o = { returnAttnWeights: true };
  return [
    ['forward query', (m, c, v) => m.forward(v, undefined, undefined, o), badTensors],
    ['forward key', (m, c, v) => m.forward(x, v, undefined, o), badTensors.filter((v) => v != null)],
    ['forward value', (m, c, v) => m.forward(x, memory, v, o), badTensors.filter((v) => v != null)],
    ['forward value without key', (m, c, v) => m.forward(x, undefined, v), [memory, 'x']],
    ['forward key as cache', (m, c) => m.forward(x, c.cache), [0]],
    ['forward memory and value', (m, c, v) => m.forward(x, c.memory, v), [memory, 'x']],
    ['forward options', (m, c, v) => m.forward(x, undefined, undefined, v),
      badOptions(['causal', 'attnMask', 'boolMask', 'keyPaddingMask', 'kvLengths', 'window',
        'scale', 'softcap', 'positionOffset', 'returnScores', 'training'])],
    ['forwardIncremental x', (m, c, v) => m.forwardIncremental(v, c.cache), badTensors],
    ['forwardIncremental cache', (m, c, v) => m.forwardIncremental(step, v),
      [undefined, 'x', {}, x, c0 => c0]],
    ['forwardIncremental memory as cache', (m, c) => m.forwardIncremental(step, c.memory), [0]],
    ['forwardIncremental options', (m, c, v) => m.forwardIncremental(step, c.cache, v),
      badOptions(['attnMask', 'kvLengths', 'window', 'returnIntermediates', 'causal'])],
    ['precomputeKeyValue memory', (m, c, v) => m.precomputeKeyValue(v), badTensors],
    ['precomputeKeyValue options', (m, c, v) => m.precomputeKeyValue(memory, v),
      badOptions(['keyPaddingMask'])],
    ['createKVCache', (m, c, v) => m.createKVCache(v),
      [undefined, ...badOptions(['batch', 'maxLength']), { batch: 0, maxLength: 2 },
        { batch: 1 }, { batch: 2 ** 33, maxLength: 1 }]],
    ['setWeights', (m, c, v) => m.setWeights(v), badGroup(mhaWeights(5), mhaKeys)],
    ['setWeights bias missing before a bad key', (m, c, v) => m.setWeights(v),
      [{ ...mhaWeights(5), bQ: undefined, bK: 'x' }]],
    ['setWeightsFromPyTorch', (m, c, v) => m.setWeightsFromPyTorch(v),
      ['x', null, {}, { bias_k: new Float32Array(1) }, { bogus: new Float32Array(1) },
        { in_proj_weight: () => {} }, { in_proj_weight: new Float32Array(3) },
        { 'out_proj.weight': new Foo(), out_proj_weight: new Float32Array(1) }]],
  ];
}

function cacheCalls() {
  return [
    ['KVCache.append keys', (m, c, v) => c.cache.append(v, tensor([B, 1, d], 9)), badTensors],
    ['KVCache.append values', (m, c, v) => c.cache.append(tensor([B, 1, d], 9), v), badTensors],
    ['KVCache.truncate', (m, c, v) => c.cache.truncate(v),
      ['x', -1, 1.5, 5, () => {}, Symbol('n'), {}, null, 2 ** 40]],
  ];
}

function layerCalls(kind) {
  const decoder = kind === 'TransformerDecoderLayer';
  const w = randomLayerWeights(d, f, 7, { decoder });
  const groups = decoder ? ['selfAttention', 'crossAttention', 'ffn', 'norm1', 'norm2', 'norm3']
    : ['attention', 'ffn', 'norm1', 'norm2'];
  const setWeights = [['setWeights', (l, c, v) => l.setWeights(v),
    ['x', null, [], { ...w, bogus: {} }, ...groups.flatMap((g) => badGroup(w[g], Object.keys(w[g]))
      .map((bad) => ({ ...w, [g]: bad })))]],
  ['setWeightsFromPyTorch', (l, c, v) => l.setWeightsFromPyTorch(v),
    ['x', null, {}, { bogus: new Float32Array(1) }, { 'linear1.weight': () => {} },
      { 'self_attn.in_proj_weight': new Float32Array(3) }]]];
  const selfOptions = ['attnMask', 'boolMask', 'keyPaddingMask', 'kvLengths', 'window', 'scale',
    'softcap', 'causal', 'training'];
  if (!decoder) {
    return [
      ['forward x', (l, c, v) => l.forward(v), badTensors],
      ['forward options', (l, c, v) => l.forward(x, v), badOptions(selfOptions)],
      ['forward options, two bad', (l, c, v) => l.forward(x, v),
        [{ causal: 1, attnMask: 'x' }, { causal: 'top-left', window: 'x' }]],
      ...setWeights,
    ];
  }
  return [
    ['forward x', (l, c, v) => l.forward(v, memory), badTensors],
    ['forward memory', (l, c, v) => l.forward(x, v), badTensors],
    ['forward memory as cache', (l, c) => l.forward(x, c.cache), [0]],
    ['forward options', (l, c, v) => l.forward(x, memory, v),
      badOptions([...selfOptions, 'memoryKeyPaddingMask'])],
    ['forward options, two bad', (l, c, v) => l.forward(x, c.memory, v),
      [{ causal: 1, attnMask: 'x' }, { memoryKeyPaddingMask: 'x', kvLengths: 'y' }]],
    ['forwardIncremental x', (l, c, v) => l.forwardIncremental(v, c.cache, c.memory), badTensors],
    ['forwardIncremental cache', (l, c, v) => l.forwardIncremental(step, v, c.memory),
      [undefined, 'x', {}, x]],
    ['forwardIncremental memory as cache', (l, c) => l.forwardIncremental(step, c.cache,
      c.cache), [0]],
    ['forwardIncremental memory', (l, c, v) => l.forwardIncremental(step, c.cache, v),
      badTensors],
    ['forwardIncremental options', (l, c, v) => l.forwardIncremental(step, c.cache, c.memory, v),
      badOptions(selfOptions)],
    ['forwardIncremental bad options and cache', (l, c, v) => l.forwardIncremental(step, v,
      c.memory, { window: 'x' }), ['x']],
    ['createKVCache', (l, c, v) => l.createKVCache(v), badOptions(['batch', 'maxLength'])],
    ['precomputeMemory memory', (l, c, v) => l.precomputeMemory(v), badTensors],
    ['precomputeMemory options', (l, c, v) => l.precomputeMemory(memory, v),
      badOptions(['keyPaddingMask'])],
    ...setWeights,
  ];
}

// What a call does: { class, message } of its error, or 'ok'.
async function outcome(call) {
  try {
    await call();
    return 'ok';
  } catch (e) {
    return { class: e?.constructor?.name, message: e?.message };
  }
}

// Runs every call of `calls` with each of its bad values on the synchronous
// target and the pooled one (made by `make(kind)` with the same weights
// and fresh caches for each call), and lists those that differ.
async function differences(calls, sync, pooled, restore) {
  const found = [];
  for (const [label, call, values] of calls) {
    for (const [i, v] of values.entries()) {
      const want = await outcome(() => call(sync.target, sync.caches, v));
      const got = await outcome(() => call(pooled.target, pooled.caches, v));
      if (JSON.stringify(got) !== JSON.stringify(want)) found.push({ label, i, want, got });
      await restore();
    }
  }
  return found;
}

describe.each([1, 2])('pool of %i workers', (workers) => {
  test('MultiHeadAttention, its KVCache and precomputed K/V', async () => {
    const pool = pools[workers];
    const config = { dModel: d, numHeads: 2 };
    const w = mhaWeights(5);
    const sync = { target: track(new module.MultiHeadAttention(config)) };
    const pooled = { target: await pool.MultiHeadAttention(config) };
    sync.target.setWeights(w);
    await pooled.target.setWeights(w);
    const caches = async (side, target) => {
      side.caches = { cache: await target.createKVCache({ batch: B, maxLength: 4 }),
        memory: await target.precomputeKeyValue(memory) };
    };
    await caches(sync, sync.target);
    await caches(pooled, pooled.target);
    const restore = async () => {
      sync.target.setWeights(w);
      await pooled.target.setWeights(w);
      sync.caches.cache.reset();
      await pooled.caches.cache.reset();
    };
    expect(await differences([...attentionCalls(), ...cacheCalls()], sync, pooled, restore))
      .toEqual([]);
    await pooled.target.dispose();
  });

  test.each([
    ['TransformerEncoderLayer', 'whole'], ['TransformerEncoderLayer', 'split'],
    ['TransformerDecoderLayer', 'whole'], ['TransformerDecoderLayer', 'split'],
  ])('%s placed %s', async (kind, placement) => {
    const pool = pools[workers];
    const config = { dModel: d, numHeads: 2, ffnDim: f };
    const w = randomLayerWeights(d, f, 7, { decoder: kind === 'TransformerDecoderLayer' });
    const sync = { target: track(new module[kind](config)), caches: {} };
    const pooled = { target: await pool[kind](config, { placement }), caches: {} };
    sync.target.setWeights(w);
    await pooled.target.setWeights(w);
    if (kind === 'TransformerDecoderLayer') {
      sync.caches = { cache: track(sync.target.createKVCache({ batch: B, maxLength: 4 })),
        memory: track(sync.target.precomputeMemory(memory)) };
      pooled.caches = { cache: await pooled.target.createKVCache({ batch: B, maxLength: 4 }),
        memory: await pooled.target.precomputeMemory(memory) };
    }
    const restore = async () => {
      sync.target.setWeights(w);
      await pooled.target.setWeights(w);
      sync.caches.cache?.reset();
      await pooled.caches.cache?.reset();
    };
    expect(await differences(layerCalls(kind), sync, pooled, restore)).toEqual([]);
    await pooled.target.dispose();
  });

  test('objects without weights, disposed, and their disposed caches', async () => {
    const pool = pools[workers];
    const kinds = [['MultiHeadAttention', { dModel: d, numHeads: 2 }],
      ['TransformerEncoderLayer', { dModel: d, numHeads: 2, ffnDim: f }],
      ['TransformerDecoderLayer', { dModel: d, numHeads: 2, ffnDim: f }]];
    for (const [kind, config] of kinds) {
      for (const placement of kind === 'MultiHeadAttention' ? [undefined] : ['whole', 'split']) {
        const sync = new module[kind](config);
        const pooled = await pool[kind](config, placement && { placement });
        const calls = kind === 'MultiHeadAttention'
          ? [(m) => m.forward(x), (m) => m.precomputeKeyValue(memory), (m) => m.forwardIncremental(step, 'x')]
          : kind === 'TransformerEncoderLayer' ? [(l) => l.forward(x), (l) => l.forward('x')]
            : [(l) => l.forward(x, memory), (l) => l.precomputeMemory(memory),
              (l) => l.forwardIncremental(step, 'x', memory)];
        const compare = async (extra) => {
          for (const call of [...calls, ...extra]) {
            expect({ kind, placement, got: await outcome(() => call(pooled)) })
              .toEqual({ kind, placement, got: await outcome(() => call(sync)) });
          }
        };
        await compare([]);
        sync.dispose();
        await pooled.dispose();
        await compare([(o) => o.setWeights({}), (o) => o.createKVCache?.({ batch: 1, maxLength: 1 })]);
      }
    }
    // A disposed cache, a cache and memory of another pool or of a module.
    const config = { dModel: d, numHeads: 2 };
    const sync = track(new module.MultiHeadAttention(config));
    const pooled = await pool.MultiHeadAttention(config);
    sync.setWeights(mhaWeights(5));
    await pooled.setWeights(mhaWeights(5));
    const syncCache = sync.createKVCache({ batch: B, maxLength: 4 });
    const pooledCache = await pooled.createKVCache({ batch: B, maxLength: 4 });
    syncCache.dispose();
    await pooledCache.dispose();
    for (const call of [(m, c) => m.forwardIncremental(step, c), (m, c) => c.append(step, step),
      (m, c) => c.truncate(0), (m, c) => c.keys(), (m, c) => c.reset()]) {
      expect(await outcome(() => call(pooled, pooledCache)))
        .toEqual(await outcome(() => call(sync, syncCache)));
    }
    const other = pools[workers === 1 ? 2 : 1];
    const otherMha = await other.MultiHeadAttention(config);
    const otherCache = await otherMha.createKVCache({ batch: B, maxLength: 4 });
    const moduleCache = track(sync.createKVCache({ batch: B, maxLength: 4 }));
    expect((await outcome(() => pooled.forwardIncremental(step, otherCache))).message).toBe(
      "MultiHeadAttention.forwardIncremental: cache: this KVCache belongs to another pool, not " +
      "to this pool; use one made by this pool's objects");
    expect((await outcome(() => pooled.forwardIncremental(step, moduleCache))).message).toBe(
      'MultiHeadAttention.forwardIncremental: cache: this KVCache belongs to a module ' +
      "(createAttentionModule()), not to this pool; use one made by this pool's objects");
    await otherMha.dispose();
    await pooled.dispose();
  });

  test('a method called on what is not its object (`const f = mha.forward; f(x)`)', async () => {
    const pool = pools[workers];
    const asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');
    // [kind, placement, methods]: each public method of the synchronous class.
    const kinds = [
      ['MultiHeadAttention', undefined, ['setWeights', 'setWeightsFromPyTorch', 'forward',
        'createKVCache', 'forwardIncremental', 'precomputeKeyValue', 'dispose']],
      ...['whole', 'split'].flatMap((placement) => [
        ['TransformerEncoderLayer', placement, ['setWeights', 'setWeightsFromPyTorch', 'forward',
          'dispose']],
        ['TransformerDecoderLayer', placement, ['setWeights', 'setWeightsFromPyTorch', 'forward',
          'forwardIncremental', 'createKVCache', 'precomputeMemory', 'dispose']]]),
    ];
    const made = async (side, kind, placement) => {
      const config = kind === 'MultiHeadAttention' ? { dModel: d, numHeads: 2 }
        : { dModel: d, numHeads: 2, ffnDim: f };
      const target = side === module ? track(new module[kind](config))
        : await pool[kind](config, placement && { placement });
      const attention = side === module ? track(new module.MultiHeadAttention({ dModel: d, numHeads: 2 }))
        : await pool.MultiHeadAttention({ dModel: d, numHeads: 2 });
      await attention.setWeights(mhaWeights(5));
      const cache = await attention.createKVCache({ batch: B, maxLength: 4 });
      const kv = await attention.precomputeKeyValue(memory);
      return { target, cache, kv, dispose: async () => {
        for (const o of [target, cache, kv, attention]) await o.dispose();
      } };
    };
    const found = [];
    const compare = async (label, call, sync, pooled) => {
      const returned = call(pooled);
      expect({ label, promise: returned instanceof Promise }).toEqual({ label, promise: true });
      const got = await outcome(() => returned);
      const want = await outcome(() => call(sync));
      if (JSON.stringify(got) !== JSON.stringify(want)) found.push({ label, want, got });
    };
    for (const [kind, placement, methods] of kinds) {
      const sync = await made(module, kind, placement);
      const pooled = await made(pool, kind, placement);
      // Receivers: none, a plain object, a string, the cache (another kind).
      const receivers = [() => undefined, () => ({}), () => 'x', (side) => side.cache];
      for (const name of methods) {
        for (const [i, receiver] of receivers.entries()) {
          await compare(`${kind} ${placement} ${name} on receiver ${i}`,
            (side) => side.target[name].call(receiver(side), x), sync, pooled);
        }
      }
      for (const [name, value] of [['append', step], ['keys'], ['values'], ['truncate', 0],
        ['reset'], ['dispose']]) {
        await compare(`KVCache ${name}`, (side) => side.cache[name].call(side.kv, value, value),
          sync, pooled);
      }
      await compare('PrecomputedKeyValue dispose', (side) => side.kv.dispose.call(side.cache),
        sync, pooled);
      // [Symbol.asyncDispose] is dispose (the synchronous objects have Symbol.dispose).
      expect(await outcome(() => pooled.target[asyncDispose].call(undefined)))
        .toEqual(await outcome(() => sync.target.dispose.call(undefined)));
      await sync.dispose();
      await pooled.dispose();
    }
    expect(found).toEqual([]);
    const mha = await pool.MultiHeadAttention({ dModel: d, numHeads: 2 });
    const { forward } = mha;
    expect(await outcome(() => forward(x))).toEqual({ class: 'TypeError',
      message: 'MultiHeadAttention.forward: called on undefined, not a MultiHeadAttention' });
    await mha.setWeights(mhaWeights(5));
    expect((await mha.forward(x)).output.shape).toEqual([B, T, d]);
    await mha.dispose();
  });

  // Each case is called on each side with arguments made afresh (getters
  // keep state); [label, call(objects)].
  const argumentCases = () => {
    const detached = (a) => {
      structuredClone(a.buffer, { transfer: [a.buffer] });
      return a;
    };
    const shrunk = () => {
      const a = new Float32Array(new ArrayBuffer(B * T * d * 4, { maxByteLength: B * T * d * 8 }),
        0, B * T * d);
      a.buffer.resize(0);
      return a;
    };
    const revoked = () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    };
    const thrower = (message) => () => { throw new Error(message); };
    const sparse = Object.assign([4, 2], { length: 2 ** 32 - 1 });
    return [
      // Errors of reading, met where the synchronous API reads.
      ['a getter that throws, after an earlier key\'s error', (o) => o.mha.createKVCache(
        { batch: undefined, get maxLength() { return thrower('getter')(); } })],
      ['a getter that throws, after an earlier argument\'s error', (o) => o.mha.forward('x',
        undefined, undefined, { get causal() { return thrower('getter')(); } })],
      ['a Proxy whose keys cannot be listed, as data', (o) => o.mha.forward({ shape: x.shape,
        data: new Proxy(new Float32Array(B * T * d), { ownKeys: thrower('ownKeys') }) })],
      ['a Proxy whose keys cannot be listed, as a shape', (o) => o.mha.forward({ data: x.data,
        shape: new Proxy([B, T, d], { getOwnPropertyDescriptor: thrower('descriptor') }) })],
      ['a Proxy that throws, given to a layer', (o) => o.encoder.setWeights(
        new Proxy({}, { get: thrower('trap') }))],
      ['a revoked Proxy that is not read', (o) => o.mha.forward(x, undefined, revoked())],
      // Keys as the synchronous API reads them.
      ['an own key named __proto__', (o) => o.mha.forward(x, undefined, undefined,
        JSON.parse('{ "__proto__": 1 }'))],
      ['an inherited key read though not taken', (o) => o.mha.forwardIncremental(step, o.cache,
        Object.create({ causal: 'sideways' }))],
      ['an inherited keyPaddingMask of a layer\'s step', (o) => o.decoder.forwardIncremental(step,
        o.decoderCache, memory, Object.create({ keyPaddingMask: 'x' }))],
      ['an object of the pool where options go', (o) => o.decoder.forwardIncremental(step,
        o.decoderCache, memory, o.cache)],
      ['a Proxy of one, whose properties cannot be described', (o) => o.decoder.forwardIncremental(
        step, undefined, memory, new Proxy(o.cache, { getOwnPropertyDescriptor: thrower('descriptor') }))],
      // Arrays.
      ['a getter that writes into an earlier argument', (o) => {
        const q = structuredClone(x);
        return o.mha.forward(q, undefined, undefined, { get causal() { q.data.fill(NaN); return false; } });
      }],
      ['detached data', (o) => o.mha.forward({ data: detached(new Float32Array(B * T * d)),
        shape: x.shape })],
      ['shrunk data', (o) => o.mha.forward({ data: shrunk(), shape: x.shape })],
      ['detached f16 bits', (o) => o.mha.setWeights({ ...mhaWeights(5),
        wO: detached(new Uint16Array(d * d)) })],
      ['a detached shape', (o) => o.mha.forward(x, undefined, undefined,
        { attnMask: { data: new Float32Array(T * T), shape: detached(new Int8Array(2)) } })],
      ['a detached ArrayBuffer', (o) => o.mha.forward(x, undefined, undefined,
        { keyPaddingMask: detached(new Uint8Array(4)).buffer })],
      ['a DataView under a key named data', (o) => o.mha.precomputeKeyValue(memory,
        { data: new DataView(new ArrayBuffer(4)) })],
      ['kvLengths of length 2^32 - 1', (o) => o.mha.forward(x, undefined, undefined,
        { kvLengths: sparse })],
      ['kvLengths with a hole', (o) => o.mha.forward(x, undefined, undefined,
        { kvLengths: [T, , ] })], // eslint-disable-line no-sparse-arrays
      // A sharded cache's size error, as the whole attention's.
      ['a cache too large', (o) => o.mha.createKVCache({ batch: 1e9, maxLength: 4 })],
    ];
  };

  test('arguments as the synchronous API reads them: getters\' and proxies\' errors where it ' +
    'meets them, keys it reads, detached, shrunk and sparse arrays', async () => {
    const pool = pools[workers];
    const placement = workers === 2 ? 'split' : 'whole';
    const layerConfig = { dModel: d, numHeads: 2, ffnDim: f };
    const decoderWeights = randomLayerWeights(d, f, 7, { decoder: true });
    const objects = async (side) => {
      const make = (kind, config) => (side === module ? track(new module[kind](config))
        : pool[kind](config, kind === 'MultiHeadAttention' ? undefined : { placement }));
      const o = { mha: await make('MultiHeadAttention', { dModel: d, numHeads: 2 }),
        encoder: await make('TransformerEncoderLayer', layerConfig),
        decoder: await make('TransformerDecoderLayer', layerConfig) };
      await o.mha.setWeights(mhaWeights(5));
      await o.encoder.setWeights(randomLayerWeights(d, f, 6));
      await o.decoder.setWeights(decoderWeights);
      o.cache = await o.mha.createKVCache({ batch: B, maxLength: 4 });
      o.decoderCache = await o.decoder.createKVCache({ batch: B, maxLength: 4 });
      return o;
    };
    const [sync, pooled] = [await objects(module), await objects(pool)];
    const found = [];
    for (const [label, call] of argumentCases()) {
      const want = await outcome(() => call(sync));
      const got = await outcome(() => call(pooled));
      // The synchronous API's own message, or the caller's error.
      const judged = want === 'ok' ||
        /^(\w+\.\w+: |getter$|trap$|ownKeys$|descriptor$)/.test(want.message);
      if (!judged || JSON.stringify(got) !== JSON.stringify(want)) found.push({ label, want, got });
    }
    expect(found).toEqual([]);
    // A cache's append, truncate and reset resolve to nothing, as the
    // synchronous ones return nothing.
    for (const o of [sync, pooled]) o.cache.reset();
    for (const call of [(c) => c.append(step, step), (c) => c.truncate(0), (c) => c.reset()]) {
      expect(await call(pooled.cache)).toBe(call(sync.cache));
    }
    for (const o of [pooled.cache, pooled.decoderCache, pooled.mha, pooled.encoder, pooled.decoder]) {
      await o.dispose();
    }
  });

  test('module functions and constructors', async () => {
    const pool = pools[workers];
    const norm = { gamma: randomFloats(d, 1), beta: randomFloats(d, 2) };
    const heads = tensor([B, 2, T, 4], 4);
    const calls = [
      ['positionalEncoding t', (p, v) => p.positionalEncoding(v, d),
        [undefined, 'x', -1, 1.5, () => {}, Symbol('t'), 0]],
      ['positionalEncoding dModel', (p, v) => p.positionalEncoding(3, v), ['x', 0, 3, () => {}]],
      ['layerNorm x', (p, v) => p.layerNorm(v, norm), badTensors],
      ['layerNorm options', (p, v) => p.layerNorm(x, v),
        [undefined, ...badOptions(['gamma', 'beta', 'eps', 'backend'])]],
      ['attention q', (p, v) => p.attention(v, heads, heads), badTensors],
      ['attention options', (p, v) => p.attention(heads, heads, heads, v),
        badOptions(['causal', 'scale', 'window', 'attnMask', 'numHeads', 'backend'])],
      ['quantizeInt8', (p, v) => p.quantizeInt8(v, 2, 2),
        ['x', new Float64Array(4), () => {}, new Float32Array(3)]],
      ['MultiHeadAttention', (p, v) => (p === pool ? p.MultiHeadAttention(v).then((m) => m.dispose())
        : new p.MultiHeadAttention(v).dispose()),
      ['x', null, {}, { dModel: 8 }, { dModel: 'x', numHeads: 2 }, { dModel: () => {}, numHeads: 2 },
        { dModel: 8, numHeads: 2, bogus: () => {} }, { dModel: 8, numHeads: 3 },
        { dModel: 8, numHeads: 2, rope: { style: () => {} } }, { dModel: 8, numHeads: 2, rope: 'x' },
        { dModel: 8, numHeads: 2, weights: Symbol('w') }, { dModel: 8, numHeads: 2, weights: 'f64' }]],
      ['TransformerEncoderLayer', (p, v) => (p === pool
        ? p.TransformerEncoderLayer(v).then((l) => l.dispose())
        : new p.TransformerEncoderLayer(v).dispose()),
      ['x', {}, { dModel: 8, numHeads: 2 }, { dModel: 8, numHeads: 2, ffnDim: () => {} },
        { dModel: 8, numHeads: 2, ffnDim: 4, activation: 'tanh' },
        { dModel: 8, numHeads: 2, ffnDim: 4, eps: Symbol('e') }]],
    ];
    const found = [];
    for (const [label, call, values] of calls) {
      for (const [i, v] of values.entries()) {
        const want = await outcome(() => call(module, v));
        const got = await outcome(() => call(pool, v));
        if (JSON.stringify(got) !== JSON.stringify(want)) found.push({ label, i, want, got });
      }
    }
    expect(found).toEqual([]);
  });
});
