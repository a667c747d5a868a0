#!/usr/bin/env bash
# Linker launcher of the relaxed-SIMD wasm tree (CMake's
# CXX_LINKER_LAUNCHER, set by -DSA_WASM_RELAXED=ON): runs the link command it
# is given, then rewrites the pre-standard relaxed fma of the linked .wasm
# (scripts/wasm_relaxed_opcodes.mjs). If the rewrite fails, the link's
# outputs are deleted, so the build fails now and relinks next time instead
# of leaving a binary that engines reject.
#   bash scripts/wasm_link_relaxed.sh em++ ... -o NAME.js ...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$@"
out=
prev=
for arg in "$@"; do
  [ "$prev" = -o ] && out="$arg"
  prev="$arg"
done
[ -n "$out" ] || { echo "wasm_link_relaxed: no '-o FILE' in the link command: $*" >&2; exit 1; }
wasm="${out%.*}.wasm"
if ! bash "$here/node-wasm.sh" "$here/wasm_relaxed_opcodes.mjs" "$wasm"; then
  rm -f -- "$out" "$wasm"
  exit 1
fi
