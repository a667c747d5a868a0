// This package (web/index.js): the wasm SIMD build with each of its
// backends, the relaxed-SIMD build with its backend, and the
// non-SIMD build, as benchmark implementations.
// Under Node, SA_BENCH_WEB_DIR points at another copy of web/ (e.g. a
// snapshot, so that a rebuild of web/dist during a long run cannot mix two
// builds). Also runs in the demos' benchmark worker: no static node:
// imports, and `process` only where it exists.
let pkgPromise = null;
export function loadPackage() {
  const dir = globalThis.process?.env?.SA_BENCH_WEB_DIR;
  pkgPromise ??= dir
    ? import('node:url').then(({ pathToFileURL }) => import(pathToFileURL(`${dir}/index.js`).href))
    : import('../index.js');
  return pkgPromise;
}
async function createAttentionModule(options) {
  return (await loadPackage()).createAttentionModule(options);
}

const modules = new Map();

/**
 * The module of one build, created once per process: the SIMD build
 * (simd: true), the non-SIMD build (false) or, with relaxed: true, the
 * relaxed-SIMD build; on `threads` threads (1: the single-thread builds,
 * which every implementation of the main table runs on).
 */
export async function oursModule(simd, relaxed = false, threads = 1) {
  const key = `${relaxed ? 'relaxed' : simd}/${threads}`;
  if (!modules.has(key)) {
    const build = relaxed ? { relaxedSimd: true } : { simd, relaxedSimd: false };
    modules.set(key, createAttentionModule({ ...build, threads }).then(async (sa) => {
      await sa.threadsReady; // timed on all its threads
      return sa;
    }));
  }
  return modules.get(key);
}

// The relaxed build's backends: highway, the default (it changes only the
// vector layers' multiply-add; the package's relaxed build leaves xsimd out
// for size).
export const RELAXED_BACKENDS = ['highway'];

/**
 * The variants to run: every backend of the SIMD build, the relaxed-SIMD
 * build's, then every backend of the non-SIMD build (the scalar baseline,
 * which the SIMD builds leave out, is there).
 */
export async function oursVariants() {
  const simdModule = await oursModule(true);
  const variants = simdModule.backends.map((backend) => ({ simd: true, backend }));
  for (const backend of RELAXED_BACKENDS) variants.push({ simd: true, relaxed: true, backend });
  const nosimd = await oursModule(false);
  for (const backend of nosimd.backends) variants.push({ simd: false, backend });
  return variants;
}

// A variant may hold its weights (and KV cache) in a storage type:
// `weights` 'f16' | 'bf16' | 'int8' and `cacheType` 'f16' | 'bf16' | 'int8'
// (the package's config options; float32 when absent), the cache's type named.
export function variantName({ simd, relaxed, backend, threads = 1, weights, cacheType }) {
  const on = threads > 1 ? `, ${threads} threads` : '';
  const stored = weights ? `, ${weights} weights${cacheType ? `+${cacheType} cache` : ''}` : '';
  if (relaxed) return `ours wasm-relaxed ${backend}${on}${stored}`;
  return simd ? `ours wasm-simd ${backend}${on}${stored}` : `ours wasm no-SIMD (${backend})${stored}`;
}

export async function createOurs(data, variant) {
  if (variant.relaxed && !(await loadPackage()).wasmRelaxedSimdSupported()) {
    const e = new Error('n/a (no relaxed SIMD: Node 20 needs --experimental-wasm-relaxed-simd)');
    e.notAvailable = true;
    throw e;
  }
  const mod = await oursModule(variant.simd, variant.relaxed, variant.threads ?? 1);
  const { d, heads, tq, tk, cross, causal, cacheLen } = data;
  const mha = new mod.MultiHeadAttention({ dModel: d, numHeads: heads, backend: variant.backend,
    weights: variant.weights, cacheType: variant.cacheType });
  mha.setWeights({
    wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
    bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo,
  });
  const common = {
    name: variantName(variant),
    kernels: mha.kernels,
    memoryStats: () => mod.memoryStats(),
  };
  if (cacheLen > 0) {
    // Decode step: the cache holds the projected keys/values of cacheLen
    // tokens (prefilled once); each call projects the new token, attends over
    // cacheLen + 1 keys, then truncates the cache back (included in the time).
    if (typeof mha.createKVCache !== 'function') {
      mha.dispose();
      const e = new Error('n/a (KV cache pending)');
      e.notAvailable = true;
      throw e;
    }
    const cache = mha.createKVCache({ batch: 1, maxLength: cacheLen + 1 });
    mha.forwardIncremental({ data: data.xpast, shape: [1, cacheLen, d] }, cache);
    const x = { data: data.xq, shape: [1, 1, d] };
    return {
      ...common,
      run() {
        const out = mha.forwardIncremental(x, cache).output.data;
        cache.truncate(cacheLen);
        return out;
      },
      dispose() {
        cache.dispose();
        mha.dispose();
      },
    };
  }
  const query = { data: data.xq, shape: [1, tq, d] };
  const kv = cross ? { data: data.xkv, shape: [1, tk, d] } : undefined;
  const options = { causal };
  return {
    ...common,
    run() {
      return mha.forward(query, kv, undefined, options).output.data;
    },
    dispose() {
      mha.dispose();
    },
  };
}
