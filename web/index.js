// simd-attention: multi-head attention as SIMD C++ kernels compiled to
// WebAssembly. This is the package's entry: the feature probes and
// createAttentionModule, which picks and loads one of the three wasm builds
// (dist/) and hands out the classes and functions of src/ bound to it. They
// check what is cheap and JS-specific (types, disposed objects) and forward
// to the Embind glue (bindings/ in the repository), which checks shapes and
// values in C++ and returns every failure as a value that is thrown as a JS
// error (src/errors.js). Types and documentation: index.d.ts.

import { checkObject, describe, optionalBoolean, optionalSize } from './src/arguments.js';
import { makeMultiHeadAttention } from './src/attention.js';
import { makeKeyValueClasses } from './src/caches.js';
import { unwrap } from './src/errors.js';
import { registerPoolParts } from './src/pool-parts.js';
import { makeDecoderLayer, makeEncoderLayer } from './src/layers.js';
import { loadBuild, pickBuild } from './src/loader.js';
import { makeModuleFunctions } from './src/module-functions.js';
import { OPTION_KEYS } from './src/option-keys.js';
import { fromPretrained } from './src/pretrained.js';
import { makeScaledDotProductAttention } from './src/scaled-dot-product-attention.js';
import { makeTinyTransformer } from './src/tiny-model.js';
import { makeOptimizers } from './src/training.js';
import { checkWorkerCount, logicalProcessors, threadsUnavailableReason }
  from './src/thread-workers.js';
import { makeReclaimer } from './src/wasm-object.js';

// ---------------------------------------------------------------------------
// Feature detection
// ---------------------------------------------------------------------------

// (module (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt))
// i8x16.popcnt is one of the last instructions added to the SIMD proposal, so
// engines that shipped an earlier draft of it do not count as supporting it.
const SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // func 0 has type 0
  0x0a, 0x0a, 0x01, 0x08, 0x00, // code: 1 body, 8 bytes, no locals
  0x41, 0x00, // i32.const 0
  0xfd, 0x0f, // i8x16.splat
  0xfd, 0x62, // i8x16.popcnt
  0x0b, // end
]);

// (module (func (result v128) i32.const 0 i8x16.splat i32.const 0
//   i8x16.splat i32.const 0 i8x16.splat f32x4.relaxed_madd)): relaxed SIMD
// with its standard opcode (0xfd 0x85 0x02), the one the relaxed build uses.
// Engines that only knew the proposal's drafts reject it.
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // func 0 has type 0
  0x0a, 0x13, 0x01, 0x11, 0x00, // code: 1 body, 17 bytes, no locals
  0x41, 0x00, 0xfd, 0x0f, // i32.const 0, i8x16.splat
  0x41, 0x00, 0xfd, 0x0f,
  0x41, 0x00, 0xfd, 0x0f,
  0xfd, 0x85, 0x02, // f32x4.relaxed_madd
  0x0b, // end
]);

// (module (func try catch_all end)): the exception-handling instructions
// every build uses (C++ exceptions compiled with -fwasm-exceptions).
const EH_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
  0x03, 0x02, 0x01, 0x00,
  0x0a, 0x08, 0x01, 0x06, 0x00, // code: 1 body, 6 bytes, no locals
  0x06, 0x40, // try (empty block type)
  0x19, // catch_all
  0x0b, // end (try)
  0x0b, // end (func)
]);

function validates(bytes) {
  try {
    return typeof WebAssembly === 'object' && WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

/** Whether this JS engine runs WebAssembly SIMD (the SIMD build). */
export function wasmSimdSupported() {
  return validates(SIMD_PROBE);
}

/** Whether this JS engine runs WebAssembly relaxed SIMD (the fastest build). */
export function wasmRelaxedSimdSupported() {
  return validates(RELAXED_SIMD_PROBE);
}

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
  if (!validates(EH_PROBE)) {
    throw new Error(`${where}: this engine lacks WebAssembly exception handling, which ` +
      'every build needs (Chrome/Edge 95+, Firefox 100+, Safari 15.2+, Node 17+)');
  }
  const build = pickBuild(where, forceSimd, forceRelaxed,
    { simd: wasmSimdSupported(), relaxedSimd: wasmRelaxedSimdSupported() }, options.backend,
    training);
  const { threads, threadsUnavailable } = await pickThreads(where, options.threads,
    build !== 'nosimd', options.backend, training);
  const wasm = await loadBuild(where, build, options.wasmPath, threads);
  if (threads > 1) {
    try {
      unwrap(wasm, where, wasm.startThreads(threads));
    } catch (e) {
      wasm.PThread.terminateAllThreads();
      throw e;
    }
  }

  const backends = Object.freeze(wasm.backends());
  const backend = options.backend ?? backends[0];
  const { kernels } = unwrap(wasm, where, wasm.kernelInfo(backend));

  const reclaimer = makeReclaimer();
  const kv = makeKeyValueClasses(wasm, reclaimer);
  let disposed = false;
  const module = Object.freeze({
    backend,
    build,
    threads,
    threadsUnavailable,
    simd: build !== 'nosimd',
    backends,
    kernels,
    MultiHeadAttention: makeMultiHeadAttention(wasm, reclaimer, backend, kv),
    TransformerEncoderLayer: makeEncoderLayer(wasm, reclaimer, backend),
    TransformerDecoderLayer: makeDecoderLayer(wasm, reclaimer, backend, kv),
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
    // workers (its pthreads first, so that none is cut off mid-task).
    dispose() {
      if (disposed) return;
      disposed = true;
      reclaimer.releaseAll();
      if (threads > 1) {
        wasm.stopThreads();
        wasm.PThread.terminateAllThreads();
      }
    },
  });
  registerPoolParts(module, wasm);
  return module;
}

// How many threads to run, and why a threaded build cannot run here if it
// cannot: the default is the logical processors, at most 4 (each worker
// holds its own instance of the module's code, and more than 4 threads were
// never measured), and one where threads are impossible or a backend only
// the single-thread builds have was asked for; `threads` given explicitly
// and impossible rejects (xsimd then fails in the threaded build's C++,
// naming it; scalar picked the non-SIMD build, which has no threaded one).
// 0 means every logical processor; more than 4 per logical processor is a
// RangeError (checkWorkerCount).
async function pickThreads(where, requested, simd, backend, training) {
  const given = requested !== undefined;
  let threads = given ? optionalSize(where, 'options.threads', requested) : 0;
  await checkWorkerCount(where, 'options.threads', threads, 0);
  if (training) {
    if (given && threads !== 1) {
      throw new Error(`${where}: options.threads: ${requested} threads asked for, but the ` +
        'training build (options.training: true) runs on one thread; omit the option or pass 1');
    }
    return { threads: 1, threadsUnavailable: given ? undefined
      : 'the training build (options.training: true) runs on one thread' };
  }
  if (threads === 0) {
    threads = await logicalProcessors();
    if (!given) threads = Math.min(threads, 4);
  }
  if (threads === 1) return { threads };
  const backendReason = backend === undefined || backend === 'highway' ? undefined
    : `the threaded builds carry only the highway backend, and options.backend is ` +
      `${JSON.stringify(backend)}`;
  const reason = (backend === 'scalar' ? backendReason : undefined) ??
    threadsUnavailableReason(simd) ?? (given ? undefined : backendReason);
  if (reason === undefined) return { threads };
  if (given) {
    throw new Error(`${where}: options.threads: ${threads} threads need a threaded build, ` +
      `which cannot run here: ${reason}`);
  }
  return { threads: 1, threadsUnavailable: reason };
}

export default createAttentionModule;

export { createAttentionPool } from './src/pool.js';
export { loadCheckpoint } from './src/checkpoint-mapping.js';
export { parseSafetensors, readSafetensors, SafetensorsFile } from './src/safetensors.js';
