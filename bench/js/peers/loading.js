// What the peers' loaders share: each package is imported and set up once,
// however many workloads ask for it, and its .wasm files are served from the
// installed package (never a CDN).
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

// The folder of the installed package `name`'s entry point, with a trailing
// slash, as the wasm path settings want it.
export function packageDir(name) {
  return path.dirname(require.resolve(name)) + '/';
}

// A function that runs async `setup` on its first call and returns that same
// promise on every call after.
export function once(setup) {
  let promise = null;
  return () => (promise ??= setup());
}
