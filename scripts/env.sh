# shellcheck shell=bash
# Source me:  . scripts/env.sh
# Sets up the Emscripten environment for this shell only (nothing global).
#
# NODE_PATH: Debian's emcc runs its JS optimizer (tools/acorn-optimizer.js,
#   used at -O1 and above) with /usr/bin/node, which here is nodesource's node,
#   not Debian's, so it does not look in /usr/share/nodejs where the
#   node-acorn package puts acorn. Without this, any `emcc -O2 ...` link fails
#   with "acorn-optimizer.js ... failed (returned 1)".
#
# EM_CACHE: deliberately NOT set on Debian. The emscripten package ships a
#   prebuilt system-library cache in /usr/share/emscripten/cache and its config
#   (/usr/share/emscripten/.emscripten) says FROZEN_CACHE = True, so emcc never
#   writes to the cache (works as non-root too; checked as `nobody`). Pointing
#   EM_CACHE elsewhere would point it at an empty cache that it is not allowed
#   to fill, and every link would fail. We only set EM_CACHE (to build/em-cache)
#   for a non-frozen emscripten whose cache dir is not writable (e.g. an emsdk
#   installed by another user), and never override a caller's EM_CACHE.
#
# Known pitfall (not fixable from the environment without side effects):
#   emscripten 3.1.6 output run under Node >= 18 fails with
#   "TypeError: Failed to parse URL from /path/x.wasm", because the generated
#   loader uses the global fetch() (new in Node 18) on a plain file path.
#   Fixes, pick one per target:
#     - link with -sWASM_ASYNC_COMPILATION=0 (sync instantiate, no fetch), or
#     - link with -sSINGLE_FILE=1 (wasm embedded as a data: URI), or
#     - with -sMODULARIZE, pass {wasmBinary: fs.readFileSync(wasmPath)} to the
#       factory when running under Node (cleanest for the npm package), or
#     - run node with --no-experimental-fetch (also via NODE_OPTIONS).
#   Chromium loading over http:// is unaffected.

_sa_env_src="${BASH_SOURCE[0]:-$0}"
SA_REPO_ROOT="$(cd "$(dirname "$_sa_env_src")/.." && pwd)"
export SA_REPO_ROOT
unset _sa_env_src

case ":${NODE_PATH:-}:" in
  *:/usr/share/nodejs:*) ;;
  *) export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}" ;;
esac

if [ -z "${EM_CACHE:-}" ] && command -v emcc >/dev/null 2>&1; then
  _sa_em_root="$(dirname "$(readlink -f "$(command -v emcc)")")"
  if [ -d "$_sa_em_root/cache" ] && [ ! -w "$_sa_em_root/cache" ] &&
     ! grep -qs '^FROZEN_CACHE *= *True' "$_sa_em_root/.emscripten"; then
    export EM_CACHE="$SA_REPO_ROOT/build/em-cache"
  fi
  unset _sa_em_root
fi
