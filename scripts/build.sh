#!/usr/bin/env bash
# Builds every tree: native (tests, benchmarks), the ASan/UBSan test build,
# wasm with SIMD, wasm with SIMD and relaxed SIMD's FMA, and wasm without SIMD
# (tests under node, the npm package's modules), then copies the three
# package modules into web/dist/.
# Usage: scripts/build.sh [native|sanitize|tsan|fuzz|wasm|wasm-relaxed|wasm-nosimd|
#                          wasm-threads|wasm-relaxed-threads|wasm-training|package]...
# SA_BUILD_FOR=test (scripts/test.sh) leaves out what no test runs: the wasm
# trees' benchmark programs (the native tree still compiles every benchmark).
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
build_wasm() {  # $1 = build dir, $2 = ON/OFF for wasm-simd128, $3 = ON/OFF for relaxed SIMD, $4... = more CMake options
  # ctest runs the wasm tests with plain node (emcmake's default emulator
  # adds --experimental-wasm-threads, which node 20 rejects: "bad option"),
  # the relaxed tree's through scripts/node-wasm.sh, which adds
  # --experimental-wasm-relaxed-simd where the node has it (Node 20).
  local emulator
  emulator="$(command -v node)"
  if [ "$3" = ON ]; then emulator="$PWD/scripts/node-wasm.sh"; fi
  emcmake cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DSA_WASM_SIMD="$2" \
    -DSA_WASM_RELAXED="$3" -DCMAKE_CROSSCOMPILING_EMULATOR="$emulator" "${@:4}" >/dev/null
  # npm test needs the tests and the package's module, not the wasm benchmarks.
  local targets=(all)
  if [ -n "${target:-}" ]; then targets=("$target")
  elif [ "${SA_BUILD_FOR:-}" = test ]; then targets=(sa_tests sa_js_modules); fi
  cmake --build "$1" -j"$jobs" --target "${targets[@]}"
}
# The plain SIMD build's module carries highway and xsimd; the relaxed-SIMD
# one highway only (26 kB less .wasm for the page Chromium loads by
# default; its tree's tests and benchmarks keep xsimd, src/CMakeLists.txt),
# so createAttentionModule({ backend: 'xsimd' }) loads the SIMD build. The
# scalar backend (10.6 kB) is the non-SIMD build's, where
# createAttentionModule({ backend: 'scalar' }) goes. The threaded builds: -pthread and the highway backend only (threads add
# about 19 kB of wasm; with xsimd and scalar it would be about 217 kB); only the
# package's module (the C++ tests run in the other trees, and Jest compares
# this module with the single-thread builds).
build_wasm_threads() {  # $1 = build dir, $2 = ON/OFF for relaxed SIMD
  target=sa_js_module build_wasm "$1" ON "$2" -DSA_WASM_THREADS=ON -DSA_WITH_XSIMD=OFF \
    -DSA_WITH_SCALAR=OFF -DSA_BUILD_TESTS=OFF
}
# The training build: SIMD, highway only (as the threaded builds, for size),
# with the backward passes and the optimizers; only the package's module (the
# C++ tests of training run in the other trees).
build_wasm_training() {
  target=sa_js_module build_wasm build/wasm-training ON OFF -DSA_WASM_TRAINING=ON \
    -DSA_WITH_XSIMD=OFF -DSA_WITH_SCALAR=OFF -DSA_BUILD_TESTS=OFF
}
# ThreadSanitizer over the tests of the threaded paths.
# Both trees test what every kernel table shares (the thread pool and splits;
# the API's checks), so they compile one table of each backend they keep:
# Highway's static target, the scalar one; no xsimd.
build_tsan() {
  cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSA_TSAN=ON \
    -DSA_HIGHWAY_STATIC_ONLY=ON -DSA_WITH_XSIMD=OFF >/dev/null
  cmake --build build/tsan -j"$jobs" --target threads_test
}
# The libFuzzer target over the C++ API (tests/fuzz/), instrumented with
# clang's ASan + UBSan; scripts/fuzz.sh runs it.
build_fuzz() {
  CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSA_FUZZ=ON -DSA_BUILD_TESTS=OFF -DSA_HIGHWAY_STATIC_ONLY=ON -DSA_WITH_XSIMD=OFF >/dev/null
  cmake --build build/fuzz -j"$jobs" --target api_fuzzer
}
# The npm package's wasm files (bindings/, one per wasm tree) -> web/dist/.
package_web() {
  local dist=web/dist tree name f
  mkdir -p "$dist"
  for tree in wasm:simd_attention_simd wasm-relaxed:simd_attention_relaxed \
              wasm-nosimd:simd_attention_nosimd wasm-threads:simd_attention_simd_threads \
              wasm-relaxed-threads:simd_attention_relaxed_threads \
              wasm-training:simd_attention_training; do
    name=${tree#*:}
    for f in "build/${tree%%:*}/bindings/$name".{js,wasm} \
             $([[ $name == *_threads ]] && echo "build/${tree%%:*}/bindings/$name.worker.js") \
             $([[ $name == *_simd || $name == *_relaxed ]] &&
               echo "build/${tree%%:*}/bindings/${name}_mha".{js,wasm}); do
      [ -f "$f" ] || { echo "build: $f missing (build the ${tree%%:*} tree first)" >&2; exit 1; }
      cp "$f" "$dist/"
    done
  done
  # The glue minified, and the modules bundled for pages without a bundler.
  node scripts/bundle_web.mjs "$dist"
  ls -l "$dist"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(native sanitize tsan fuzz wasm wasm-relaxed wasm-nosimd
  wasm-threads wasm-relaxed-threads wasm-training package)
for t in "${targets[@]}"; do
  echo "build: $t"
  tree_started=$SECONDS
  case "$t" in
    native) build_native ;;
    sanitize) build_sanitize ;;
    tsan) build_tsan ;;
    fuzz) build_fuzz ;;
    wasm) build_wasm build/wasm ON OFF -DSA_WITH_SCALAR=OFF ;;
    wasm-relaxed) build_wasm build/wasm-relaxed ON ON -DSA_WITH_SCALAR=OFF -DSA_JS_MODULE_XSIMD=OFF ;;
    wasm-nosimd) build_wasm build/wasm-nosimd OFF OFF ;;
    wasm-threads) build_wasm_threads build/wasm-threads OFF ;;
    wasm-relaxed-threads) build_wasm_threads build/wasm-relaxed-threads ON ;;
    wasm-training) build_wasm_training ;;
    package) package_web ;;
    *) echo "build: unknown tree '$t'" >&2; exit 2 ;;
  esac
  echo "build: $t took $((SECONDS - tree_started)) s"
done
