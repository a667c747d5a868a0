// One worker of createAttentionPool (pool.js): loads the module with the
// same loader as createAttentionModule and serves the pool's requests on the
// objects it holds, the shards of the pool's objects, one at a time in the
// order they come. Requests and replies are plain messages:
//   { id, op: 'init', options }                   -> { id, value: module summary }
//   { id, op: 'check', kind, config, weights?, zeroWeights?, disposed?, method?, args?,
//     target? }
//                                                 -> { id, value: { config, kernels } }
//   { id, op: 'new', ref, kind, config }          -> { id, value: { config, kernels } }
//   { id, op: 'call', ref, method, args, out? }   -> { id, value }
//   { id, op: 'module', fn, args }                -> { id, value } (module.fn(...args))
//   { id, op: 'dispose', ref }                    -> { id }
// and any failure as { id, error: { name, message } }. Arguments that stand
// for objects of this worker are { poolRef }; `out` keeps the
// object a call returns under that ref. Disposed objects stay known, so a
// later call on one throws the synchronous API's message for it.
//
// 'check' makes a synchronous object of `kind` for one request and disposes
// it: the pool's objects are split over the workers, so a whole one exists
// only here, to resolve a config or to throw the synchronous API's error for
// an argument (weights, or a method called with `args` on it or on the
// stand-in `target`, after setting the given weights or zeros of the
// config's sizes, or after disposing it).
// Arguments { standIn: 'KVCache' | 'PrecomputedKeyValue', ... } stand for
// the pool's sharded caches and memories there: empty ones of their sizes.
import { createAttentionModule } from '../index.js';
import { newFeedForwardShard } from './feed-forward-shard.js';

// Where requests come from and replies go: the worker's global scope, or in
// Node worker_threads' parentPort, set below.
let port = null;

let module = null;
const objects = new Map();

function resolve(arg) {
  if (arg !== null && typeof arg === 'object' && arg.poolRef !== undefined) {
    return objects.get(arg.poolRef);
  }
  return arg;
}

// The buffers of a result's tensors (the result itself, or its members),
// moved to the pool instead of copied (the glue returns arrays that own
// their whole buffer).
function transferables(value) {
  if (value === null || typeof value !== 'object') return [];
  const out = [];
  for (const v of [value, ...Object.values(value)]) {
    const data = v?.data;
    if (ArrayBuffer.isView(data) && data.byteLength === data.buffer.byteLength) {
      out.push(data.buffer);
    }
  }
  return out;
}

// Zeros of the sizes of a layer's weights (config: the layer's resolved one).
function zeroWeights(kind, { dModel: d, numKvHeads, headDim, ffnDim: f }) {
  const zeros = (n) => new Float32Array(n);
  const kv = numKvHeads * headDim;
  const attention = () => ({ wQ: zeros(d * d), wK: zeros(d * kv), wV: zeros(d * kv),
    wO: zeros(d * d), bQ: zeros(d), bK: zeros(kv), bV: zeros(kv), bO: zeros(d) });
  const norm = () => ({ gamma: zeros(d), beta: zeros(d) });
  const ffn = { w1: zeros(d * f), b1: zeros(f), w2: zeros(f * d), b2: zeros(d) };
  return kind === 'TransformerEncoderLayer'
    ? { attention: attention(), ffn, norm1: norm(), norm2: norm() }
    : { selfAttention: attention(), crossAttention: attention(), ffn, norm1: norm(),
      norm2: norm(), norm3: norm() };
}

// An argument of a 'check' request, its stand-ins made by `whole` (and
// remembered in `made` to be disposed).
function standIn(whole, arg, made) {
  if (arg === null || typeof arg !== 'object' || arg.standIn === undefined) return arg;
  const { batch, dModel } = { ...arg, dModel: whole.config.dModel };
  const object = arg.standIn === 'KVCache'
    ? whole.createKVCache({ batch, maxLength: arg.maxLength })
    : whole.precomputeMemory({ data: new Float32Array(batch * arg.tokens * dModel),
      shape: [batch, arg.tokens, dModel] });
  made.push(object);
  if (arg.length > 0) {
    const { numKvHeads, headDim, headDimV = headDim } = whole.config;
    const zeros = (width) => ({ data: new Float32Array(batch * arg.length * width),
      shape: [batch, arg.length, width] });
    object.append(zeros(numKvHeads * headDim), zeros(numKvHeads * headDimV));
  }
  if (arg.disposed) object.dispose();
  return object;
}

async function serve(request) {
  switch (request.op) {
    case 'init': {
      module = await createAttentionModule(request.options);
      const { backend, build, simd, backends, kernels } = module;
      return { backend, build, simd, backends, kernels };
    }
    case 'check': {
      const whole = new module[request.kind](request.config);
      const made = [];
      try {
        if (request.weights !== undefined) whole.setWeights(request.weights);
        if (request.zeroWeights) whole.setWeights(zeroWeights(request.kind, whole.config));
        if (request.disposed) whole.dispose();
        if (request.method !== undefined) {
          const target = request.target === undefined ? whole : standIn(whole, request.target, made);
          target[request.method](...request.args.map((arg) => standIn(whole, arg, made)));
        }
        return { config: whole.config, kernels: whole.kernels };
      } finally {
        for (const object of made) object.dispose();
        whole.dispose();
      }
    }
    case 'new': {
      const object = request.kind === 'FeedForward'
        ? newFeedForwardShard(module, request.config)
        : new module[request.kind](request.config);
      objects.set(request.ref, object);
      return { config: object.config, kernels: object.kernels };
    }
    case 'call': {
      const object = objects.get(request.ref);
      const value = object[request.method](...request.args.map(resolve));
      if (request.out === undefined) return value;
      objects.set(request.out, value);
      return undefined;
    }
    case 'module':
      return module[request.fn](...request.args);
    case 'dispose':
      objects.get(request.ref).dispose();
      return undefined;
    default:
      throw new Error(`simd-attention pool worker: unknown request ${request.op}`);
  }
}

let queue = Promise.resolve();
function onRequest(request) {
  queue = queue.then(async () => {
    try {
      const value = await serve(request);
      port.postMessage({ id: request.id, value }, transferables(value));
    } catch (e) {
      const name = e instanceof TypeError ? 'TypeError'
        : e instanceof RangeError ? 'RangeError' : 'Error';
      port.postMessage({ id: request.id, error: { name, message: String(e?.message ?? e) } });
    }
  });
}

// No top-level await: bundlers build workers as classic scripts by default
// (Vite's worker.format 'iife'), which cannot hold one. A Node port queues
// the messages that arrive before its listener.
if (typeof globalThis.postMessage === 'function') {
  port = globalThis;
  globalThis.addEventListener('message', (event) => onRequest(event.data));
} else {
  // Node's worker_threads, hidden from bundlers, which target browsers here.
  const nodeWorkerThreads = 'node:worker_threads';
  import(/* webpackIgnore: true */ /* @vite-ignore */ nodeWorkerThreads).then((threads) => {
    port = threads.parentPort;
    port.on('message', onRequest);
  });
}
