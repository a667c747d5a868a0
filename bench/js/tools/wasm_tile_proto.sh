#!/usr/bin/env bash
# Builds and runs bench/js/native/wasm_tile_proto.c (see its header) next to
# fma_peak's roofs: prints GFLOP/s of 4x2, 5x2 and 6x2 tiles with mul+add
# and with relaxed-SIMD FMA, for M=120, K=N=768.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$ROOT"
source scripts/env.sh
out=build/bench-js
mkdir -p "$out"
emcc -O3 -msimd128 -mrelaxed-simd -DUSE_FMA bench/js/native/wasm_tile_proto.c \
  -sWASM_ASYNC_COMPILATION=0 -sALLOW_MEMORY_GROWTH=1 -o "$out/wasm_tile_proto.js"
node -e '
const fs = require("fs"); const f = process.argv[1]; const b = fs.readFileSync(f); let n = 0;
for (let i = 0; i + 2 < b.length; i++) if (b[i] === 0xfd && b[i + 1] === 0xaf && b[i + 2] === 0x01) { b[i + 1] = 0x85; b[i + 2] = 0x02; n++; }
fs.writeFileSync(f, b); console.error(`rewrote ${n} relaxed fma opcodes`);' "$out/wasm_tile_proto.wasm"
[ -x "$out/fma_peak" ] || cc -O2 -Wall -o "$out/fma_peak" bench/js/native/fma_peak.c
"$out/fma_peak"
node --experimental-wasm-relaxed-simd "$out/wasm_tile_proto.js"
