// createAttentionPool: MultiHeadAttention split by heads over workers, each
// with its own wasm instance (pool-worker.js), so that a forward runs off the
// calling thread and on several cores without SharedArrayBuffer (a page need
// not be cross-origin isolated).
//
// The output is sum_h z_h W_O^h + b_O, and head h needs only its own columns
// of W_Q, W_K, W_V and its own rows of W_O. Worker i holds a contiguous group
// of key/value heads with their query heads (groups differ by at most one) as
// an attention of its own (config.headDim), the first group with b_O, the
// others without. A call goes to each of its workers at once; the others send
// their partial outputs to the first, which adds them in worker order (so a
// result does not depend on which worker finished first) and answers: one
// message back per call, and no adding on the calling thread. Where
// SharedArrayBuffer exists (Node, cross-origin isolated pages) the inputs are
// written once into shared memory for all the workers; elsewhere each worker
// gets a copy of its own. KV caches and precomputed K/V live in the workers,
// sharded by the same heads.
//
// Layers are split over the workers (pool-layers.js: attention by heads, FFN
// by hidden units) or held whole by one worker, as layerPlacement's cost
// rule or the caller picks.
//
// Each pooled method copies its arguments when called (pool-arguments.js),
// and its queued job works on those copies, under the arguments' names.
// Arguments are type-checked here when that is cheap; shapes and values are
// checked by the synchronous objects in the workers, whose errors come back
// with their class and message.
import { checkObject, describe, float32, requiredSize, weightMatrix } from './arguments.js';
import { readSharedAttentionOptions } from './attention.js';
import { holdsKeyValues, readCacheOptions } from './caches.js';
import { compileForWorkers } from './loader.js';
import { OPTION_KEYS } from './option-keys.js';
import { ARGUMENTS, copyArguments, plainMember, POOL_OBJECTS, tensor, toMessage, whole,
  withMembers } from './pool-arguments.js';
import { joinAxis, rebuild } from './pool-join.js';
import { makePooledLayers } from './pool-layers.js';
import { fromPretrainedPooled } from './pretrained.js';
import { attentionWeightsFromPyTorch } from './pytorch-attention-state.js';
import { readTensor } from './tensors.js';
import { checkWorkerCount } from './thread-workers.js';
import { fromPackage, inViteDeps } from './vite-dev.js';
import { buffers, columns, fits, quantizedWhole, rowRange } from './weight-forms.js';

const POOL_OPTION_KEYS = ['workers', 'build', 'backend', 'wasmPath'];
const BUILD_FLAGS = {
  'relaxed-simd': { relaxedSimd: true },
  simd: { simd: true, relaxedSimd: false },
  nosimd: { simd: false },
};
const asyncDisposeSymbol = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');
// Lets tests stop a worker as if it had crashed.
const TERMINATE_WORKER = Symbol.for('simd-attention.pool.terminateWorker');

// The key of a split layer's sublayer request ({ norm, name, where }: see
// pool-worker.js) in the options of its attention's call; not an option: a
// symbol, which no structured clone or checkObject sees.
const SUBLAYER = Symbol('sublayer');

// The methods callers use of the pool's classes, by the synchronous class
// each stands for (see checkReceivers).
const PUBLIC_METHODS = {
  MultiHeadAttention: ['setWeights', 'setWeightsFromPyTorch', 'forward', 'createKVCache',
    'forwardIncremental', 'precomputeKeyValue', 'dispose'],
  TransformerEncoderLayer: ['setWeights', 'setWeightsFromPyTorch', 'forward', 'dispose'],
  TransformerDecoderLayer: ['setWeights', 'setWeightsFromPyTorch', 'forward', 'forwardIncremental',
    'createKVCache', 'precomputeMemory', 'dispose'],
  KVCache: ['append', 'keys', 'values', 'truncate', 'reset', 'dispose'],
  PrecomputedKeyValue: ['dispose'],
};

// Each public method of `Class` (whose objects stand for the synchronous
// `kind`), called on anything but one of its objects (`const f =
// mha.forward; f(x)`), rejects with the synchronous method's TypeError, not
// the engine's at `this.enqueue`; [Symbol.asyncDispose] is its dispose.
function checkReceivers(Class, kind) {
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

// The KVCaches and PrecomputedKeyValues of every pool, and where the
// synchronous API's messages say they come from.
const KEY_VALUES = new WeakSet();
const KEY_VALUES_FROM = {
  KVCache: 'createKVCache()',
  PrecomputedKeyValue: 'precomputeKeyValue() or precomputeMemory()',
};

// Whether `v` is read as a cache or precomputed keys and values (a pool's or
// a module's), not as a tensor.
const isKeyValues = (v) => KEY_VALUES.has(v) || holdsKeyValues(v);

const isNode = typeof process === 'object' && process !== null &&
  typeof process.versions?.node === 'string' && typeof window === 'undefined';

// Whether the workers can share memory with this thread: browsers give
// SharedArrayBuffer to cross-origin isolated pages only.
const canShare = typeof SharedArrayBuffer === 'function' && globalThis.crossOriginIsolated !== false;

// ---------------------------------------------------------------------------
// Workers and messages
// ---------------------------------------------------------------------------

// A worker as the pool uses it: post(), terminate(), and Node's ref/unref
// (a Node worker keeps the process alive only while a call waits on it).
async function startWorker(onMessage, onDeath) {
  if (isNode) {
    const name = 'node:worker_threads';
    const { Worker } = await import(/* webpackIgnore: true */ /* @vite-ignore */ name);
    const worker = new Worker(new URL('./pool-worker.js', import.meta.url));
    worker.on('message', onMessage);
    worker.on('error', (e) => onDeath(`threw ${e?.message ?? e}`));
    worker.on('exit', (code) => onDeath(`exited with code ${code}`));
    return {
      post: (message, transfer) => worker.postMessage(message, transfer),
      terminate: () => worker.terminate(),
      ref: () => worker.ref(),
      unref: () => worker.unref(),
    };
  }
  // The literal form bundlers find and build; under Vite's dev server, whose
  // optimizer moved this module, the package's own file.
  const worker = inViteDeps ? new Worker(fromPackage('src/pool-worker.js'), { type: 'module' })
    : new Worker(new URL('./pool-worker.js', import.meta.url), { type: 'module' });
  worker.addEventListener('message', (event) => onMessage(event.data));
  worker.addEventListener('error', (event) => {
    event.preventDefault();
    onDeath(`failed: ${event.message || 'its script did not load'}`);
  });
  worker.addEventListener('messageerror', () => onDeath('sent a message that could not be read'));
  return {
    post: (message, transfer) => worker.postMessage(message, transfer),
    terminate: () => worker.terminate(),
    ref: () => {},
    unref: () => {},
  };
}

// The workers of one pool, and the replies they owe. A request never rejects
// for an error in the worker: it resolves to { value } or { error }, so that a
// call sent to several workers can wait for all of them. It rejects when the
// pool dies or is disposed.
class Workers {
  #links = [];
  #pending = new Map(); // id -> { resolve, reject }
  #nextId = 1;
  #failure = null; // the Error every call gets once the pool is dead or disposed
  dead = false;

  static async start(count) {
    const workers = new Workers();
    for (let i = 0; i < count; ++i) {
      workers.#links.push(await startWorker((m) => workers.#reply(m),
        (why) => workers.#die(i, why)));
    }
    return workers;
  }

  // Gives each worker its index and a MessageChannel to every other one, on
  // which gathered calls send their parts (see gather).
  connect() {
    const peers = this.#links.map(() => []);
    for (let i = 0; i < this.count; ++i) {
      for (let j = i + 1; j < this.count; ++j) {
        const { port1, port2 } = new MessageChannel();
        peers[i].push([j, port1]);
        peers[j].push([i, port2]);
      }
    }
    return this.all(peers.map((_, i) => i), (i) => ({ op: 'connect', index: i, peers: peers[i] }),
      (i) => peers[i].map(([, port]) => port));
  }

  get count() { return this.#links.length; }

  // Rejects with the pool's failure once it is dead or disposed.
  check(where) {
    if (this.#failure !== null) throw new Error(`${where}: ${this.#failure}`);
  }

  // Its reply is registered only once the message is posted: a message that
  // cannot be sent rejects the request and leaves nothing waiting.
  request(worker, message, transfer = [], id = this.#nextId++) {
    if (this.#failure !== null) return Promise.reject(new Error(this.#failure));
    try {
      this.#post(worker, { ...message, id }, transfer);
    } catch (e) {
      return Promise.reject(e);
    }
    if (this.#pending.size === 0) for (const link of this.#links) link.ref();
    return new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }));
  }

  // The caller's data in the message (args, config, weights, target) as a
  // message carries it (toMessage). Their copies are plain data
  // (pool-arguments.js), so a failure here is the pool's own.
  #post(worker, message, transfer) {
    const fields = ['args', 'config', 'weights', 'target'].filter((k) => message[k] !== undefined);
    const { value, notes } = toMessage(Object.fromEntries(fields.map((k) => [k, message[k]])));
    try {
      this.#links[worker].post(notes.length === 0 ? message : { ...message, ...value, notes },
        transfer);
    } catch (e) {
      throw new TypeError(`the pool's workers cannot receive this call's arguments: ` +
        `${e?.message ?? e}`);
    }
  }

  // One call split over `workers`, sent to each of them at once: the first
  // gathers the others' parts and answers with them joined (pool-worker.js).
  // Its value, or its first error in worker order. The gatherer's request
  // goes last, so that none waits for a part that could not be sent.
  async gather(workers, message, transfer) {
    if (workers.length === 1) return (await this.all(workers, message, transfer))[0];
    if (this.#failure !== null) throw new Error(this.#failure);
    const id = this.#nextId++;
    const [first, ...rest] = workers;
    rest.forEach((w, i) => this.#post(w, { ...message(i + 1), gather: { id, to: first } },
      transfer?.(i + 1) ?? []));
    const { value, error } = await this.request(first,
      { ...message(0), gather: { id, from: rest } }, transfer?.(0), id);
    if (error !== undefined) throw rebuild(error);
    return value;
  }

  // The values of one request per worker in `workers`, or the first error.
  async all(workers, message, transfer) {
    const replies = await Promise.all(workers.map((w, i) =>
      this.request(w, message(i), transfer?.(i))));
    const failed = replies.find((r) => r.error !== undefined);
    if (failed) throw rebuild(failed.error);
    return replies.map((r) => r.value);
  }

  #reply({ id, value, error }) {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    if (this.#pending.size === 0) for (const link of this.#links) link.unref();
    pending.resolve(error === undefined ? { value } : { error });
  }

  #die(worker, why) {
    if (this.#failure !== null) return;
    this.dead = true;
    this.#end(`worker ${worker} of the attention pool ${why}; the pool is dead, ` +
      'create a new one');
  }

  dispose() {
    if (this.#failure === null) this.#end('this attention pool was disposed; create a new one');
  }

  terminate(worker) {
    this.#links[worker].terminate();
    this.#die(worker, 'was terminated');
  }

  #end(failure) {
    this.#failure = failure;
    for (const link of this.#links) link.terminate();
    for (const { reject } of this.#pending.values()) reject(new Error(failure));
    this.#pending.clear();
  }
}

// ---------------------------------------------------------------------------
// Splitting and joining along the head axis
// ---------------------------------------------------------------------------

// Units [from, to) of `units` held by each of `count` workers, empty groups
// left out: [{ worker, from, to }].
function splitUnits(units, count) {
  const groups = [];
  for (let w = 0; w < count; ++w) {
    const from = Math.floor((w * units) / count);
    const to = Math.floor(((w + 1) * units) / count);
    if (to > from) groups.push({ worker: w, from, to });
  }
  return groups;
}

// Entries [from, to) along the axis of size `size` of data shaped
// [outer, size, inner].
function sliceAxis(data, outer, size, inner, from, to) {
  const n = outer * (to - from) * inner;
  const out = data instanceof Uint8Array ? new Uint8Array(n) : new Float32Array(n);
  for (let o = 0; o < outer; ++o) {
    out.set(data.subarray((o * size + from) * inner, (o * size + to) * inner),
      o * (to - from) * inner);
  }
  return out;
}

// Whether a mask has a head axis to split: a bare mask of B * H * Tq * Tk
// values (C++ reads it as [B, H, Tq, Tk]) or a tensor shaped
// [B or 1, H, Tq, Tk]. Masks that broadcast over the heads, and anything C++
// will refuse or whose reading throws, go to every worker whole. (Read
// with plainMember: the workers' synchronous objects meet a read's error
// in the synchronous API's order.)
function hasHeadAxis(mask, batch, heads, tq, tk) {
  if (mask === undefined || mask === null || heads === 1) return false;
  if (ArrayBuffer.isView(mask)) {
    return 'length' in mask && batch * heads > 1 && mask.length === batch * heads * tq * tk;
  }
  const data = plainMember(mask, 'data');
  const shape = plainMember(mask, 'shape');
  const dims = Array.isArray(shape) && shape.length === 4
    ? [0, 1, 2, 3].map((i) => plainMember(shape, i)) : [];
  return dims.length === 4 && (dims[0] === batch || dims[0] === 1) && dims[1] === heads &&
    dims[2] === tq && dims[3] === tk && ArrayBuffer.isView(data) && 'length' in data &&
    data.length === dims[0] * heads * tq * tk;
}

// The mask's part for heads [from, to).
function headSlice(mask, batch, heads, tq, tk, from, to) {
  if (!hasHeadAxis(mask, batch, heads, tq, tk)) return mask;
  if (ArrayBuffer.isView(mask)) return sliceAxis(mask, batch, heads, tq * tk, from, to);
  const outer = mask.shape[0];
  return { data: sliceAxis(mask.data, outer, heads, tq * tk, from, to),
    shape: [outer, to - from, tq, tk] };
}

// The arguments of one call's messages to `count` workers, argsOf(i) those
// of the i-th: { sent: [{ args, transfer }], release }. A tensor that goes
// to several workers is copied once into shared memory that their messages
// refer to, where there is some; any other is copied into a buffer of the
// worker's own that its message moves instead of copying again (a
// structured clone is much slower than a copy). The same tensor twice (key
// = query) stays one tensor. release() returns the shared memory for reuse
// once every worker has answered (it has read its inputs by then).
function outgoing(argsOf, count) {
  const lists = Array.from({ length: count }, (_, i) => argsOf(i));
  const isTensor = (arg) => {
    const data = plainMember(arg, 'data');
    return ArrayBuffer.isView(data) && !(data instanceof DataView);
  };
  const workersOf = new Map(); // tensor -> how many workers it goes to
  if (canShare && count > 1) {
    for (const list of lists) {
      for (const arg of new Set(list.filter(isTensor))) workersOf.set(arg, (workersOf.get(arg) ?? 0) + 1);
    }
  }
  const shared = new Map(); // tensor -> its copy in shared memory
  const sent = lists.map((list) => {
    const own = new Map();
    const transfer = [];
    const args = list.map((arg) => {
      if (!isTensor(arg)) return arg;
      if (workersOf.get(arg) > 1) {
        if (!shared.has(arg)) {
          shared.set(arg, withMembers(arg, { data: sharedMemory.copy(arg.data) }));
        }
        return shared.get(arg);
      }
      if (!own.has(arg)) {
        const data = arg.data.slice();
        transfer.push(data.buffer);
        own.set(arg, withMembers(arg, { data }));
      }
      return own.get(arg);
    });
    return { args, transfer };
  });
  return { sent, release: () => shared.forEach(({ data }) => sharedMemory.release(data.buffer)) };
}

// SharedArrayBuffers kept for the next calls of the same sizes: a new one
// costs several times a copy of its size (116 us for S2's 393 kB input in
// Node, where a slice() takes 25 us), as the memory is mapped and zeroed.
// At most SPARE_SIZES sizes, two of each.
const SPARE_SIZES = 8;
const sharedMemory = {
  spare: new Map(), // byteLength -> [SharedArrayBuffer]
  copy(data) {
    const buffer = this.spare.get(data.byteLength)?.pop() ?? new SharedArrayBuffer(data.byteLength);
    const copy = new data.constructor(buffer);
    copy.set(data);
    return copy;
  },
  release(buffer) {
    const list = this.spare.get(buffer.byteLength) ?? [];
    this.spare.delete(buffer.byteLength); // most recent size last
    if (list.length < 2) list.push(buffer);
    this.spare.set(buffer.byteLength, list);
    if (this.spare.size > SPARE_SIZES) this.spare.delete(this.spare.keys().next().value);
  },
};

// ---------------------------------------------------------------------------
// The pool
// ---------------------------------------------------------------------------

export async function createAttentionPool(options) {
  const where = 'createAttentionPool';
  checkObject(where, 'options', options, POOL_OPTION_KEYS);
  const count = requiredSize(where, 'options.workers', options.workers);
  if (count === 0) {
    throw new RangeError(`${where}: options.workers: expected a positive integer, got 0`);
  }
  await checkWorkerCount(where, 'options.workers', count, 1);
  // Each worker runs one thread: the pool is the parallelism.
  const moduleOptions = { ...readBuild(where, options.build), threads: 1 };
  if (options.backend !== undefined) {
    if (typeof options.backend !== 'string') {
      throw new TypeError(`${where}: options.backend: expected a string, got ` +
        `${describe(options.backend)}`);
    }
    moduleOptions.backend = options.backend;
  }
  if (options.wasmPath !== undefined) moduleOptions.wasmPath = readWasmPath(where, options.wasmPath);

  // The workers' .wasm, compiled once here while they start.
  const compiling = compileForWorkers(moduleOptions);
  const workers = await Workers.start(count);
  let summary;
  try {
    const wasm = await compiling;
    [summary] = await workers.all([...Array(count).keys()],
      () => ({ op: 'init', options: moduleOptions, wasm }));
    await workers.connect();
  } catch (e) {
    workers.dispose();
    throw e;
  }
  return makePool(workers, summary);
}

function readBuild(where, build) {
  if (build === undefined) return {};
  if (!Object.hasOwn(BUILD_FLAGS, build)) {
    throw new TypeError(`${where}: options.build: expected ` +
      `${Object.keys(BUILD_FLAGS).map((b) => `'${b}'`).join(', ')}, got ${describe(build)}`);
  }
  return BUILD_FLAGS[build];
}

// A folder the workers can find: URLs as text, and in a page a relative path
// resolved against the page (a worker would resolve it against its script).
function readWasmPath(where, wasmPath) {
  if (wasmPath !== null && typeof wasmPath === 'object' && typeof wasmPath.href === 'string') {
    return wasmPath.href;
  }
  if (typeof wasmPath !== 'string') {
    throw new TypeError(`${where}: options.wasmPath: expected a string or URL, got ` +
      `${describe(wasmPath)}`);
  }
  const base = globalThis.document?.baseURI;
  return isNode || base === undefined ? wasmPath : new URL(wasmPath, base).href;
}

// Where a layer goes when the caller does not say: whole in one worker, or
// split over the workers (attention by heads, FFN by hidden units). Split,
// a call computes on every worker at once but makes one round trip to the
// workers per sublayer (encoder 2, decoder 3) instead of one, each waiting
// for the workers' parts to reach the one that sums them. So a layer is
// split iff the compute that splitting takes off the busiest worker, for the
// tokens of a typical call, exceeds those extra round trips:
//   saved = tokens * (A * (1 - maxHeads / kvHeads) + 4 d f (1 - maxUnits / f))
//   split iff saved > (sublayers - 1) * ROUND_TRIP_FLOPS
// where A = attentions * 4 d (d + kvWidth) is the attentions' projections
// per token (the scores, which grow with the keys, are left out: they only
// favour splitting), f = ffnDim, maxHeads / maxUnits the most key/value
// heads / hidden units one worker holds, tokens = ENCODER_CALL_TOKENS for an
// encoder (a batch of sequences per call) and 1 for a decoder (a decoding
// step, its common call). ROUND_TRIP_FLOPS is what one core computes while
// a call goes to the workers and back: 0.22 ms per round trip of a pool of 2
// in Node at ~29 GFLOP/s of the SIMD build's layer (measured on a
// d = 256 encoder layer), about 6.4e6. So a BERT-base encoder (768, 3072) is
// split, a d = 64 one stays whole, and decoders stay whole up to d ~ 1024
// (a step's compute barely covers two more round trips).
const ROUND_TRIP_FLOPS = 6.4e6;
const ENCODER_CALL_TOKENS = 64;

function layerPlacement(kind, c, workers) {
  if (workers === 1) return 'whole';
  const most = (units) => Math.max(...splitUnits(units, workers).map(({ from, to }) => to - from));
  const d = c.dModel;
  const f = c.ffnDim;
  const encoder = kind === 'TransformerEncoderLayer';
  const attentions = encoder ? 1 : 2;
  const perToken = attentions * 4 * d * (d + c.numKvHeads * c.headDim) *
    (1 - most(c.numKvHeads) / c.numKvHeads) + 4 * d * f * (1 - most(f) / f);
  const tokens = encoder ? ENCODER_CALL_TOKENS : 1;
  return tokens * perToken > attentions * ROUND_TRIP_FLOPS ? 'split' : 'whole';
}

// options.placement of a pool's layer: 'split', 'whole' or undefined (the
// cost rule's choice).
function readPlacement(where, options) {
  if (options === undefined) return undefined;
  checkObject(where, 'options', options, OPTION_KEYS.PooledLayerOptions);
  const { placement } = options;
  if (placement !== undefined && placement !== 'split' && placement !== 'whole') {
    throw new TypeError(`${where}: options.placement: expected 'split' or 'whole', got ` +
      `${describe(placement)}`);
  }
  return placement;
}

function makePool(workers, summary) {
  let nextRef = 1;

  // positionalEncoding, layerNorm, attention and quantizeInt8: each call
  // whole on the next worker in turn, its arguments read by `schemas` (see
  // pool-arguments.js), its tensors copied out as a forward's are.
  let nextWorker = 0;
  const moduleFunction = (fn, schemas) => async (...given) => {
    const taken = copyArguments(given, given.map((_, i) => schemas[i] ?? whole));
    workers.check(fn);
    const args = taken();
    const worker = nextWorker;
    nextWorker = (nextWorker + 1) % workers.count;
    const { sent: [sent] } = outgoing(() => args, 1);
    const [value] = await workers.all([worker], () => ({ op: 'module', fn, args: sent.args }),
      () => sent.transfer);
    return value;
  };
  const quantizeInt8 = moduleFunction('quantizeInt8', []);

  // An object of the pool: its parts in the workers of `shards`, all under
  // one ref; its calls run one after the other, in the order they were made.
  class PoolObject {
    #ref;
    #shards;
    #tail = Promise.resolve();
    #disposed = false;

    constructor(ref, shards) {
      this.#ref = ref;
      this.#shards = shards;
      POOL_OBJECTS.add(this);
    }

    // Not own properties: an object of the pool given where options go has
    // no keys, as the synchronous API's objects have none.
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
      const values = await workers.all(this.shards.map((s) => s.worker),
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
        return await workers.gather(this.shards.map((s) => s.worker),
          (i) => ({ op: 'call', ref: this.ref, method, args: sent[i].args, sublayer }),
          (i) => sent[i].transfer);
      } finally {
        if (!workers.dead) release();
      }
    }

    // setWeights(parts[i]) on part i: { key: typed array } made for that
    // part alone, whose buffers the message moves instead of copying.
    sendWeights(parts) {
      return workers.all(this.shards.map((s) => s.worker),
        (i) => ({ op: 'call', ref: this.ref, method: 'setWeights', args: [parts[i]] }),
        (i) => buffers(parts[i]));
    }

    dispose() {
      return this.enqueue(async () => {
        if (this.#disposed || workers.dead) return;
        this.#disposed = true;
        await this.released();
        await workers.all(this.shards.map((s) => s.worker), () => ({ op: 'dispose', ref: this.ref }));
      });
    }

    // What else disposing of the object releases (a promise, or nothing).
    released() {}

    [asyncDisposeSymbol]() { return this.dispose(); }
  }

  class KVCache extends PoolObject {
    #batch;
    #maxLength;
    #attention;
    #length = 0;

    // attention: the resolved config of the attention that made it (its
    // heads' widths), or undefined for a cache of a layer placed whole.
    constructor(shards, batch, maxLength, attention) {
      super(nextRef++, shards);
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
          if (!this.disposed && !workers.dead) await this.call('truncate', [before]).catch(() => {});
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
            if (workers.dead) throw e;
            error = e;
          }
        }
        await workers.all([0], () => ({ op: 'check', kind: 'MultiHeadAttention', config: a,
          target: { standIn: 'KVCache', batch: this.#batch, maxLength: this.#maxLength, length },
          method: 'append', args: [keys, values] }));
        throw error;
      }, (length) => length + tokens);
    }
  }

  class PrecomputedKeyValue extends PoolObject {
    #batch;
    #tokens;

    constructor(shards, batch, tokens) {
      super(nextRef++, shards);
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
  function standIn(v) {
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

  // The arguments of an attention's call, copied (copyArguments), unless the
  // call is a sublayer of a split layer (its options carry SUBLAYER): then
  // they are the layer's copies, or data of the pool's own.
  function copiedUnlessSublayer(args, schemas) {
    let internal = false;
    try {
      internal = Object.hasOwn(Object(args.at(-1)), SUBLAYER);
    } catch {
      // a caller's Proxy that throws: not the pool's options
    }
    return internal ? () => args : copyArguments(args, schemas);
  }

  // The pool object behind `v`, { poolRef }: a `Class` (KVCache or
  // PrecomputedKeyValue) of this pool held by the workers of `shards` in the
  // same way, or an error as the synchronous API's for such an argument.
  function poolObject(where, name, v, Class, shards) {
    if ((KEY_VALUES.has(v) && !(v instanceof PoolObject)) || holdsKeyValues(v)) {
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
    if (layout(v.shards) !== layout(shards)) {
      throw new Error(`${where}: ${name}: this ${Class.name} is held by the pool's workers ` +
        'in another way than this object (it was made by an object of another head layout ' +
        'or in another worker); use one made by an object like this one');
    }
    return { poolRef: v.ref };
  }

  // Its shards: [{ worker, heads: [from, to), kvHeads: [from, to) }].
  class MultiHeadAttention extends PoolObject {
    #config;
    #kernels;
    #hasWeights = false;

    constructor(config, kernels, shards) {
      super(nextRef++, shards);
      this.#config = config;
      this.#kernels = kernels;
    }

    get config() { return this.#config; }
    get kernels() { return this.#kernels; }

    // A disposed object, or one without weights, says so through the
    // synchronous object of worker 0, which checks that first.
    #unusable(method, needsWeights) {
      return this.disposed || (needsWeights && !this.#hasWeights)
        ? workers.all([this.shards[0].worker],
          () => ({ op: 'call', ref: this.ref, method, args: [] }))
        : null;
    }

    setWeights(weights) {
      const where = 'MultiHeadAttention.setWeights';
      const taken = copyArguments([weights], [ARGUMENTS.mhaWeights]);
      return this.enqueue(async () => {
        workers.check(where);
        await this.#unusable('setWeights', false);
        const [weights] = taken();
        const c = this.#config;
        // Weights that are not of the types or sizes it takes are judged
        // whole, for the synchronous message (its checks' order).
        const judgeWhole = () => workers.all([0], () => ({ op: 'check',
          kind: 'MultiHeadAttention', config: c, weights }));
        const w = {};
        try {
          checkObject(where, 'weights', weights, OPTION_KEYS.MultiHeadAttentionWeights);
          for (const key of OPTION_KEYS.MultiHeadAttentionWeights) {
            w[key] = key.startsWith('w') ? weightMatrix(where, key, weights[key])
              : float32(where, key, weights[key], true);
          }
        } catch (e) {
          await judgeWhole();
          throw e;
        }
        const shapes = {
          wQ: [c.dModel, c.numHeads * c.headDim], wK: [c.kDim, c.numKvHeads * c.headDim],
          wV: [c.vDim, c.numKvHeads * c.headDimV], wO: [c.numHeads * c.headDimV, c.dModel],
        };
        if (c.bias) {
          Object.assign(shapes, { bQ: [1, c.numHeads * c.headDim],
            bK: [1, c.numKvHeads * c.headDim], bV: [1, c.numKvHeads * c.headDimV],
            bO: [1, c.dModel] });
        }
        const fitting = (key) => (shapes[key] === undefined ? w[key] === undefined
          : w[key] !== undefined && fits(w[key], shapes[key], c.weights));
        if (!OPTION_KEYS.MultiHeadAttentionWeights.every(fitting)) await judgeWhole();
        await this.#apply(w);
      });
    }

    // An nn.MultiheadAttention state_dict. Its conversion is C++'s, which
    // takes whole attentions only: worker 0's synchronous object judges the
    // state first, and the accepted state is transposed here and split.
    setWeightsFromPyTorch(state) {
      const where = 'MultiHeadAttention.setWeightsFromPyTorch';
      const taken = copyArguments([state], [ARGUMENTS.mhaState]);
      return this.enqueue(async () => {
        workers.check(where);
        await this.#unusable('setWeightsFromPyTorch', false);
        const [state] = taken();
        checkObject(where, 'state', state);
        await workers.all([0], () => ({ op: 'check', kind: 'MultiHeadAttention',
          config: this.#config, method: 'setWeightsFromPyTorch', args: [state] }));
        await this.#apply(attentionWeightsFromPyTorch(this.#config, state));
      });
    }

    // Weights that fit, split by heads and sent (W_O by rows, int8 quantized
    // whole first: see quantizedWhole); b_O goes to worker 0 alone, so that
    // the caller only adds the partial outputs.
    async #apply(given) {
      const c = this.#config;
      const group = c.numHeads / c.numKvHeads;
      const weights = { ...given, wO: await quantizedWhole(given.wO,
        [c.numHeads * c.headDimV, c.dModel], c.weights, this.shards.length, quantizeInt8) };
      const parts = this.shards.map((shard) => this.#shardWeights(weights, shard, group));
      if (c.bias) parts[0].bO = Float32Array.from(weights.bO);
      await this.sendWeights(parts);
      this.#hasWeights = true;
    }

    // The weights of one shard's heads, b_O zero (see #apply).
    #shardWeights(w, { kvHeads: [k0, k1] }, group) {
      const c = this.#config;
      const [q0, q1] = [k0 * group, k1 * group];
      const [dk, dv] = [c.headDim, c.headDimV];
      const out = {
        wQ: columns(w.wQ, c.dModel, c.numHeads * dk, q0 * dk, q1 * dk),
        wK: columns(w.wK, c.kDim, c.numKvHeads * dk, k0 * dk, k1 * dk),
        wV: columns(w.wV, c.vDim, c.numKvHeads * dv, k0 * dv, k1 * dv),
        wO: rowRange(w.wO, c.dModel, q0 * dv, q1 * dv),
      };
      if (c.bias) {
        Object.assign(out, {
          bQ: w.bQ.slice(q0 * dk, q1 * dk), bK: w.bK.slice(k0 * dk, k1 * dk),
          bV: w.bV.slice(k0 * dv, k1 * dv), bO: new Float32Array(c.dModel),
        });
      }
      return out;
    }

    // Runs `method` on every shard with the options' masks sliced to the
    // shard's heads where they have a head axis (see headSlice): the results
    // joined, or a split layer's next input when the options carry its
    // sublayer (options[SUBLAYER]). Options that are not an object go as
    // they are, for the workers' synchronous objects to refuse after what
    // they check first. `given`: the arguments with the pool's objects in
    // them, for #asWhole.
    #attend(where, method, given, optionsAt, batch, tq, tk) {
      const args = given.map((arg) => (POOL_OBJECTS.has(arg) ? { poolRef: arg.ref } : arg));
      const options = args[optionsAt];
      const heads = this.#config.numHeads;
      const slice = (mask, s) => headSlice(mask, batch, heads, tq, tk, s.heads[0], s.heads[1]);
      const [attnMask, boolMask] = ['attnMask', 'boolMask'].map((k) => plainMember(options, k));
      const sliced = [attnMask, boolMask].some((mask) => hasHeadAxis(mask, batch, heads, tq, tk));
      const sublayer = plainMember(options, SUBLAYER);
      const run = () => this.gather(method, args, sliced ? (s) => {
        const shardArgs = [...args];
        shardArgs[optionsAt] = withMembers(options, { attnMask: slice(attnMask, s),
          boolMask: slice(boolMask, s) });
        return shardArgs;
      } : undefined, sublayer);
      // A split layer makes its sublayers' errors again as its own.
      return sublayer === undefined ? this.#asWhole(where, method, given, run) : run();
    }

    // run()'s value, or its error as worker 0's whole synchronous attention
    // of this config (zero weights, empty stand-ins of the caches and
    // memories) refuses `method` on `given`: a shard judges with its own
    // heads (a mask's sizes name them). Where the whole one takes the call
    // (an overflow that depends on the real weights), the shards' error
    // stands.
    async #asWhole(where, method, given, run) {
      try {
        return await run();
      } catch (error) {
        if (this.shards.length === 1 || workers.dead) throw error;
        let reproduced;
        try {
          await workers.all([0], () => ({ op: 'check', kind: 'MultiHeadAttention',
            config: this.#config, zeroWeights: true, method, args: given.map(standIn) }));
        } catch (e) {
          reproduced = e;
        }
        throw reproduced?.message.startsWith(`${where}: `) ? reproduced : error;
      }
    }

    forward(query, key, value, options) {
      const where = 'MultiHeadAttention.forward';
      const taken = copiedUnlessSublayer([query, key, value, options],
        [tensor, tensor, tensor, ARGUMENTS.forwardOptions]);
      return this.enqueue(async () => {
        workers.check(where);
        await this.#unusable('forward', true);
        const [query, key, value, options] = taken();
        const q = readTensor(where, 'query', query);
        if (isKeyValues(key)) {
          poolObject(where, 'key', key, PrecomputedKeyValue, this.shards);
          return this.#attend(where, 'forward', [query, key, value, options], 3,
            q.batch, q.tokens, key.tokens);
        }
        // As the synchronous forward: a value without its key is its error.
        const selfAttention = key === undefined || key === null || key === query;
        const k = selfAttention ? q : readTensor(where, 'key', key);
        if (!selfAttention && value !== undefined && value !== null && value !== key) {
          readTensor(where, 'value', value);
        }
        return this.#attend(where, 'forward', [query, key, value, options], 3,
          q.batch, q.tokens, k.tokens);
      });
    }

    createKVCache(options) {
      const where = 'MultiHeadAttention.createKVCache';
      const taken = copyArguments([options], [ARGUMENTS.cacheOptions]);
      return this.enqueue(async () => {
        workers.check(where);
        await this.#unusable('createKVCache', false);
        const [options] = taken();
        const { batch, maxLength } = readCacheOptions(where, options);
        const cache = new KVCache(this.shards, batch, maxLength, this.#config);
        // (A shard names its own heads' sizes in its errors.)
        await this.#asWhole(where, 'createKVCache', [options],
          () => this.call('createKVCache', [options], undefined, cache.ref));
        return cache;
      });
    }

    forwardIncremental(x, cache, options) {
      const where = 'MultiHeadAttention.forwardIncremental';
      const taken = copiedUnlessSublayer([x, cache, options],
        [tensor, whole, ARGUMENTS.incrementalOptions]);
      return this.enqueue(async () => {
        workers.check(where);
        await this.#unusable('forwardIncremental', true);
        const [x, cache, options] = taken();
        const t = readTensor(where, 'x', x);
        poolObject(where, 'cache', cache, KVCache, this.shards);
        return cache.step((length) => this.#attend(where, 'forwardIncremental',
          [x, cache, options], 2, t.batch, t.tokens, length + t.tokens),
        (length) => length + t.tokens);
      });
    }

    precomputeKeyValue(memory, options) {
      const where = 'MultiHeadAttention.precomputeKeyValue';
      const taken = copyArguments([memory, options], [tensor, ARGUMENTS.precomputeOptions]);
      return this.enqueue(async () => {
        workers.check(where);
        await this.#unusable('precomputeKeyValue', true);
        const [memory, options] = taken();
        const m = readTensor(where, 'memory', memory);
        const kv = new PrecomputedKeyValue(this.shards, m.batch, m.tokens);
        await this.#asWhole(where, 'precomputeKeyValue', [memory, options],
          () => this.call('precomputeKeyValue', [memory, options], undefined, kv.ref));
        return kv;
      });
    }

  }

  // A layer placed whole runs in one worker, the one holding the fewest
  // layers, so that the pool spreads such layers over its workers.
  const layersHeld = new Array(workers.count).fill(0);

  // Its one shard, { worker }, holds its caches and memories too.
  class Layer extends PoolObject {
    #kind;
    #config;
    #kernels;
    #hasWeights = false;

    constructor(ref, kind, worker, { config, kernels }) {
      super(ref, [{ worker }]);
      this.#kind = kind;
      this.#config = config;
      this.#kernels = kernels;
    }

    get config() { return this.#config; }
    get kernels() { return this.#kernels; }
    get placement() { return 'whole'; }

    // Runs `method` in the layer's worker as the next call on the layer,
    // on its arguments `given` copied now by `schemas`. prepare(where,
    // copies) checks what is cheap on this side and returns { args, made?,
    // around? }: made, the pooled object the call fills; around(job), what
    // runs the job (a cache's step). A disposed layer, or one without
    // weights when the method needs them, says so from the worker, which
    // checks that first.
    invoke(method, needsWeights, given, schemas, prepare) {
      const where = `${this.#kind}.${method}`;
      const taken = copyArguments(given, schemas);
      return this.enqueue(async () => {
        workers.check(where);
        if (this.disposed || (needsWeights && !this.#hasWeights)) await this.call(method);
        const { args, made, around = (job) => job() } = prepare(where, taken());
        const [value] = await around(() => this.call(method, args, undefined, made?.ref));
        // setWeights and setWeightsFromPyTorch
        if (method.startsWith('setWeights')) this.#hasWeights = true;
        return made ?? value;
      });
    }

    // A tensor (type-checked), or a pooled object held as this layer holds its own.
    argument(where, name, v, Class) {
      if (isKeyValues(v)) return poolObject(where, name, v, Class, this.shards);
      readTensor(where, name, v);
      return v;
    }

    setWeights(weights) {
      return this.invoke('setWeights', false, [weights], [ARGUMENTS[this.#kind].weights],
        (where, [w]) => {
          checkObject(where, 'weights', w);
          return { args: [w] };
        });
    }

    setWeightsFromPyTorch(state) {
      return this.invoke('setWeightsFromPyTorch', false, [state], [ARGUMENTS[this.#kind].state],
        (where, [s]) => {
          checkObject(where, 'state', s);
          return { args: [s] };
        });
    }

    released() { layersHeld[this.shards[0].worker] -= 1; }
  }

  class TransformerEncoderLayer extends Layer {
    forward(x, options) {
      return this.invoke('forward', true, [x, options], [tensor, ARGUMENTS.encoderOptions],
        (where, args) => {
          readTensor(where, 'x', args[0]);
          return { args };
        });
    }
  }

  class TransformerDecoderLayer extends Layer {
    forward(x, memory, options) {
      return this.invoke('forward', true, [x, memory, options],
        [tensor, tensor, ARGUMENTS.decoderOptions], (where, [x, memory, options]) => {
          readTensor(where, 'x', x);
          return {
            args: [x, this.argument(where, 'memory', memory, PrecomputedKeyValue), options],
          };
        });
    }

    forwardIncremental(x, cache, memory, options) {
      return this.invoke('forwardIncremental', true, [x, cache, memory, options],
        [tensor, whole, tensor, ARGUMENTS.selfAttentionOptions],
        (where, [x, cache, memory, options]) => {
          const { tokens } = readTensor(where, 'x', x);
          // The options before the cache, as the synchronous layer reads them.
          if (options !== undefined) {
            checkObject(where, 'options', options, OPTION_KEYS.SelfAttentionOptions);
            readSharedAttentionOptions(where, options);
          }
          const ref = poolObject(where, 'cache', cache, KVCache, this.shards);
          return {
            args: [x, ref, this.argument(where, 'memory', memory, PrecomputedKeyValue), options],
            around: (job) => cache.step(job, (length) => length + tokens),
          };
        });
    }

    createKVCache(options) {
      return this.invoke('createKVCache', false, [options], [ARGUMENTS.cacheOptions],
        (where, args) => {
          const { batch, maxLength } = readCacheOptions(where, args[0]);
          return { args, made: new KVCache(this.shards, batch, maxLength) };
        });
    }

    precomputeMemory(memory, options) {
      return this.invoke('precomputeMemory', true, [memory, options],
        [tensor, ARGUMENTS.precomputeOptions], (where, args) => {
          const m = readTensor(where, 'memory', args[0]);
          return { args, made: new PrecomputedKeyValue(this.shards, m.batch, m.tokens) };
        });
    }
  }

  const pooledLayers = makePooledLayers({ workers, PoolObject, KVCache, PrecomputedKeyValue,
    isKeyValues, poolObject, standIn, newRef: () => nextRef++, splitUnits, SUBLAYER, quantizeInt8,
    createMultiHeadAttention: (config) => createMultiHeadAttention(config) });

  for (const [Class, kind] of [[MultiHeadAttention, 'MultiHeadAttention'], [KVCache, 'KVCache'],
    [PrecomputedKeyValue, 'PrecomputedKeyValue'],
    [TransformerEncoderLayer, 'TransformerEncoderLayer'],
    [TransformerDecoderLayer, 'TransformerDecoderLayer'],
    [pooledLayers.TransformerEncoderLayer, 'TransformerEncoderLayer'],
    [pooledLayers.TransformerDecoderLayer, 'TransformerDecoderLayer']]) checkReceivers(Class, kind);

  // A layer split over the workers (pool-layers.js), or whole (class
  // Layer) in the worker holding the fewest: as placement says, by default
  // as layerPlacement's cost rule picks.
  async function createLayer(Class, kind, givenConfig, givenPlacement) {
    const taken = copyArguments([givenConfig, givenPlacement],
      [ARGUMENTS.layerConfig, ARGUMENTS.placement]);
    workers.check(kind);
    const [config, placement] = taken();
    checkObject(kind, 'config', config, OPTION_KEYS.TransformerLayerConfig);
    const chosen = readPlacement(kind, placement);
    // Worker 0 checks the config and resolves it, as the synchronous layer.
    const [resolved] = await workers.all([0], () => ({ op: 'check', kind, config }));
    if ((chosen ?? layerPlacement(kind, resolved.config, workers.count)) === 'split') {
      return pooledLayers.createPooledLayer(kind, config, resolved);
    }
    const worker = layersHeld.indexOf(Math.min(...layersHeld));
    const ref = nextRef++;
    const [made] = await workers.all([worker], () => ({ op: 'new', ref, kind, config }));
    layersHeld[worker] += 1;
    return new Class(ref, kind, worker, made);
  }

  async function createMultiHeadAttention(givenConfig) {
    const where = 'MultiHeadAttention';
    const taken = copyArguments([givenConfig], [ARGUMENTS.mhaConfig]);
    workers.check(where);
    const [config] = taken();
    checkObject(where, 'config', config, OPTION_KEYS.MultiHeadAttentionConfig);
    const [{ config: resolved, kernels }] = await workers.all([0],
      () => ({ op: 'check', kind: 'MultiHeadAttention', config }));
    const { numHeads, numKvHeads, headDim, headDimV } = resolved;
    const group = numHeads / numKvHeads;
    const shards = splitUnits(numKvHeads, workers.count).map(({ worker, from, to }) => ({
      worker, kvHeads: [from, to], heads: [from * group, to * group],
    }));
    const mha = new MultiHeadAttention(resolved, kernels, shards);
    await workers.all(shards.map((s) => s.worker), (i) => ({
      op: 'new', ref: mha.ref, kind: 'MultiHeadAttention',
      config: { ...config, numHeads: (shards[i].kvHeads[1] - shards[i].kvHeads[0]) * group,
        numKvHeads: shards[i].kvHeads[1] - shards[i].kvHeads[0], headDim, headDimV },
    }));
    return mha;
  }

  const pool = {
    get workers() { return workers.count; },
    get dead() { return workers.dead; },
    backend: summary.backend,
    build: summary.build,
    simd: summary.simd,
    backends: Object.freeze(summary.backends),
    kernels: summary.kernels,
    MultiHeadAttention: createMultiHeadAttention,
    TransformerEncoderLayer: (config, options) =>
      createLayer(TransformerEncoderLayer, 'TransformerEncoderLayer', config, options),
    TransformerDecoderLayer: (config, options) =>
      createLayer(TransformerDecoderLayer, 'TransformerDecoderLayer', config, options),
    positionalEncoding: moduleFunction('positionalEncoding', []),
    layerNorm: moduleFunction('layerNorm', [tensor, ARGUMENTS.layerNormOptions]),
    attention: moduleFunction('attention', [tensor, tensor, tensor, ARGUMENTS.attentionOptions]),
    quantizeInt8,
    fromPretrained: (config, file, options) => fromPretrainedPooled(pool, config, file, options),
    dispose: async () => workers.dispose(),
    [asyncDisposeSymbol]: async () => workers.dispose(),
    [TERMINATE_WORKER]: (worker) => workers.terminate(worker),
  };
  return Object.freeze(pool);
}
