// Type definitions for simd-attention, hand-written; the implementation is
// index.js and src/ over the Embind glue in dist/. The declarations live in
// types/, a file per area (types/README.md); this file exports them all.
// tests/types checks them against the code (`npm run test:types`): the
// option keys the JS accepts, and a typed use of every declaration.

export * from './types/module.js';
export { createAttentionModule as default } from './types/module.js';
export * from './types/tensors.js';
export * from './types/attention.js';
export * from './types/caches.js';
export * from './types/layers.js';
export * from './types/blocks.js';
export * from './types/scaled-dot-product-attention.js';
export * from './types/pool.js';
export * from './types/checkpoints.js';
export * from './types/pretrained.js';
export * from './types/training.js';
export * from './types/tiny-model.js';
