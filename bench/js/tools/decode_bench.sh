#!/usr/bin/env bash
# D1 through the C++ API's KV cache (bench/js/native/decode_bench.cc),
# natively and in wasm-simd128, with the same weights and inputs as
# `npm run bench`'s D1 (which builds and runs the same; this runs it alone).
# A preview until the JS package exposes the KV cache.
#   bash bench/js/tools/decode_bench.sh [--build-only]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
cd "$ROOT"
source scripts/env.sh
out=build/bench-js
data="$out/d1-data"
for lib in build/native/src/libsimd_attention.a build/wasm/src/libsimd_attention.a; do
  [ -f "$lib" ] || { echo "missing $lib: bash scripts/build.sh native wasm" >&2; exit 1; }
done
hwy_libs=$(pkg-config --libs libhwy)
g++ -O3 -std=c++20 -I . -I src -I src/include bench/js/native/decode_bench.cc build/native/src/libsimd_attention.a \
  $hwy_libs -o "$out/decode_bench"
em++ -O3 -std=c++20 -msimd128 -fwasm-exceptions -I . -I src -I src/include -isystem build/wasm/system-headers \
  bench/js/native/decode_bench.cc build/wasm/src/libsimd_attention.a \
  -sALLOW_MEMORY_GROWTH=1 -sWASM_ASYNC_COMPILATION=0 -sNODERAWFS=1 -fwasm-exceptions --profiling-funcs \
  -o "$out/decode_bench.js"
[ "${1:-}" = --build-only ] && exit 0
mkdir -p "$data"
node -e 'import("./bench/js/decode_preview.js").then((m) => m.writeDecodeData(process.argv[1]))' "$data"
echo "native: $("$out/decode_bench" "$data")"
echo "wasm:   $(node "$out/decode_bench.js" "$data")"
