// The package under test, straight from web/ (the packaging test imports it
// by name from an installed tarball instead).
import { createAttentionModule as createModule } from '../../../web/index.js';

export * from '../../../web/index.js';

// Every module a test file makes is disposed after the file's tests, which
// frees whatever object a test left undisposed then rather than at a later
// garbage collection, whose warning would reach the console of a file that
// has ended (Jest counts that as a failure of the whole run).
const modules = [];
export async function createAttentionModule(options) {
  const module = await createModule(options);
  modules.push(module);
  return module;
}
afterAll(() => {
  for (const module of modules.splice(0)) module.dispose();
});

// One module per build, shared by the tests of a file. Each is forced, so a
// build the engine cannot run fails the tests instead of being left out: the
// relaxed-SIMD one needs `npm run test:js`, which starts node with
// --experimental-wasm-relaxed-simd where the node needs it (Node 20). All
// are the single-thread builds (threads.test.mjs tests the threaded ones).
export async function loadBuilds() {
  const [relaxed, simd, nosimd] = await Promise.all([
    createAttentionModule({ relaxedSimd: true, threads: 1 }),
    createAttentionModule({ simd: true, relaxedSimd: false, threads: 1 }),
    createAttentionModule({ simd: false }),
  ]);
  return { relaxed, simd, nosimd };
}

// [build, backend, module] for every backend of every build of `builds`
// (loadBuilds'): the rows of a file's test.each.
export function backendMatrix(builds) {
  return Object.entries(builds).flatMap(([build, module]) =>
    module.backends.map((backend) => [build, backend, module]));
}

// Symbol.dispose where the engine has it; else the Symbol.for() key that
// polyfills use (Node 20 defines Symbol.dispose in its main realm only, not
// in the vm contexts Jest runs tests in).
export const disposeSymbol = Symbol.dispose ?? Symbol.for('Symbol.dispose');

// Runs fn(object) and disposes of the object whatever happens, the way a
// `using` declaration would (Node 20 does not parse `using` yet).
export function disposing(object, fn) {
  try {
    return fn(object);
  } finally {
    object[disposeSymbol]();
  }
}

export function withMha(module, config, fn) {
  return disposing(new module.MultiHeadAttention(config), fn);
}

// Objects disposed after each test of the file that imports this.
const tracked = [];
export function track(object) {
  tracked.push(object);
  return object;
}
afterEach(() => {
  while (tracked.length) tracked.pop().dispose();
});
