// Type definitions for simd-attention/attention (attention.js), the entry for
// a page that runs attention alone: its module has MultiHeadAttention, its
// caches, attention() and the module functions. The declarations are those
// of the main entry (index.d.ts), in types/.

import type { AttentionEntryOptions, AttentionOnlyModule } from './types/module.js';

export type {
  AttentionEntryOptions, AttentionOnlyModule, BackendName, BuildName, BytesByCacheType,
  BytesByWeightType, MemoryStats, ModuleChoices, URLLike,
} from './types/module.js';
export { wasmRelaxedSimdSupported, wasmSimdSupported } from './types/module.js';
export * from './types/tensors.js';
export * from './types/attention.js';
export * from './types/caches.js';
export * from './types/scaled-dot-product-attention.js';

/**
 * Loads a wasm build (the fastest the engine runs) and resolves to a module
 * whose `MultiHeadAttention` and `attention()` run on it: the build binding
 * attention alone where one fits the options (one thread, WebAssembly SIMD,
 * the highway backend), the main entry's otherwise. Each call instantiates a
 * separate wasm instance with its own heap. Rejects as the main entry's
 * `createAttentionModule` does.
 */
export function createAttentionModule(options?: AttentionEntryOptions):
  Promise<AttentionOnlyModule>;
export default createAttentionModule;
