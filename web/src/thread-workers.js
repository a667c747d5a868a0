// The threaded builds: whether this engine and page can run one, how many
// threads by default, and the Web Workers emcc runs their pthreads on.
//
// emcc's runtime starts a pthread by posting to an idle worker; a worker
// created at that moment would only begin once the calling thread returns to
// the event loop, which a forward waiting for it never does. So the loader
// creates every worker before the .wasm is instantiated: the builds call
// Module.startWorkers(PThread) as they start (bindings/threads.cmake), and
// emcc then loads the .wasm into these workers and waits for them before the
// module resolves. Each worker runs emcc's <build>.worker.js: in browsers as
// it is, in Node with the Web Worker globals it expects (NODE_WORKER_CODE).

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

// Node: a worker_threads Worker dressed as the Web Worker emcc drives
// (onmessage, onerror, postMessage, terminate).
class NodeThreadWorker {
  #worker;

  /** @type {((event: { data: unknown }) => void) | null} set by emcc */
  onmessage = null;

  /** @type {((error: unknown) => void) | null} set by emcc */
  onerror = null;

  constructor(NodeWorker, script) {
    this.#worker = new NodeWorker(NODE_WORKER_CODE, { eval: true, workerData: script.href });
    this.#worker.on('message', (data) => this.onmessage?.({ data }));
    this.#worker.on('error', (e) => this.onerror?.(e));
  }

  postMessage(message, transfer) { this.#worker.postMessage(message, transfer); }

  terminate() { this.#worker.terminate(); }

  // Whether the worker keeps the process alive: yes while the module loads,
  // no after, so that a script ends on its own without module.dispose().
  unref() { this.#worker.unref(); }
}

// emcc warns once that blocking the main thread is dangerous, as it can be
// when a worker needs that thread (to print, to start a thread). Here a
// forward waits only for the pool's workers, which never call back.
function printErr(text) {
  if (!text.startsWith('Blocking on the main thread')) console.warn(text);
}

// Makes `count` workers for the build whose emcc worker script is `script`
// (a URL). Resolves to { hooks, started, end }: hooks are Module properties
// (the Module.startWorkers hook, printErr), `started()` lets Node workers
// stop holding the process open once they are loaded.
export async function prepareWorkers(count, script) {
  const workers = [];
  let make;
  if (isNode) {
    const name = 'node:worker_threads';
    const { Worker: NodeWorker } = await import(/* webpackIgnore: true */ /* @vite-ignore */ name);
    make = () => new NodeThreadWorker(NodeWorker, script);
  } else {
    // A bundler may inline the small script as a data: URL (Vite does below
    // 4 kB); a worker from it would have an opaque origin and could not
    // import the glue, so it runs from a blob: URL of the same bytes, which
    // keeps the page's origin.
    const url = script.protocol === 'data:'
      ? URL.createObjectURL(await (await fetch(script)).blob()) : script;
    make = () => new Worker(url);
  }
  return {
    hooks: {
      startWorkers(PThread) {
        for (let i = 0; i < count; i++) workers.push(make());
        PThread.unusedWorkers.push(...workers);
        return 0; // emcc allocates no workers of its own
      },
      printErr,
    },
    started() {
      for (const w of workers) w.unref?.();
    },
    // When the module failed to load: a Node worker would keep the process
    // alive.
    end() {
      for (const w of workers) w.terminate();
    },
  };
}
