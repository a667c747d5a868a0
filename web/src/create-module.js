// createAttentionModule, as each entry of the package makes it: the options
// checked, a build picked and loaded with its threads, and the module's
// members that every entry has (MultiHeadAttention, attention(), the module
// functions, the module's facts) with the entry's own (`entry.members`).
// The attention entry (attention.js) runs the builds without the layers
// where it can, so a page that runs attention alone neither downloads nor
// bundles them.

import { checkObject, describe, optionalBoolean, optionalSize } from './arguments.js';
import { makeMultiHeadAttention } from './attention.js';
import { makeKeyValueClasses } from './caches.js';
import { unwrap } from './errors.js';
import { exceptionsSupported, wasmRelaxedSimdSupported, wasmSimdSupported } from './features.js';
import { loadBuild, pickBuild } from './loader.js';
import { makeModuleFunctions } from './module-functions.js';
import { OPTION_KEYS } from './option-keys.js';
import { makeScaledDotProductAttention } from './scaled-dot-product-attention.js';
import { checkWorkerCount, defaultThreads, logicalProcessors, threadsUnavailableReason }
  from './thread-workers.js';
import { makeReclaimer } from './wasm-object.js';

/**
 * The module of one entry. `entry`: { options: the OPTION_KEYS name of its
 * options, builds: the entry's own builds where it has some (loadBuild,
 * loader.js), members(wasm, reclaimer, backend, kv, module): its own
 * members (`module()` gives the module once made), ready(module, wasm):
 * called once the module is made }.
 */
export async function createModule(options, entry) {
  const where = 'createAttentionModule';
  checkObject(where, 'options', options, OPTION_KEYS[entry.options]);
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
  const { wasm, workers } = await loadBuild(where, build, options.wasmPath, running,
    entry.builds, options.backend);
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
    ...makeModuleFunctions(wasm, backend),
    attention: makeScaledDotProductAttention(wasm, backend),
    ...entry.members(wasm, reclaimer, backend, kv, () => module),
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
  entry.ready?.(module, wasm);
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

