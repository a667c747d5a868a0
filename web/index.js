// simd-attention: multi-head attention as SIMD C++ kernels compiled to
// WebAssembly. This is the package's entry: the feature probes
// (src/features.js) and createAttentionModule, which picks and loads one of
// the wasm builds (dist/) and hands out the classes and functions of src/
// bound to it. They check what is cheap and JS-specific (types, disposed
// objects) and forward to the Embind glue (bindings/ in the repository),
// which checks shapes and values in C++ and returns every failure as a value
// that is thrown as a JS error (src/errors.js). Types and documentation:
// index.d.ts.

import { makeTransformerBlock, makeTransformerStack } from './src/blocks.js';
import { createModule } from './src/create-module.js';
import { registerPoolParts } from './src/pool-parts.js';
import { makeDecoderLayer, makeEncoderLayer } from './src/layers.js';
import { fromPretrained } from './src/pretrained.js';
import { makeTinyTransformer } from './src/tiny-model.js';
import { makeOptimizers } from './src/training.js';

// The main entry's module: the attention entry's members (src/create-module.js),
// the layers, blocks and stacks, the training build's classes and
// fromPretrained, on the builds that bind them all.
export async function createAttentionModule(options = {}) {
  return createModule(options, {
    options: 'AttentionModuleOptions',
    members: (wasm, reclaimer, backend, kv, module) => ({
      TransformerEncoderLayer: makeEncoderLayer(wasm, reclaimer, backend),
      TransformerDecoderLayer: makeDecoderLayer(wasm, reclaimer, backend, kv),
      TransformerBlock: makeTransformerBlock(wasm, reclaimer, backend, kv),
      TransformerStack: makeTransformerStack(wasm, reclaimer, backend, kv),
      ...makeOptimizers(wasm, reclaimer),
      TinyTransformer: makeTinyTransformer(wasm, reclaimer, backend),
      fromPretrained: (config, file, fromOptions) =>
        fromPretrained(module(), config, file, fromOptions),
    }),
    ready: registerPoolParts,
  });
}

export default createAttentionModule;

export { wasmRelaxedSimdSupported, wasmSimdSupported } from './src/features.js';

export { createAttentionPool } from './src/pool.js';
export { loadCheckpoint } from './src/checkpoint-mapping.js';
export { parseSafetensors, readSafetensors, SafetensorsFile } from './src/safetensors.js';
