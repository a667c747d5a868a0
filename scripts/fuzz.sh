#!/usr/bin/env bash
# Runs the fuzzers for a bounded time (tests/fuzz/README.md): the libFuzzer
# target over the C++ API (tests/fuzz/api_fuzzer.cc) and, beside it, the
# randomized fuzz of the package's JS (tests/fuzz/js/): its checkpoint
# reading, then the pool's argument path, half of js-seconds each.
# `npm test` runs them for 60 s and 30 s; by hand, longer:
#   scripts/fuzz.sh [seconds] [js-seconds]   (default 60 30; build first:
#   scripts/build.sh fuzz package, and scripts/setup.sh for tests/fuzz/js)
# New C++ inputs go to build/fuzz/corpus (not committed); tests/fuzz/seeds/
# is read as well. A crash leaves its input in build/fuzz/; a JS failure
# prints its input and the SEED that repeats the run. Either exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
js_seconds="${2:-30}"
mkdir -p build/fuzz/corpus
# Each fuzzer is one process: the JS ones run on the other core meanwhile,
# one after the other, each under a heap limit (unbounded memory is an
# out-of-memory exit; the pool's workers have heaps of their own) and a
# wall-clock limit (a hang is killed), both failures. Prints a FAILED line
# for each that fails, and returns the last failure's status.
js_fuzzers() {
  local status=0 code name part
  for name in checkpoints pool-arguments; do
    part=$((js_seconds / 2))
    [ "$name" = checkpoints ] || part=$((js_seconds - js_seconds / 2))
    code=0
    timeout "$((part + 90))" bash scripts/node-wasm.sh --max-old-space-size=1024 \
      "tests/fuzz/js/$name.fuzz.mjs" "$part" || code=$?
    if [ "$code" -ne 0 ]; then
      echo "fuzz: $name FAILED (exit $code$([ "$code" -eq 124 ] && echo ': timed out'))"
      status=$code
    fi
  done
  return "$status"
}
js_log=build/fuzz/js-last-run.log
js_fuzzers >"$js_log" 2>&1 &
js_fuzz=$!
echo "fuzz: api_fuzzer for ${seconds} s, checkpoints and pool arguments (JS) for" \
  "${js_seconds} s in all beside it"
# -rss_limit_mb: no single input may need more than 2 GiB (the target keeps
# valid requests small); -timeout: one input may run 20 s under ASan.
log=build/fuzz/last-run.log
status=0
build/fuzz/tests/fuzz/api_fuzzer -max_total_time="$seconds" -rss_limit_mb=2048 \
  -timeout=20 -print_final_stats=1 -artifact_prefix=build/fuzz/ \
  build/fuzz/corpus tests/fuzz/seeds >"$log" 2>&1 || status=$?
# The summary lines; the whole report (stack traces) on failure.
if [ "$status" -eq 0 ]; then
  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::(number_of_executed_units|peak_rss_mb))' "$log" || true
  echo "fuzz: api_fuzzer passed"
else
  tail -n 80 "$log"
  echo "fuzz: api_fuzzer FAILED (exit $status); the input is in build/fuzz/, the log in $log" >&2
fi

js_status=0
wait "$js_fuzz" || js_status=$?
cat "$js_log"
if [ "$js_status" -ne 0 ]; then
  echo "fuzz: the JS fuzz FAILED (its log: $js_log)" >&2
  [ "$status" -ne 0 ] || status="$js_status"
fi
exit "$status"
