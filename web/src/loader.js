// Which wasm build to load, where its .wasm file is, and loading it through
// the emcc glue of dist/. This file sits in src/, so the package's dist/ is
// '../dist/' from here.

import { wasmRelaxedSimdSupported, wasmSimdSupported } from './features.js';
import { prepareWorkers } from './thread-workers.js';
import { fromPackage, inViteDeps, VITE_EXCLUDE } from './vite-dev.js';

const isNode = typeof process === 'object' && process !== null &&
  typeof process.versions?.node === 'string' && typeof window === 'undefined';

// The builds (BuildName in index.d.ts), fastest first: dist/<file>.{js,wasm},
// and the threaded variants of the SIMD ones: dist/<file>_threads.{js,wasm}
// and .worker.js, the script of their workers. Each file is a literal `new URL(..., import.meta.url)`, so that bundlers
// emit each once, as is, and nothing else of dist/. The glue is imported from
// its URL at run time rather than by import(): a code-split bundle is one
// that Vite cannot build into a worker in its default format ('iife'), and
// only the picked build's glue is downloaded.
export const BUILDS = {
  'relaxed-simd': {
    file: 'simd_attention_relaxed',
    glue: () => new URL('../dist/simd_attention_relaxed.js', import.meta.url),
    wasm: () => new URL('../dist/simd_attention_relaxed.wasm', import.meta.url),
    threaded: {
      file: 'simd_attention_relaxed_threads',
      glue: () => new URL('../dist/simd_attention_relaxed_threads.js', import.meta.url),
      wasm: () => new URL('../dist/simd_attention_relaxed_threads.wasm', import.meta.url),
      worker: () => new URL('../dist/simd_attention_relaxed_threads.worker.js', import.meta.url),
    },
  },
  simd: {
    file: 'simd_attention_simd',
    glue: () => new URL('../dist/simd_attention_simd.js', import.meta.url),
    wasm: () => new URL('../dist/simd_attention_simd.wasm', import.meta.url),
    threaded: {
      file: 'simd_attention_simd_threads',
      glue: () => new URL('../dist/simd_attention_simd_threads.js', import.meta.url),
      wasm: () => new URL('../dist/simd_attention_simd_threads.wasm', import.meta.url),
      worker: () => new URL('../dist/simd_attention_simd_threads.worker.js', import.meta.url),
    },
  },
  nosimd: {
    file: 'simd_attention_nosimd',
    glue: () => new URL('../dist/simd_attention_nosimd.js', import.meta.url),
    wasm: () => new URL('../dist/simd_attention_nosimd.wasm', import.meta.url),
  },
  // The SIMD build with the backward passes and the optimizers
  // (createAttentionModule({ training: true })); highway only, one thread.
  training: {
    file: 'simd_attention_training',
    glue: () => new URL('../dist/simd_attention_training.js', import.meta.url),
    wasm: () => new URL('../dist/simd_attention_training.wasm', import.meta.url),
  },
};
const WASM_FILES = Object.values(BUILDS).map((b) => `${b.file}.wasm`);

// A file of dist/ (its URL made from import.meta.url) where it is served:
// under Vite's dev server '../dist/' points into node_modules/.vite/
// (vite-dev.js).
function fromViteDeps(url) {
  const moved = inViteDeps && /\/node_modules\/\.vite\/(dist\/[^/]+)$/.exec(url.pathname);
  return moved ? fromPackage(moved[1]) : url;
}

// Where a .wasm file is (`variant`: an entry of BUILDS, or its threaded
// one): a URL, or in Node a file path.
function wasmLocation(variant, file, wasmPath) {
  if (wasmPath === undefined) return fromViteDeps(variant.wasm());
  const isUrl = typeof wasmPath !== 'string';
  let dir = isUrl ? wasmPath.href : wasmPath;
  if (/\.wasm$/i.test(dir)) {
    throw new TypeError('createAttentionModule: options.wasmPath: expected the ' +
      `folder (or URL prefix) that holds ${WASM_FILES.slice(0, -1).join(', ')} and ` +
      `${WASM_FILES.at(-1)}, got the file ${JSON.stringify(dir)}`);
  }
  if (!dir.endsWith('/')) dir += '/';
  // A scheme of two letters or more (file:, http:, blob: ...), not a drive letter.
  if (isUrl || /^[a-z][a-z0-9+.-]+:/i.test(dir)) return new URL(file, dir);
  if (isNode) return { path: dir + file };
  const base = typeof document === 'object' && document?.baseURI
    ? document.baseURI : globalThis.location?.href;
  return new URL(file, new URL(dir, base));
}

// What a .wasm file starts with: "\0asm".
const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');

// What to do about a .wasm file that is missing or is not wasm. Vite's dev
// server answers a missing file with the app's index.html.
const SET_WASM_PATH = 'set options.wasmPath to the folder (or URL prefix) that ' +
  "serves the .wasm files of the package's dist/";

// The start of `bytes` for a message: hex, and as text when it is printable
// ASCII (an HTML page, a JSON or text error).
function describeStart(bytes) {
  if (bytes.length === 0) return 'are empty';
  const start = bytes.subarray(0, 16);
  const printable = start.every((b) => (b >= 0x20 && b < 0x7f) || b === 0x09 ||
    b === 0x0a || b === 0x0d);
  const text = printable ? ` (${JSON.stringify(String.fromCharCode(...start))})` : '';
  return `start ${hex(start)}${text}`;
}

// Throws unless `bytes` start with the wasm magic number: the engine's own
// message ("expected magic word ...") names neither the file nor the fix.
function checkWasmBytes(file, bytes, source, fix) {
  if (WASM_MAGIC.every((b, i) => bytes[i] === b)) return;
  throw new Error(`createAttentionModule: ${file} is not WebAssembly: ${source} ` +
    `${bytes.length} bytes that ${describeStart(bytes)}, where a wasm file starts ` +
    `${hex(WASM_MAGIC)}; ${fix}`);
}

// Compiles the .wasm file `file` at `where` (a URL, or in Node { path }):
// while it streams in where the response allows, else from its bytes, which
// are checked first (a host that answers a missing file with a page).
async function compile(file, where) {
  const nodeFile = isNode && (where.path !== undefined || where.protocol === 'file:');
  if (nodeFile) {
    // emcc 3.1.6's own loader would fetch() the file path here, which Node
    // rejects; read the file instead. The specifier is hidden from bundlers.
    const fsName = 'node:fs/promises';
    const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsName);
    const filePath = where.path ?? where;
    let bytes;
    try {
      bytes = await fs.readFile(filePath);
    } catch (e) {
      throw new Error(`createAttentionModule: cannot read the wasm file ${filePath} ` +
        `(${e.code ?? e.message}); build the package (npm run build) or set ` +
        'options.wasmPath', { cause: e });
    }
    checkWasmBytes(file, bytes, `the file ${filePath} holds`,
      `${SET_WASM_PATH}, or rebuild them (npm run build)`);
    return WebAssembly.compile(bytes);
  }
  const response = await fetch(where);
  const inVite = inViteDeps || /\/node_modules\/\.vite\//.test(response.url || String(where));
  if (!response.ok) {
    throw new Error(`createAttentionModule: fetching ${where} failed: HTTP ` +
      `${response.status}; set options.wasmPath to where the .wasm files are served` +
      (inVite ? `, or ${VITE_EXCLUDE}` : ''));
  }
  const type = response.headers.get('content-type');
  // Only a response served as application/wasm can stream (the engine
  // refuses any other); one that still fails, e.g. a page served with that
  // type, is checked and compiled from its bytes below.
  if (typeof WebAssembly.compileStreaming === 'function' &&
      /^application\/wasm\s*(;|$)/i.test(type ?? '')) {
    try {
      return await WebAssembly.compileStreaming(response.clone());
    } catch {
      // A real compile error shows up again from the bytes.
    }
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  checkWasmBytes(file, bytes, `${where} answered HTTP ${response.status} with content ` +
    `type ${type ?? '(none)'} and`, `${SET_WASM_PATH} (a single-page app's host answers ` +
    `a file it does not have with its index.html); ${VITE_EXCLUDE}`);
  return WebAssembly.compile(bytes);
}

// Compiled .wasm files handed to this context by another (a pool's workers
// get the page's), by file name: loadBuild instantiates them instead of
// fetching and compiling the file again.
const handedOver = new Map();

/** Takes `module`, the compiled .wasm file `file`, for loadBuild. */
export function useCompiledWasm(file, module) {
  handedOver.set(file, module);
}

// Compiles the .wasm of the single-thread `build` (a key of BUILDS) from
// `wasmPath` or dist/: resolves to { file, module }.
async function compileBuild(build, wasmPath) {
  const variant = BUILDS[build];
  const file = `${variant.file}.wasm`;
  return { file, module: await compile(file, wasmLocation(variant, file, wasmPath)) };
}

/**
 * What a worker's createAttentionModule(options) of one thread will compile
 * (options.simd, relaxedSimd, backend, wasmPath as there), compiled here
 * once for all the workers: resolves to { file, module }, or to undefined
 * where that fails, for each worker to fail with its own message.
 */
export async function compileForWorkers(options) {
  try {
    const build = pickBuild('', options.simd, options.relaxedSimd,
      { simd: wasmSimdSupported(), relaxedSimd: wasmRelaxedSimdSupported() }, options.backend,
      false);
    return await compileBuild(build, options.wasmPath);
  } catch {
    return undefined;
  }
}

// Runs the emcc factory with our instantiateWasm hook, which instantiates
// the module `compiling` resolves to; rejects if that fails (emcc would
// otherwise never settle its promise). `hooks`: more Module properties (the
// threaded builds' workers).
async function startBuild(factory, compiling, hooks) {
  let rejectLoad;
  const loadFailed = new Promise((_, reject) => { rejectLoad = reject; });
  const ready = factory({
    ...hooks,
    instantiateWasm(imports, receiveInstance) {
      compiling.then(async (module) => {
        receiveInstance(await WebAssembly.instantiate(module, imports), module);
      }).catch(rejectLoad);
      return {}; // exports arrive asynchronously
    },
  });
  return Promise.race([ready, loadFailed]);
}

// Which build to load: the fastest the engine runs, unless forced. `engine`:
// { simd, relaxedSimd }, what the feature probes found. The scalar backend
// is the non-SIMD build's alone and xsimd the SIMD build's (the others
// leave them out for size), so `backend` 'scalar' without a build asked for
// picks the non-SIMD build, and 'xsimd' without relaxed SIMD asked for the
// SIMD build; a build asked for that lacks the backend refuses it in C++,
// naming the builds' backends.
export function pickBuild(where, forceSimd, forceRelaxed, engine, backend, training) {
  if (training) return pickTrainingBuild(where, forceSimd, forceRelaxed, engine);
  if (forceSimd === false && forceRelaxed === true) {
    throw new RangeError(`${where}: options.relaxedSimd: true asks for the relaxed-SIMD ` +
      'build, which needs WebAssembly SIMD, but options.simd is false; pass only one of them');
  }
  const hasSimd = engine.simd;
  if (forceSimd === true && !hasSimd) {
    throw new Error(`${where}: options.simd: true asks for the SIMD build, but this ` +
      'engine does not support WebAssembly SIMD; omit the option or pass false');
  }
  const hasRelaxed = hasSimd && engine.relaxedSimd;
  if (forceRelaxed === true && !hasRelaxed) {
    throw new Error(`${where}: options.relaxedSimd: true asks for the relaxed-SIMD build, ` +
      'but this engine does not support WebAssembly relaxed SIMD (Chrome/Edge 114+, ' +
      'Node 22+; Node 20 with --experimental-wasm-relaxed-simd); omit the option or ' +
      'pass false');
  }
  if (backend === 'scalar' && forceSimd === undefined && forceRelaxed === undefined) {
    return 'nosimd';
  }
  if (!(forceSimd ?? hasSimd)) return 'nosimd';
  if (backend === 'xsimd' && forceRelaxed === undefined) return 'simd';
  return (forceRelaxed ?? hasRelaxed) ? 'relaxed-simd' : 'simd';
}

// options.training: the training build, a SIMD one without relaxed SIMD.
function pickTrainingBuild(where, forceSimd, forceRelaxed, engine) {
  const conflict = forceSimd === false ? 'options.simd: false'
    : forceRelaxed === true ? 'options.relaxedSimd: true' : undefined;
  if (conflict !== undefined) {
    throw new RangeError(`${where}: options.training: true loads the training build, a ` +
      `WebAssembly SIMD build without relaxed SIMD, but ${conflict} asks for another; ` +
      'pass only one of them');
  }
  if (!engine.simd) {
    throw new Error(`${where}: options.training: true loads the training build, which ` +
      'needs WebAssembly SIMD, and this engine does not support it');
  }
  return 'training';
}

// Which variant of `build` to load: the threaded one when `threads` > 1,
// else the entry's own (`entryBuilds`: { build: variant }, those of the
// attention entry, src/attention-builds.js) where it has one for `build`
// and the backend is highway (the one backend those carry), else `build`.
function variantOf(build, threads, entryBuilds, backend) {
  if (threads > 1) return BUILDS[build].threaded;
  const own = (backend ?? 'highway') === 'highway' ? entryBuilds?.[build] : undefined;
  return own ?? BUILDS[build];
}

// Loads `build` (a key of BUILDS) with its .wasm from options.wasmPath or
// dist/, the variant variantOf() picks; resolves to { wasm, workers } as
// soon as the main instance is ready: wasm is the emcc module, i.e. the
// Embind glue, and workers (threaded variant only) the prepareWorkers()
// handle of its workers, which start and load after.
export async function loadBuild(where, build, wasmPath, threads = 1, entryBuilds = undefined,
  backend = undefined) {
  const variant = variantOf(build, threads, entryBuilds, backend);
  const file = `${variant.file}.wasm`;
  // The .wasm compiles while the glue loads, not after it.
  const compiling = handedOver.has(file) ? Promise.resolve(handedOver.get(file))
    : compile(file, wasmLocation(variant, file, wasmPath));
  compiling.catch(() => {}); // a failure is reported below, or the glue's first
  const glue = fromViteDeps(variant.glue());
  let factory;
  try {
    factory = (await import(/* webpackIgnore: true */ /* @vite-ignore */ glue.href)).default;
  } catch (e) {
    throw new Error(`${where}: cannot load ${variant.file}.js, the glue of the ` +
      `${build} build, from ${glue} (${e?.message ?? e}); serve the package's dist/ ` +
      `next to its src/${inViteDeps ? `, or ${VITE_EXCLUDE}` : ''}`, { cause: e });
  }
  // The workers import the glue from where it was found (emcc's
  // mainScriptUrlOrBlob), not from next to their own script, which a
  // bundler may have renamed.
  const workers = threads > 1
    ? prepareWorkers(threads - 1, fromViteDeps(variant.worker())) : undefined;
  try {
    const wasm = await startBuild(factory, compiling,
      workers && { ...workers.hooks, mainScriptUrlOrBlob: glue.href });
    if (wasm.build() !== build) {
      throw new Error(`${where}: ${file} is the ${wasm.build()} build, not the ${build} ` +
        'build; the files in dist/ are mixed up');
    }
    return { wasm, workers };
  } catch (e) {
    workers?.end();
    throw e;
  }
}
