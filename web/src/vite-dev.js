// The package under Vite's dev server, whose dependency optimizer moves the
// package's modules into one file of node_modules/.vite/deps/: a URL made
// relative to import.meta.url there points into node_modules/.vite/, where
// nothing of the package is. The server still serves the package's own
// files from node_modules/simd-attention/ when the app's node_modules holds
// the package; elsewhere (a workspace's node_modules above the app) the
// package must be kept out of the optimizer (VITE_EXCLUDE).

// Whether this module runs from the optimizer's output.
export const inViteDeps = /\/node_modules\/\.vite\//.test(import.meta.url);

// Where the dev server serves the package's file `file` (its path in the
// package, such as 'src/pool-worker.js'), for a module in inViteDeps.
export function fromPackage(file) {
  const nodeModules = /^(.*\/node_modules\/)\.vite\//.exec(import.meta.url)[1];
  return new URL(`${nodeModules}simd-attention/${file}`);
}

// The fix to name where the package's files cannot be found under Vite.
export const VITE_EXCLUDE = "with Vite's dev server, keep the package out of its dependency " +
  "optimizer instead: optimizeDeps: { exclude: ['simd-attention'] } in vite.config";
