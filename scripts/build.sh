#!/usr/bin/env bash
# Builds every tree: native (tests, benchmarks), the ASan/UBSan test build,
# wasm with SIMD and wasm without SIMD (tests under node, the npm package's
# modules). Usage: scripts/build.sh [native|sanitize|wasm|wasm-nosimd]...
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

jobs=$(nproc)
build_native() {
  cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build/native -j"$jobs"
}
build_sanitize() {
  cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSA_SANITIZE=ON >/dev/null
  cmake --build build/sanitize -j"$jobs" --target sa_tests
}
build_wasm() {  # $1 = build dir, $2 = ON/OFF for wasm-simd128
  emcmake cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DSA_WASM_SIMD="$2" \
    >/dev/null
  cmake --build "$1" -j"$jobs"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(native sanitize wasm wasm-nosimd)
for t in "${targets[@]}"; do
  echo "build: $t"
  case "$t" in
    native) build_native ;;
    sanitize) build_sanitize ;;
    wasm) build_wasm build/wasm ON ;;
    wasm-nosimd) build_wasm build/wasm-nosimd OFF ;;
    *) echo "build: unknown tree '$t'" >&2; exit 2 ;;
  esac
done
