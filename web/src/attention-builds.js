// The attention entry's own builds (../attention.js): the SIMD and
// relaxed-SIMD builds of one thread that bind attention alone,
// dist/<file>_mha.{js,wasm}, highway only. Apart from loader.js's BUILDS so
// that only the attention entry names them: a bundler emits a file that a
// literal `new URL(..., import.meta.url)` names, and an app of the main
// entry has no use for these.
export const ATTENTION_BUILDS = {
  'relaxed-simd': {
    file: 'simd_attention_relaxed_mha',
    glue: () => new URL('../dist/simd_attention_relaxed_mha.js', import.meta.url),
    wasm: () => new URL('../dist/simd_attention_relaxed_mha.wasm', import.meta.url),
  },
  simd: {
    file: 'simd_attention_simd_mha',
    glue: () => new URL('../dist/simd_attention_simd_mha.js', import.meta.url),
    wasm: () => new URL('../dist/simd_attention_simd_mha.wasm', import.meta.url),
  },
};
