#!/usr/bin/env bash
# Runs the libFuzzer target over the C++ API (tests/fuzz/api_fuzzer.cc) for a
# bounded time: `npm test` runs it for 60 s; by hand, longer:
#   scripts/fuzz.sh [seconds]        (default 60; build first: scripts/build.sh fuzz)
# New inputs go to build/fuzz/corpus (not committed); tests/fuzz/seeds/ is
# read as well. A crash leaves its input in build/fuzz/ and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
mkdir -p build/fuzz/corpus
echo "fuzz: api_fuzzer for ${seconds} s"
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
  echo "fuzz: passed"
else
  tail -n 80 "$log"
  echo "fuzz: FAILED (exit $status); the input is in build/fuzz/, the log in $log" >&2
fi
exit "$status"
