// simd-attention/attention: the package's attention entry, for a page that
// runs attention alone. Its createAttentionModule has MultiHeadAttention (its
// KV caches and precomputed keys and values), attention() and the module
// functions, and loads the builds that bind only those (dist/*_mha.wasm,
// about a third smaller) where one fits the options: one thread, WebAssembly
// SIMD, the highway backend. Elsewhere it loads the main entry's build,
// which binds them too. Types and documentation: attention.d.ts.

import { ATTENTION_BUILDS } from './src/attention-builds.js';
import { createModule } from './src/create-module.js';

export async function createAttentionModule(options = {}) {
  return createModule(options, {
    options: 'AttentionEntryOptions',
    builds: ATTENTION_BUILDS,
    members: () => ({}),
  });
}

export default createAttentionModule;

export { wasmRelaxedSimdSupported, wasmSimdSupported } from './src/features.js';
