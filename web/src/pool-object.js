// The base of a pool's objects: its parts in the pool's workers under one
// ref, its calls queued in the order they were made, a call on every part
// or gathered by the first, dispose(); and the TypeError of a method called
// on anything but one of its class's objects.
import { describe } from './arguments.js';
import { POOL_OBJECTS } from './pool-arguments.js';
import { outgoing } from './pool-outgoing.js';
import { buffers } from './weight-forms.js';

export const asyncDisposeSymbol = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');

// The methods callers use of the pool's classes, by the synchronous class
// each stands for (see checkReceivers).
const PUBLIC_METHODS = {
  MultiHeadAttention: ['setWeights', 'setWeightsFromPyTorch', 'forward', 'createKVCache',
    'forwardIncremental', 'precomputeKeyValue', 'dispose'],
  TransformerEncoderLayer: ['setWeights', 'setWeightsFromPyTorch', 'forward', 'dispose'],
  TransformerDecoderLayer: ['setWeights', 'setWeightsFromPyTorch', 'forward', 'forwardIncremental',
    'createKVCache', 'precomputeMemory', 'dispose'],
  TransformerBlock: ['setWeights', 'forward', 'forwardIncremental', 'createKVCache', 'dispose'],
  TransformerStack: ['setWeights', 'forward', 'forwardIncremental', 'createKVCaches', 'dispose'],
  KVCache: ['append', 'keys', 'values', 'truncate', 'reset', 'dispose'],
  PrecomputedKeyValue: ['dispose'],
};

// Each public method of `Class` (whose objects stand for the synchronous
// `kind`), called on anything but one of its objects (`const f =
// mha.forward; f(x)`), rejects with the synchronous method's TypeError, not
// the engine's at `this.enqueue`; [Symbol.asyncDispose] is its dispose.
export function checkReceivers(Class, kind) {
  for (const name of PUBLIC_METHODS[kind]) {
    const method = Class.prototype[name];
    const checked = { [name](...args) {
      // The WeakSet first: it runs no trap of a Proxy given as `this`.
      if (POOL_OBJECTS.has(this) && this instanceof Class) return method.apply(this, args);
      return new Promise(() => {
        throw new TypeError(`${kind}.${name}: called on ${describe(this)}, not a ${kind}`);
      });
    } }[name];
    Object.defineProperty(checked, 'length', { value: method.length });
    Object.defineProperty(Class.prototype, name, { value: checked, writable: true,
      configurable: true });
  }
  Object.defineProperty(Class.prototype, asyncDisposeSymbol, { value: Class.prototype.dispose,
    writable: true, configurable: true });
}

// An object of the pool of `context` (pool-context.js): its parts in the
// workers of `shards`, all under one ref; its calls run one after the
// other, in the order they were made.
export class PoolObject {
  #context;
  #ref;
  #shards;
  #tail = Promise.resolve();
  #disposed = false;

  constructor(context, ref, shards) {
    this.#context = context;
    this.#ref = ref;
    this.#shards = shards;
    POOL_OBJECTS.add(this);
  }

  // Not own properties: an object of the pool given where options go has
  // no keys, as the synchronous API's objects have none.
  get context() { return this.#context; }
  get workers() { return this.#context.workers; }
  get ref() { return this.#ref; }
  get shards() { return this.#shards; }
  get disposed() { return this.#disposed; }

  enqueue(job) {
    const run = this.#tail.then(job);
    this.#tail = run.catch(() => {});
    return run;
  }

  // `method` on every part, [each part's value]; perShard(shard) gives the
  // arguments where they differ.
  async call(method, args = [], perShard = undefined, out = undefined) {
    const { sent, release } = outgoing((i) => perShard?.(this.shards[i]) ?? args,
      this.shards.length);
    const values = await this.workers.all(this.shards.map((s) => s.worker),
      (i) => ({ op: 'call', ref: this.ref, method, args: sent[i].args, out }),
      (i) => sent[i].transfer);
    release();
    return values;
  }

  // `method` on every part, their values joined by the first part's worker
  // (pool-worker.js): an attention's outputs or an FFN's summed, the rest
  // joined along the head axis; or, for a sublayer of a split layer, the
  // layer's next input.
  async gather(method, args, perShard = undefined, sublayer = undefined) {
    const { sent, release } = outgoing((i) => perShard?.(this.shards[i]) ?? args,
      this.shards.length);
    try {
      return await this.workers.gather(this.shards.map((s) => s.worker),
        (i) => ({ op: 'call', ref: this.ref, method, args: sent[i].args, sublayer }),
        (i) => sent[i].transfer);
    } finally {
      if (!this.workers.dead) release();
    }
  }

  // setWeights(parts[i]) on part i: { key: typed array } made for that
  // part alone, whose buffers the message moves instead of copying.
  sendWeights(parts) {
    return this.workers.all(this.shards.map((s) => s.worker),
      (i) => ({ op: 'call', ref: this.ref, method: 'setWeights', args: [parts[i]] }),
      (i) => buffers(parts[i]));
  }

  dispose() {
    return this.enqueue(async () => {
      if (this.#disposed || this.workers.dead) return;
      this.#disposed = true;
      await this.released();
      await this.workers.all(this.shards.map((s) => s.worker),
        () => ({ op: 'dispose', ref: this.ref }));
    });
  }

  // What else disposing of the object releases (a promise, or nothing).
  released() {}

  [asyncDisposeSymbol]() { return this.dispose(); }
}

// A pooled attention or layer: its config and kernels as worker 0's
// synchronous object resolved and reported them.
export class ConfiguredObject extends PoolObject {
  #config;
  #kernels;

  constructor(context, ref, shards, { config, kernels }) {
    super(context, ref, shards);
    this.#config = config;
    this.#kernels = kernels;
  }

  get config() { return this.#config; }
  get kernels() { return this.#kernels; }
}
