// One worker of createAttentionPool (pool.js): loads the module with the
// same loader as createAttentionModule and serves the pool's requests on the
// objects it holds, the shards of the pool's objects, one at a time in the
// order they come. Requests and replies are plain messages:
//   { id, op: 'init', options, wasm? }            -> { id, value: module summary }
//   { id, op: 'connect', index, peers }           -> { id }
//   { id, op: 'check', kind, config, weights?, zeroWeights?, disposed?, method?, args?,
//     target? }
//                                                 -> { id, value: { config, kernels } }
//   { id, op: 'new', ref, kind, config }          -> { id, value: { config, kernels } }
//   { id, op: 'call', ref, method, args, out?, gather?, sublayer? }
//                                                 -> { id, value }
//   { id, op: 'module', fn, args }                -> { id, value } (module.fn(...args))
//   { id, op: 'dispose', ref }                    -> { id }
// and any failure as { id, error: { name, message } }. `notes` says where the
// caller's data (args, config, weights, target) held what a message cannot
// carry (pool-arguments.js). Arguments that stand for objects of this worker
// are { poolRef }; `out` keeps the object a call returns under that ref.
// Disposed objects stay known, so a later call on one throws the synchronous
// API's message for it.
//
// Gathered calls: a call split over several workers goes to each of them
// at once, and one of them, the gatherer, answers. 'connect' gives this
// worker its index and a MessagePort to each other worker ([[index, port]]).
// gather { id, to }: this worker's part of call `id`, whose result (or
// error) goes to worker `to` as { part: id, from, value | error } and not to
// the pool; gather { id, from: [workers] }: this worker gathers, waits for
// those workers' parts, and answers with the parts joined in worker order
// (pool-join.js; the partial outputs summed and checked by the module's
// C++) or the first error. Only a gatherer waits, and only for parts of the
// call it is serving, which every worker receives in the order the pool
// sent its calls: no cycle of waits can form.
// sublayer { norm, name, where, residual? }: the call is a sublayer of a
// split transformer layer or block, args[0] its input h; with a pre or
// sandwich norm (the ref of a SublayerNorm on every worker of the call) each
// part runs on norm(h), and the gatherer answers with the next h =
// norm.join(residual (h if not given), the joined output) ({ data, shape }),
// its errors named after `where`, the layer's method. (A block's parallel
// sublayers read the same h and add to the sum of those before them.)
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
import { useCompiledWasm } from './loader.js';
import { fromMessage, plainMember } from './pool-arguments.js';
import { errorMessage, joinResults, rebuild } from './pool-join.js';
import { isPoolPart, newPoolPart, normHasShift, sumPartials } from './pool-parts.js';
import { zeroBlockWeights } from './pool-block-mixers.js';

// Where requests come from and replies go: the worker's global scope, or in
// Node worker_threads' parentPort, set below.
let port = null;

let module = null;
const objects = new Map();

// This worker's index in the pool, the ports to the others by index, and the
// parts of gathered calls by `${id}/${worker}`: those that came before this
// worker asked for them, and the calls waiting for the others.
let index = -1;
const peers = new Map();
const arrived = new Map();
const waiting = new Map();

function partOf(id, worker) {
  const key = `${id}/${worker}`;
  const part = arrived.get(key);
  if (part !== undefined) {
    arrived.delete(key);
    return part;
  }
  return new Promise((resolve) => waiting.set(key, resolve));
}

function onPart({ part: id, from, value, error }) {
  const key = `${id}/${from}`;
  const part = error === undefined ? { value } : { error };
  const resolve = waiting.get(key);
  if (resolve === undefined) {
    arrived.set(key, part);
  } else {
    waiting.delete(key);
    resolve(part);
  }
}

// Node's MessagePort, or a browser's.
function listen(peer, onMessage) {
  if (typeof peer.on === 'function') peer.on('message', onMessage);
  else peer.onmessage = (event) => onMessage(event.data);
}

// (plainMember: an argument that throws when read, the caller's, is the
// synchronous object's to meet.)
function resolve(arg) {
  const ref = plainMember(arg, 'poolRef');
  return ref === undefined ? arg : objects.get(ref);
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

// Zeros of the sizes of an attention's, a layer's or a block's weights
// (config: its resolved one).
function zeroWeights(kind, config) {
  if (kind === 'TransformerBlock' || kind === 'TransformerStack') {
    return zeroBlockWeights(config, normHasShift(module, config.norm));
  }
  return zeroLayerWeights(kind, config);
}

function zeroLayerWeights(kind, { dModel: d, numHeads, numKvHeads, headDim, headDimV, kDim,
  vDim, bias, qkNorm, ffnDim: f }) {
  const zeros = (n) => new Float32Array(n);
  if (kind === 'MultiHeadAttention') {
    const [q, k, v] = [numHeads * headDim, numKvHeads * headDim, numKvHeads * headDimV];
    return { wQ: zeros(d * q), wK: zeros(kDim * k), wV: zeros(vDim * v),
      wO: zeros(numHeads * headDimV * d),
      ...(bias ? { bQ: zeros(q), bK: zeros(k), bV: zeros(v), bO: zeros(d) } : {}),
      ...(qkNorm ? { qNorm: zeros(headDim), kNorm: zeros(headDim) } : {}) };
  }
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
// remembered in `made` to be disposed); a stack's caches, an array of them
// (one each, the same where the array repeats one). Any other array goes as
// it is, for the method to refuse, and is never walked index by index: its
// length may be 2^32 - 1 with one element.
function standIn(whole, arg, made) {
  if (Array.isArray(arg) && Object.keys(arg).length === arg.length &&
      arg.some((a) => plainMember(a, 'standIn') !== undefined)) {
    const each = new Map();
    return arg.map((a) => {
      if (!each.has(a)) each.set(a, standIn(whole, a, made));
      return each.get(a);
    });
  }
  if (plainMember(arg, 'standIn') === undefined) return arg;
  const { batch } = arg;
  // An attention's memory has its kDim features (and is refused where vDim
  // differs); a layer's, dModel.
  const memory = (width) => ({ data: new Float32Array(batch * arg.tokens * width),
    shape: [batch, arg.tokens, width] });
  let object;
  if (arg.standIn === 'KVCache') {
    const options = { batch, maxLength: arg.maxLength };
    // A stack's: the first of a set of its caches (the others disposed).
    const caches = whole.createKVCaches?.(options);
    caches?.slice(1).forEach((c) => c.dispose());
    object = caches?.[0] ?? whole.createKVCache(options);
  } else {
    object = (whole.precomputeMemory ?? whole.precomputeKeyValue).call(whole,
      memory(whole.config.kDim ?? whole.config.dModel));
  }
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

// What serve returns for a part that went to its gatherer.
const NO_REPLY = Symbol('no reply');

// This worker's part of a call (see the top of this file).
function runPart({ ref, method, args, sublayer }) {
  const resolved = args.map(resolve);
  if (sublayer !== undefined) {
    const norm = objects.get(sublayer.norm);
    const h = resolved[0];
    if (norm.normFirst) resolved[0] = { data: norm.input(sublayer.where, h), shape: h.shape };
  }
  return objects.get(ref)[method](...resolved);
}

async function call(request) {
  const { gather, sublayer } = request;
  let own;
  try {
    own = { value: runPart(request) };
  } catch (e) {
    own = { error: errorMessage(e) };
  }
  if (gather?.to !== undefined) {
    peers.get(gather.to).postMessage({ part: gather.id, from: index, ...own },
      transferables(own.value));
    return NO_REPLY;
  }
  const parts = [own, ...await Promise.all((gather?.from ?? []).map((w) => partOf(gather.id, w)))];
  const failed = parts.find((p) => p.error !== undefined);
  if (failed !== undefined) throw rebuild(failed.error);
  if (request.out !== undefined) {
    objects.set(request.out, own.value);
    return undefined;
  }
  if (parts.length === 1 && sublayer === undefined) return own.value;
  // Errors named as the synchronous object names those of its output: the
  // layer's method, or the split attention's.
  const where = sublayer?.where ?? `MultiHeadAttention.${request.method}`;
  const joined = joinResults(parts.map((p) => p.value),
    (partials, attention) => sumPartials(module, where, partials, attention));
  if (sublayer === undefined) return joined;
  const h = request.args[0];
  return { data: objects.get(sublayer.norm).join(sublayer.where, sublayer.residual ?? h.data,
    (joined.output ?? joined).data, sublayer.name), shape: h.shape };
}

async function serve(request) {
  switch (request.op) {
    case 'init': {
      // The pool's compiled .wasm ({ file, module }), instantiated here
      // instead of fetched and compiled again by every worker.
      if (request.wasm !== undefined) useCompiledWasm(request.wasm.file, request.wasm.module);
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
    case 'connect':
      index = request.index;
      for (const [worker, peer] of request.peers) {
        peers.set(worker, peer);
        listen(peer, onPart);
      }
      return undefined;
    case 'new': {
      const object = isPoolPart(request.kind)
        ? newPoolPart(module, request.kind, request.config)
        : new module[request.kind](request.config);
      objects.set(request.ref, object);
      return { config: object.config, kernels: object.kernels };
    }
    case 'call':
      return call(request);
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
  // The caller's functions, symbols and class names, which the message could
  // not carry, as stand-ins (pool-arguments.js).
  if (request.notes !== undefined) fromMessage(request, request.notes);
  queue = queue.then(async () => {
    try {
      const value = await serve(request);
      if (value !== NO_REPLY) port.postMessage({ id: request.id, value }, transferables(value));
    } catch (e) {
      port.postMessage({ id: request.id, error: errorMessage(e) });
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
