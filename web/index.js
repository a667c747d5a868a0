// simd-attention: multi-head attention as SIMD C++ kernels compiled to
// WebAssembly. This is the package's entry: the feature probes
// (src/features.js) and createAttentionModule, which picks and loads one of
// the wasm builds (dist/) and hands out the classes and functions of src/
// bound to it. They check what is cheap and JS-specific (types, disposed
// objects) and forward to the Embind glue (bindings/ in the repository),
// which checks shapes and values in C++ and returns every failure as a value
// that is thrown as a JS error (src/errors.js). Types and documentation:
// index.d.ts.

import { checkObject, describe, optionalBoolean, optionalSize } from './src/arguments.js';
import { makeMultiHeadAttention } from './src/attention.js';
import { makeTransformerBlock, makeTransformerStack } from './src/blocks.js';
import { makeKeyValueClasses } from './src/caches.js';
import { unwrap } from './src/errors.js';
import { exceptionsSupported, wasmRelaxedSimdSupported, wasmSimdSupported }
  from './src/features.js';
import { registerPoolParts } from './src/pool-parts.js';
import { makeDecoderLayer, makeEncoderLayer } from './src/layers.js';
import { loadBuild, pickBuild } from './src/loader.js';
import { makeModuleFunctions } from './src/module-functions.js';
import { OPTION_KEYS } from './src/option-keys.js';
import { fromPretrained } from './src/pretrained.js';
import { makeScaledDotProductAttention } from './src/scaled-dot-product-attention.js';
import { makeTinyTransformer } from './src/tiny-model.js';
import { makeOptimizers } from './src/training.js';
import { checkWorkerCount, defaultThreads, logicalProcessors, threadsUnavailableReason }
  from './src/thread-workers.js';
import { makeReclaimer } from './src/wasm-object.js';

// ---------------------------------------------------------------------------
// The module
// ---------------------------------------------------------------------------

export async function createAttentionModule(options = {}) {
  const where = 'createAttentionModule';
  checkObject(where, 'options', options, OPTION_KEYS.AttentionModuleOptions);
  if (options.backend !== undefined && typeof options.backend !== 'string') {
    throw new TypeError(`${where}: options.backend: expected a string, got ` +
      `${describe(options.backend)}`);
  }
  const forceSimd = optionalBoolean(where, 'options.simd', options.simd, undefined);
  const forceRelaxed = optionalBoolean(where, 'options.relaxedSimd', options.relaxedSimd,
    undefined);
  const training = optionalBoolean(where, 'options.training', options.training, false);
  const isUrl = (v) => v !== null && typeof v === 'object' && typeof v.href === 'string';
  if (options.wasmPath !== undefined && typeof options.wasmPath !== 'string' &&
      !isUrl(options.wasmPath)) {
    throw new TypeError(`${where}: options.wasmPath: expected a string or URL, got ` +
      `${describe(options.wasmPath)}`);
  }
  if (typeof WebAssembly !== 'object') {
    throw new Error(`${where}: this JavaScript engine has no WebAssembly`);
  }
  if (!exceptionsSupported()) {
    throw new Error(`${where}: this engine lacks WebAssembly exception handling, which ` +
      'every build needs (Chrome/Edge 95+, Firefox 100+, Safari 15.2+, Node 17+)');
  }
  const build = pickBuild(where, forceSimd, forceRelaxed,
    { simd: wasmSimdSupported(), relaxedSimd: wasmRelaxedSimdSupported() }, options.backend,
    training);
  const { threads, threadsUnavailable, running } = await pickThreads(where, options.threads,
    build !== 'nosimd', options.backend, training);
  const { wasm, workers } = await loadBuild(where, build, options.wasmPath, running);
  // Ends a threaded build's workers: its pthreads first, so that none is cut
  // off mid-task; those still loading start none.
  const endThreads = () => {
    if (workers === undefined) return;
    workers.stop();
    wasm.stopThreads();
    wasm.PThread.terminateAllThreads();
  };

  const backends = Object.freeze(wasm.backends());
  const backend = options.backend ?? backends[0];
  let kernels;
  try {
    if (workers !== undefined) {
      unwrap(wasm, where, wasm.startThreads(threads, running));
      // The module is ready now; each worker runs a thread once it has loaded.
      workers.run(() => unwrap(wasm, where, wasm.startThread()));
    }
    ({ kernels } = unwrap(wasm, where, wasm.kernelInfo(backend)));
  } catch (e) {
    endThreads();
    throw e;
  }

  const reclaimer = makeReclaimer();
  const kv = makeKeyValueClasses(wasm, reclaimer);
  let disposed = false;
  const module = Object.freeze({
    backend,
    build,
    threads,
    threadsUnavailable,
    threadsReady: workers?.ready ?? Promise.resolve(),
    simd: build !== 'nosimd',
    backends,
    kernels,
    // Every name each config field takes, as C++ judges them.
    choices: deepFreeze(wasm.choices()),
    MultiHeadAttention: makeMultiHeadAttention(wasm, reclaimer, backend, kv),
    TransformerEncoderLayer: makeEncoderLayer(wasm, reclaimer, backend),
    TransformerDecoderLayer: makeDecoderLayer(wasm, reclaimer, backend, kv),
    TransformerBlock: makeTransformerBlock(wasm, reclaimer, backend, kv),
    TransformerStack: makeTransformerStack(wasm, reclaimer, backend, kv),
    ...makeModuleFunctions(wasm, backend),
    attention: makeScaledDotProductAttention(wasm, backend),
    ...makeOptimizers(wasm, reclaimer),
    TinyTransformer: makeTinyTransformer(wasm, reclaimer, backend),
    fromPretrained: (config, file, fromOptions) =>
      fromPretrained(module, config, file, fromOptions),
    memoryStats: () => {
      const { heapBytes, maxHeapBytes, allocatedBytes, weightBytes, cacheBytes } =
        wasm.memoryStats();
      return { heapBytes, maxHeapBytes, allocatedBytes, weightBytes, cacheBytes,
        jsHandles: wasm.count_emval_handles() };
    },
    // Disposes every object of the module, then ends a threaded build's
    // workers.
    dispose() {
      if (disposed) return;
      disposed = true;
      reclaimer.releaseAll();
      endThreads();
    },
  });
  registerPoolParts(module, wasm);
  return module;
}

// How many threads to run, how many of them run at once (`running`: at
// most the logical processors, so that no worker waits for a core another
// holds; the threads beyond split calls as those do and start no worker),
// and why a threaded build cannot run here if it cannot: the default is
// defaultThreads() (the physical cores, at most 16), and one where threads
// are impossible or a backend only the single-thread builds have was asked
// for; `threads` given explicitly and impossible rejects (xsimd then fails
// in the threaded build's C++, naming it; scalar picked the non-SIMD build,
// which has no threaded one). 0 means the default; more than 4 per logical
// processor is a RangeError (checkWorkerCount).
async function pickThreads(where, requested, simd, backend, training) {
  const given = requested !== undefined;
  let threads = given ? optionalSize(where, 'options.threads', requested) : 0;
  await checkWorkerCount(where, 'options.threads', threads, 0);
  if (training) {
    if (given && threads !== 1) {
      throw new Error(`${where}: options.threads: ${requested} threads asked for, but the ` +
        'training build (options.training: true) runs on one thread; omit the option or pass 1');
    }
    return { threads: 1, running: 1, threadsUnavailable: given ? undefined
      : 'the training build (options.training: true) runs on one thread' };
  }
  if (threads === 0) threads = await defaultThreads();
  if (threads === 1) return { threads, running: 1 };
  const backendReason = backend === undefined || backend === 'highway' ? undefined
    : `the threaded builds carry only the highway backend, and options.backend is ` +
      `${JSON.stringify(backend)}`;
  const reason = (backend === 'scalar' ? backendReason : undefined) ??
    threadsUnavailableReason(simd) ?? (given ? undefined : backendReason);
  if (reason === undefined) return { threads, running: Math.min(threads, await logicalProcessors()) };
  if (given) {
    throw new Error(`${where}: options.threads: ${threads} threads need a threaded build, ` +
      `which cannot run here: ${reason}`);
  }
  return { threads: 1, running: 1, threadsUnavailable: reason };
}

// An object and the arrays it holds, frozen.
function deepFreeze(o) {
  for (const v of Object.values(o)) Object.freeze(v);
  return Object.freeze(o);
}

export default createAttentionModule;

export { wasmRelaxedSimdSupported, wasmSimdSupported };

export { createAttentionPool } from './src/pool.js';
export { loadCheckpoint } from './src/checkpoint-mapping.js';
export { parseSafetensors, readSafetensors, SafetensorsFile } from './src/safetensors.js';
