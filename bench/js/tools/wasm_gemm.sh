#!/usr/bin/env bash
# Builds and runs bench/js/native/wasm_gemm_bench.cc: the GEMM and attention of every kernel
# table of the wasm SIMD build, timed inside wasm under node, between two
# runs of fma_peak (its muladd128 is the roof of wasm-simd128 code here).
#   bash bench/js/tools/wasm_gemm.sh [BUILD_TREE [gemm|attention|forward|all [TABLE]]]
# (default build/wasm, all, every table; build/wasm-relaxed: relaxed SIMD's
# fma, rewritten to the standard opcode, node with the relaxed flag where it
# needs it). The workloads come from the tree's bench/workloads.inc, which
# CMake generates from web/bench-kit/workloads.json. The same source builds
# natively:
#   g++ -O2 -std=c++20 -I src -I src/include -I . -I build/native/bench/generated \
#     bench/js/native/wasm_gemm_bench.cc build/native/src/libsimd_attention.a \
#     -lhwy -o build/bench-js/gemm_bench
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$ROOT"
source scripts/env.sh
tree="${1:-build/wasm}"
[ -f "$tree/src/libsimd_attention.a" ] || { echo "no $tree/src/libsimd_attention.a: bash scripts/build.sh wasm" >&2; exit 1; }
[ -f "$tree/bench/generated/bench/workloads.inc" ] || { echo "no $tree/bench/generated/bench/workloads.inc: configure $tree again (bash scripts/build.sh wasm)" >&2; exit 1; }
relaxed=()
grep -qs '^SA_WASM_RELAXED:BOOL=ON' "$tree/CMakeCache.txt" && relaxed=(-mrelaxed-simd)
out="build/bench-js/wasm_gemm_bench-$(basename "$tree").js"
mkdir -p build/bench-js
em++ -O3 -std=c++20 -msimd128 "${relaxed[@]}" -fwasm-exceptions -I src -I src/include -I . -I "$tree/bench/generated" \
  bench/js/native/wasm_gemm_bench.cc "$tree/src/libsimd_attention.a" \
  -sALLOW_MEMORY_GROWTH=1 -sWASM_ASYNC_COMPILATION=0 -fwasm-exceptions \
  -o "$out"
[ ${#relaxed[@]} -eq 0 ] || bash scripts/node-wasm.sh scripts/wasm_relaxed_opcodes.mjs "${out%.js}.wasm" >&2
[ -x build/bench-js/fma_peak ] || cc -O2 -Wall -o build/bench-js/fma_peak bench/js/native/fma_peak.c
build/bench-js/fma_peak
bash scripts/node-wasm.sh "$out" "${@:2}"
build/bench-js/fma_peak
