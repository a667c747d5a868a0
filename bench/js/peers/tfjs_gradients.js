// tfjs's own gradients for tf.grads / tf.variableGrads. tfjs-core's Node
// bundle (what `import '@tensorflow/tfjs-core'` loads) registers none: the
// @tensorflow/tfjs union imports tfjs-core/dist/register_all_gradients.js,
// an ES module tree with extensionless imports in a package without
// "type": "module", which Node cannot load as it is. This file is also the
// module hook (module.register) that loads that tree as ES modules. Its ops
// share the bundle's engine and registries (tfjs keeps them on globalThis),
// so the gradients run on the wasm backend set up in tfjs.js.
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import { once, packageDir } from './loading.js';

const DIST = '/@tensorflow/tfjs-core/dist/';

// Hook: `./x` inside tfjs-core/dist is `./x.js`.
export async function resolve(specifier, context, next) {
  if (context.parentURL?.includes(DIST) && specifier.startsWith('.') && !specifier.endsWith('.js')) {
    return next(`${specifier}.js`, context);
  }
  return next(specifier, context);
}

// Hook: tfjs-core/dist's files, but for the Node bundle, are ES modules.
export async function load(url, context, next) {
  if (url.includes(DIST) && url.endsWith('.js') && !url.endsWith('/tf-core.node.js')) {
    return next(url, { ...context, format: 'module' });
  }
  return next(url, context);
}

/** Registers tfjs-core's gradients, once. */
export const registerTfjsGradients = once(async () => {
  register(import.meta.url);
  await import(pathToFileURL(`${packageDir('@tensorflow/tfjs-core')}register_all_gradients.js`).href);
});
