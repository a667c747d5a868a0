// This package (web/, imported from the repository, not from npm): the wasm
// SIMD build with each of its backends and the non-SIMD build.
import { createAttentionModule } from '../../../web/index.js';

const modules = new Map();

/** The module of one build (simd: true/false), created once per process. */
export async function oursModule(simd) {
  if (!modules.has(simd)) modules.set(simd, createAttentionModule({ simd }));
  return modules.get(simd);
}

/** The variants to run: every backend of the SIMD build, then the non-SIMD build's default. */
export async function oursVariants() {
  const simdModule = await oursModule(true);
  const variants = simdModule.backends.map((backend) => ({ simd: true, backend }));
  const nosimd = await oursModule(false);
  variants.push({ simd: false, backend: nosimd.backend });
  return variants;
}

export function variantName({ simd, backend }) {
  return simd ? `ours wasm-simd ${backend}` : `ours wasm no-SIMD (${backend})`;
}

export async function createOurs(data, variant) {
  const mod = await oursModule(variant.simd);
  const { d, heads, tq, tk, cross, causal } = data;
  const mha = new mod.MultiHeadAttention({ dModel: d, numHeads: heads, backend: variant.backend });
  mha.setWeights({
    wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
    bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo,
  });
  const query = { data: data.xq, shape: [1, tq, d] };
  const kv = cross ? { data: data.xkv, shape: [1, tk, d] } : undefined;
  const options = { causal };
  return {
    name: variantName(variant),
    kernels: mha.kernels,
    run() {
      return mha.forward(query, kv, undefined, options).output.data;
    },
    memoryStats: () => mod.memoryStats(),
    dispose() {
      mha.dispose();
    },
  };
}
