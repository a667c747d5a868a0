#!/usr/bin/env bash
# node with the WebAssembly features of this project's builds switched on:
#   bash scripts/node-wasm.sh [node options] script [arguments]
# Relaxed SIMD (the wasm-relaxed build, scripts/wasm_relaxed_opcodes.mjs)
# sits behind --experimental-wasm-relaxed-simd in Node 20 (V8 11.3) and is
# on by default from Node 22. The flag is added only when this node lists
# it, so the same command keeps working once a node drops the flag (V8
# rejects options it does not know).
# Used by ctest in build/wasm-relaxed (CMAKE_CROSSCOMPILING_EMULATOR), by
# `npm run test:js` / `test:browser` and by scripts/bench.sh.
set -euo pipefail
flags=()
case "$(node --v8-options)" in
  *--experimental-wasm-relaxed-simd*) flags+=(--experimental-wasm-relaxed-simd) ;;
esac
exec node "${flags[@]}" "$@"
