// The threaded builds: whether this engine and page can run one, how many
// threads by default, and the Web Workers emcc runs their pthreads on.
//
// emcc's runtime starts a pthread by posting to an idle worker; a worker
// created at that moment would only begin once the calling thread returns to
// the event loop, which a forward waiting for it never does. So the loader
// hands emcc every worker before the .wasm is instantiated: the builds call
// Module.startWorkers(PThread) as they start (bindings/threads.cmake), and
// emcc then sends the compiled module to these workers. It would also wait
// for them all to load it before the module resolves; here the module
// resolves as soon as its own instance is ready, the workers are made after
// (ThreadWorker), and each, once loaded, runs one of the module's threads
// (the C++ pool's StartThread): a call runs on the threads that run when it
// starts, with the same results. Each worker runs emcc's <build>.worker.js:
// in browsers as it is, in Node with the Web Worker globals it expects
// (NODE_WORKER_CODE).

const isNode = typeof process === 'object' && process !== null &&
  typeof process.versions?.node === 'string' && typeof window === 'undefined';

// (module (memory 1 1 shared)): WebAssembly threads, i.e. shared memory.
const SHARED_MEMORY_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  0x05, 0x04, 0x01, 0x03, 0x01, 0x01, // memory: 1 entry, shared, min 1, max 1
]);

// Why this engine or page cannot run a threaded build (a sentence for
// module.threadsUnavailable), or undefined if it can. `simd`: whether the
// chosen build is a SIMD one (the threaded builds are).
export function threadsUnavailableReason(simd) {
  if (globalThis.crossOriginIsolated === false) {
    return 'the page is not cross-origin isolated: serve it with COOP: same-origin and ' +
      'COEP: require-corp (Cross-Origin-Opener-Policy and Cross-Origin-Embedder-Policy ' +
      'headers), which SharedArrayBuffer needs';
  }
  if (typeof SharedArrayBuffer !== 'function') {
    return 'this engine has no SharedArrayBuffer';
  }
  if (!isNode && typeof Worker !== 'function') {
    return 'this context cannot start Web Workers';
  }
  let shared = false;
  try {
    shared = WebAssembly.validate(SHARED_MEMORY_PROBE);
  } catch {
    // leaves shared false
  }
  if (!shared) return 'this engine does not support WebAssembly threads (shared memory)';
  if (!simd) return 'the threaded builds need WebAssembly SIMD, and the non-SIMD build was chosen';
  return undefined;
}

// Logical processors, for the default thread count and the most threads or
// pool workers a caller may ask for.
export async function logicalProcessors() {
  const n = globalThis.navigator?.hardwareConcurrency;
  if (Number.isInteger(n) && n > 0) return n;
  if (isNode) {
    const name = 'node:os';
    const os = await import(/* webpackIgnore: true */ /* @vite-ignore */ name);
    return os.availableParallelism?.() ?? os.cpus().length;
  }
  return 1;
}

// The most threads defaultThreads() gives: the largest count measured (a
// 16-core Xeon, where S2 and S4 still ran faster on 16 threads than on 8).
// The C++ core's kMaxDefaultThreads.
export const MAX_DEFAULT_THREADS = 16;

// The default thread count: the physical cores (SMT siblings share one
// core's vector units; Node on Linux tells from sysfs, elsewhere every
// logical processor counts), at most MAX_DEFAULT_THREADS. A call wakes only
// the threads its work pays for, so a small one costs no more for them.
export async function defaultThreads() {
  const processors = await logicalProcessors();
  let perCore = 1;
  if (isNode && process.platform === 'linux') {
    try {
      const name = 'node:fs';
      const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ name);
      const siblings = fs.readFileSync('/sys/devices/system/cpu/cpu0/topology/thread_siblings_list',
        'utf8');
      // e.g. "0-1" or "0,8": the logical processors of cpu0's core
      perCore = siblings.trim().split(',').reduce((n, range) => {
        const [a, b = a] = range.split('-').map(Number);
        return n + b - a + 1;
      }, 0) || 1;
    } catch {
      // no sysfs: every logical processor counts
    }
  }
  return Math.max(1, Math.min(MAX_DEFAULT_THREADS, Math.ceil(processors / perCore)));
}

// The most threads, or pool workers, a caller may ask for, per logical
// processor. Each is a worker holding its own copy of the module (a pool's,
// a whole wasm instance), all started before the first call: a count without
// a bound exhausts memory (V8 aborts the process) before anything can be
// caught, and beyond the processors more workers only share them.
export const WORKERS_PER_PROCESSOR = 4;

// Throws a RangeError naming `name` if `count` (already an integer >= least)
// exceeds WORKERS_PER_PROCESSOR per logical processor; nothing is allocated
// before this check.
export async function checkWorkerCount(where, name, count, least) {
  const processors = await logicalProcessors();
  const most = WORKERS_PER_PROCESSOR * processors;
  if (count > most) {
    throw new RangeError(`${where}: ${name}: expected an integer from ${least} to ${most} ` +
      `(${WORKERS_PER_PROCESSOR} per logical processor; this machine has ${processors}), ` +
      `got ${count}`);
  }
}

// In Node, each worker's code: it runs emcc's <build>.worker.js (its URL is
// the workerData) as if in a Web Worker. That script was generated for
// browsers (the builds leave Node out of emcc's ENVIRONMENT): it sets
// self.onmessage and calls postMessage, then imports the build's glue from
// the URL the loader gives emcc. Messages wait in the port until the
// listener exists, so none arrives before emcc's handler is in place. Code
// in a string, not a file: bundlers would ship a file to browsers. Only
// import(), which CommonJS and ES modules both have: the worker evaluates it
// as the main script's --input-type says.
const NODE_WORKER_CODE = `
import('node:worker_threads').then(({ parentPort, workerData }) => {
  globalThis.self = globalThis;
  globalThis.postMessage = (message, transfer) => parentPort.postMessage(message, transfer);
  return import(workerData).then(() =>
    parentPort.on('message', (data) => globalThis.onmessage({ data })));
});
`;

// A worker of emcc's pthreads as emcc drives it (onmessage, onerror,
// postMessage, terminate), made by `make(this)` (async) only in a task after
// emcc first posts to it. emcc does so as the main instance is ready, and
// the module resolves in that same task: a worker made sooner would take
// this thread's time (Node compiles worker_threads' own modules, about 9 ms)
// and a core (its boot) from the module's compile and start-up, and a caller
// that goes on at once with a forward has it done before. A worker's errors
// reach emcc's handler, which reports them (printErr) and rethrows, here in
// the background: the module runs on without that worker's thread.
class ThreadWorker {
  #make;
  #worker = null;
  #queued = [];
  #ended = false;
  #unref = false;
  #failed;

  /** @type {((event: { data: unknown }) => void) | null} set by emcc */
  onmessage = null;

  /** @type {((error: unknown) => void) | null} set by emcc */
  onerror = null;

  // failed(): called when the worker reports an error, or cannot be made.
  constructor(make, failed) {
    this.#make = make;
    this.#failed = failed;
  }

  postMessage(message, transfer) {
    if (this.#ended) return;
    if (this.#worker !== null) {
      this.#worker.postMessage(message, transfer);
      return;
    }
    this.#queued.push([message, transfer]);
    if (this.#queued.length > 1) return;
    setTimeout(() => this.#start(), 0);
  }

  async #start() {
    let worker;
    try {
      worker = await this.#make(this);
    } catch (e) {
      this.reportError(e);
      return;
    }
    if (this.#ended) {
      worker.terminate();
      return;
    }
    this.#worker = worker;
    if (this.#unref) worker.unref?.();
    for (const [message, transfer] of this.#queued) worker.postMessage(message, transfer);
    this.#queued = [];
  }

  terminate() {
    this.#ended = true;
    this.#worker?.terminate();
  }

  // Node: the worker stops keeping the process alive (its thread runs, or
  // it failed). Until then it does, so that module.threadsReady settles.
  unref() {
    this.#unref = true;
    this.#worker?.unref?.();
  }

  reportError(error) {
    this.#failed();
    try {
      this.onerror?.(error);
    } catch {
      // reported by emcc's handler
    }
  }
}

// Node: a worker_threads Worker for `target` (a ThreadWorker). Its module
// comes from process.getBuiltinModule (Node 20.16+) where there is one: an
// import() here, after the caller's script may have ended, is refused where
// a test runner has torn its module environment down.
async function nodeWorker(script, target) {
  const name = 'node:worker_threads';
  const { Worker: NodeWorker } = process.getBuiltinModule?.(name) ??
    await import(/* webpackIgnore: true */ /* @vite-ignore */ name);
  const worker = new NodeWorker(NODE_WORKER_CODE, { eval: true, workerData: script.href });
  worker.on('message', (data) => target.onmessage?.({ data }));
  worker.on('error', (e) => target.reportError(e));
  return worker;
}

// A browser's Web Worker for `target` (a ThreadWorker), its script from the
// URL `scriptUrl()` resolves to.
async function webWorker(scriptUrl, target) {
  const worker = new Worker(await scriptUrl());
  worker.onmessage = (event) => target.onmessage?.(event);
  worker.onerror = (event) => target.reportError(event);
  return worker;
}

// emcc warns once that blocking the main thread is dangerous, as it can be
// when a worker needs that thread (to print, to start a thread). Here a
// forward waits only for the pool's workers, which never call back.
function printErr(text) {
  if (!text.startsWith('Blocking on the main thread')) console.warn(text);
}

// Makes `count` workers for the build whose emcc worker script is `script`
// (a URL). Returns { hooks, run, stop, end, ready }: hooks are Module
// properties (the Module.startWorkers hook, printErr); run(startThread)
// calls startThread() once for each worker that has loaded and, later, as
// each other one loads, with that worker where emcc's pthread_create takes
// an idle worker from; stop() ends those calls (module.dispose()); end()
// also terminates the workers (a module that failed to load); ready
// resolves once each worker has had its thread started or has failed, or
// on stop().
export function prepareWorkers(count, script) {
  // A bundler may inline the small script as a data: URL (Vite does below
  // 4 kB); a worker from it would have an opaque origin and could not import
  // the glue, so it runs from a blob: URL of the same bytes, made once,
  // which keeps the page's origin.
  let url;
  const scriptUrl = () => (url ??= script.protocol !== 'data:' ? Promise.resolve(script)
    : fetch(script).then((r) => r.blob()).then((blob) => URL.createObjectURL(blob)));
  let allSettled;
  const ready = new Promise((resolve) => { allSettled = resolve; });
  const settled = new Set(); // workers with their thread started, or failed
  // A Node process ends on its own, with or without module.dispose(), once
  // each worker has settled: its thread waits for work, which nothing then
  // sends.
  const settle = (worker) => {
    worker.unref();
    settled.add(worker);
    if (settled.size === count) allSettled();
  };
  const make = () => {
    const worker = new ThreadWorker(
      (target) => (isNode ? nodeWorker(script, target) : webWorker(scriptUrl, target)),
      () => settle(worker));
    return worker;
  };
  const workers = [];
  let idle = null; // emcc's PThread.unusedWorkers
  const waiting = []; // workers loaded before run()
  let startThread = null;
  let stopped = false;
  // emcc's pthread_create takes the last idle worker: the one just loaded,
  // whose thread thus starts at once, without this thread's event loop.
  const start = (worker) => {
    idle.splice(idle.indexOf(worker), 1);
    idle.push(worker);
    startOne(startThread);
    settle(worker);
  };
  const loaded = (worker) => {
    if (stopped) return;
    if (startThread === null) waiting.push(worker);
    else start(worker);
  };
  return {
    hooks: {
      startWorkers(PThread) {
        for (let i = 0; i < count; i++) workers.push(make());
        idle = PThread.unusedWorkers;
        idle.push(...workers);
        // emcc calls this for each worker as the main instance is ready,
        // and resolves the module once each has called back: they call
        // back at once, and report to `loaded` when they have loaded.
        const load = PThread.loadWasmModuleToWorker;
        PThread.loadWasmModuleToWorker = (worker, onFinishedLoading) => {
          load(worker, loaded);
          onFinishedLoading?.(worker);
        };
        return 0; // emcc allocates no workers of its own
      },
      printErr,
    },
    run(starter) {
      startThread = starter;
      for (const worker of waiting.splice(0)) start(worker);
    },
    stop() {
      stopped = true;
      allSettled();
    },
    end() {
      stopped = true;
      allSettled();
      for (const w of workers) w.terminate();
    },
    ready,
  };
}

// A thread that cannot start leaves the module on the others; it says why.
function startOne(startThread) {
  try {
    startThread();
  } catch (e) {
    console.warn(`simd-attention: a thread of the module did not start: ${e?.message ?? e}`);
  }
}
