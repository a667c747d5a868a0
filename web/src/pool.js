// createAttentionPool: MultiHeadAttention split by heads over workers, each
// with its own wasm instance (pool-worker.js), so that a forward runs off the
// calling thread and on several cores without SharedArrayBuffer (a page need
// not be cross-origin isolated). The pool's files, each with one job:
//
//   pool.js                 the options, the workers started and connected,
//                           the pool object (its constructors and module
//                           functions)
//   pool-workers.js         the workers and the requests they answer
//   pool-context.js         what one pool's objects share: its workers, refs,
//                           layers held per worker, the module functions
//   pool-object.js          the base of the pool's objects: calls queued, sent
//                           to every part or gathered by the first, dispose
//   pool-outgoing.js        a call's arguments as its messages carry them
//                           (shared memory where there is some)
//   pool-split.js           units per worker, masks cut to a worker's heads
//   pool-attention.js       MultiHeadAttention split by heads
//   pool-key-values.js      its KV caches and precomputed K/V, in the workers
//   pool-layer-placement.js where a layer goes: split or whole (a cost rule)
//   pool-split-object.js    what split layers and blocks share (errors)
//   pool-sublayer-parts.js  FFNs by hidden units, a sublayer's norms
//   pool-split-layers.js    layers split over the workers (attention by heads,
//                           FFN by hidden units)
//   pool-block-mixers.js    how each mixer of a block splits
//   pool-split-blocks.js    blocks split over the workers, sublayer by sublayer
//   pool-stacks.js          stacks of the pool's blocks
//   pool-whole-layers.js    layers and blocks held whole by one worker
//
// Each pooled method copies its arguments when called (pool-arguments.js),
// and its queued job works on those copies, under the arguments' names.
// Arguments are type-checked here when that is cheap; shapes and values are
// checked by the synchronous objects in the workers, whose errors come back
// with their class and message.
import { checkObject, describe, requiredSize } from './arguments.js';
import { compileForWorkers } from './loader.js';
import { ARGUMENTS, tensor } from './pool-arguments.js';
import { createMultiHeadAttention } from './pool-attention.js';
import { PoolContext } from './pool-context.js';
import { createBlock, createLayer, createPooledStack } from './pool-layer-placement.js';
import { asyncDisposeSymbol } from './pool-object.js';
import { isNode, Workers } from './pool-workers.js';
import { fromPretrainedPooled } from './pretrained.js';
import { checkWorkerCount } from './thread-workers.js';

const POOL_OPTION_KEYS = ['workers', 'build', 'backend', 'wasmPath'];
const BUILD_FLAGS = {
  'relaxed-simd': { relaxedSimd: true },
  simd: { simd: true, relaxedSimd: false },
  nosimd: { simd: false },
};
// Lets tests stop a worker as if it had crashed.
const TERMINATE_WORKER = Symbol.for('simd-attention.pool.terminateWorker');

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

function makePool(workers, summary) {
  const context = new PoolContext(workers);
  const pool = {
    get workers() { return workers.count; },
    get dead() { return workers.dead; },
    backend: summary.backend,
    build: summary.build,
    simd: summary.simd,
    backends: Object.freeze(summary.backends),
    kernels: summary.kernels,
    MultiHeadAttention: (config) => createMultiHeadAttention(context, config),
    TransformerEncoderLayer: (config, options) =>
      createLayer(context, 'TransformerEncoderLayer', config, options),
    TransformerDecoderLayer: (config, options) =>
      createLayer(context, 'TransformerDecoderLayer', config, options),
    TransformerBlock: (config, options) => createBlock(context, config, options),
    TransformerStack: (config, options) => createPooledStack(context, config, options),
    positionalEncoding: context.moduleFunction('positionalEncoding', []),
    layerNorm: context.moduleFunction('layerNorm', [tensor, ARGUMENTS.layerNormOptions]),
    attention: context.moduleFunction('attention',
      [tensor, tensor, tensor, ARGUMENTS.attentionOptions]),
    quantizeInt8: context.quantizeInt8,
    fromPretrained: (config, file, options) => fromPretrainedPooled(pool, config, file, options),
    dispose: async () => workers.dispose(),
    [asyncDisposeSymbol]: async () => workers.dispose(),
    [TERMINATE_WORKER]: (worker) => workers.terminate(worker),
  };
  return Object.freeze(pool);
}
