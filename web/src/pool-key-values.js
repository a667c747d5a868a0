// A pool's KV caches and precomputed keys/values: held by the workers as the
// object that made them holds its heads (by heads, or whole in one worker),
// serving only objects held the same way; their stand-ins for worker 0's
// synchronous checks; and the checks of such an argument, with the
// synchronous API's messages.
import { describe } from './arguments.js';
import { holdsKeyValues } from './caches.js';
import { copyArguments, tensor, whole } from './pool-arguments.js';
import { joinAxis } from './pool-join.js';
import { checkReceivers, PoolObject } from './pool-object.js';
import { readTensor } from './tensors.js';
import { columns } from './weight-forms.js';

// The KVCaches and PrecomputedKeyValues of every pool, and where the
// synchronous API's messages say they come from.
const KEY_VALUES = new WeakSet();
const KEY_VALUES_FROM = {
  KVCache: 'createKVCache()',
  PrecomputedKeyValue: 'precomputeKeyValue() or precomputeMemory()',
};

// Whether `v` is read as a cache or precomputed keys and values (a pool's or
// a module's), not as a tensor.
export const isKeyValues = (v) => KEY_VALUES.has(v) || holdsKeyValues(v);

export class KVCache extends PoolObject {
  #batch;
  #maxLength;
  #attention;
  #length = 0;

  // attention: the resolved config of the attention that made it (its
  // heads' widths), or undefined for a cache of a layer placed whole.
  constructor(context, shards, batch, maxLength, attention) {
    super(context, context.newRef(), shards);
    KEY_VALUES.add(this);
    this.#batch = batch;
    this.#maxLength = maxLength;
    this.#attention = attention;
  }

  get batch() { return this.#batch; }
  get maxLength() { return this.#maxLength; }
  get length() {
    if (this.disposed) throw new Error('KVCache.length: this KVCache was disposed; create a new one');
    return this.#length;
  }

  // Runs job(length before) as the next call on this cache, whose length
  // is then lengthAfter(length before). A failed job leaves every shard at
  // the length before (one may have failed where another went on).
  step(job, lengthAfter) {
    return this.enqueue(async () => {
      const before = this.#length;
      let result;
      try {
        result = await job(before);
      } catch (e) {
        if (!this.disposed && !this.workers.dead) {
          await this.call('truncate', [before]).catch(() => {});
        }
        throw e;
      }
      this.#length = lengthAfter(before);
      return result;
    });
  }

  // The cached keys or values, [batch, length, heads * headDim], the
  // workers' features side by side.
  #gather(method) {
    return this.enqueue(async () => joinAxis(await this.call(method), 2));
  }

  keys() { return this.#gather('keys'); }
  values() { return this.#gather('values'); }
  // (An n that is not a size fails in the workers, as synchronously.)
  // truncate, reset and append resolve to nothing, as the synchronous
  // ones return nothing.
  truncate(n) {
    const taken = copyArguments([n], [whole]);
    return this.step(async () => { await this.call('truncate', taken()); },
      () => taken()[0] ?? 0);
  }
  reset() { return this.step(async () => { await this.call('reset'); }, () => 0); }

  // Keys [B, n, kvHeads * headDim] and values [B, n, kvHeads * headDimV]
  // (as keys() and values() give them), each worker given its heads'
  // features. Keys or values of another width, and whatever a worker
  // refuses, are judged by worker 0 on a synchronous cache of this one's
  // sizes, for the synchronous message.
  append(keys, values) {
    const where = 'KVCache.append';
    const taken = copyArguments([keys, values], [tensor, tensor]);
    let tokens = 0;
    return this.step(async (length) => {
      if (this.disposed) await this.call('append', []);
      const [keys, values] = taken();
      const k = readTensor(where, 'keys', keys);
      const v = readTensor(where, 'values', values);
      tokens = k.tokens;
      const a = this.#attention;
      if (a === undefined) {
        await this.call('append', [keys, values]);
        return;
      }
      const kw = a.numKvHeads * a.headDim;
      const vw = a.numKvHeads * a.headDimV;
      let error;
      if (k.features === kw && v.features === vw && k.data.length % kw === 0 &&
        v.data.length % vw === 0) {
        const part = (t, width, { kvHeads: [from, to] }, dim) => ({
          data: columns(t.data, t.data.length / width, width, from * dim, to * dim),
          shape: [...t.shape.slice(0, -1), (to - from) * dim],
        });
        try {
          await this.call('append', [], (s) =>
            [part(keys, kw, s, a.headDim), part(values, vw, s, a.headDimV)]);
          return;
        } catch (e) {
          if (this.workers.dead) throw e;
          error = e;
        }
      }
      await this.workers.all([0], () => ({ op: 'check', kind: 'MultiHeadAttention', config: a,
        target: { standIn: 'KVCache', batch: this.#batch, maxLength: this.#maxLength, length },
        method: 'append', args: [keys, values] }));
      throw error;
    }, (length) => length + tokens);
  }
}

export class PrecomputedKeyValue extends PoolObject {
  #batch;
  #tokens;

  constructor(context, shards, batch, tokens) {
    super(context, context.newRef(), shards);
    KEY_VALUES.add(this);
    this.#batch = batch;
    this.#tokens = tokens;
  }

  get batch() { return this.#batch; }
  get tokens() { return this.#tokens; }
}

// A pooled cache or memory as worker 0's synchronous objects take it in a
// 'check': an empty one of its sizes (see pool-worker.js); any other
// argument as it is.
export function standIn(v) {
  if (v instanceof KVCache) {
    return { standIn: 'KVCache', batch: v.batch, maxLength: v.maxLength,
      length: v.disposed ? 0 : v.length, disposed: v.disposed };
  }
  if (v instanceof PrecomputedKeyValue) {
    return { standIn: 'PrecomputedKeyValue', batch: v.batch, tokens: v.tokens,
      disposed: v.disposed };
  }
  return v;
}

// The pool object behind `v`, { poolRef }: a `Class` (KVCache or
// PrecomputedKeyValue) of the pool of `owner` (the object it is given to,
// or the part of it that takes it), held by the workers in the same way as
// `owner`, or an error as the synchronous API's for such an argument.
export function poolObject(where, name, v, Class, owner) {
  if ((KEY_VALUES.has(v) && v.context !== owner.context) || holdsKeyValues(v)) {
    throw new Error(`${where}: ${name}: this ${v.constructor.name} belongs to ` +
      `${holdsKeyValues(v) ? 'a module (createAttentionModule())' : 'another pool'}, not to ` +
      "this pool; use one made by this pool's objects");
  }
  if (!(v instanceof Class)) {
    throw new TypeError(`${where}: ${name}: expected a ${Class.name} (from ` +
      `${KEY_VALUES_FROM[Class.name]}), got ` +
      `${KEY_VALUES.has(v) ? `a ${v.constructor.name}` : describe(v)}`);
  }
  const layout = (list) => list.map((s) => `${s.worker}:${s.kvHeads ?? ''}`).join(' ');
  if (layout(v.shards) !== layout(owner.shards)) {
    throw new Error(`${where}: ${name}: this ${Class.name} is held by the pool's workers ` +
      'in another way than this object (it was made by an object of another head layout ' +
      'or in another worker); use one made by an object like this one');
  }
  return { poolRef: v.ref };
}

checkReceivers(KVCache, 'KVCache');
checkReceivers(PrecomputedKeyValue, 'PrecomputedKeyValue');
