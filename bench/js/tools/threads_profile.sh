#!/usr/bin/env bash
# Where 2 threads lose time, natively: for S2, S4 and C1 on 1 and 2 threads,
# a perf profile of build/native/bench/threads_profile's forward loop split
# into phases per thread (perf_phases.js), each thread's CPU time and time
# taken by other processes (schedstat), the pool's fork/join cost, the
# projections' GEMM split, one thread beside a busy core, and
# onnxruntime-node's threads on the same
# loops (ort_node_loop.js). Each measurement waits for a quiet moment (both
# cores at least 90% idle over a second, up to 2 minutes) and prints the
# load average with it; rounds repeat the set so that medians can be taken.
#
#   bash bench/js/tools/threads_profile.sh [ROUNDS [OUT_DIR [WORKLOADS]]]
# after `bash scripts/build.sh native` and `npm ci --prefix bench`; needs perf.
set -euo pipefail
cd "$(dirname "$0")/../../.."
rounds=${1:-3}
out=${2:-build/threads-profile}
workloads=${3:-S2 S4 C1}
bin=build/native/bench/threads_profile
mkdir -p "$out"

cpu_idle_pct() {  # share of both CPUs idle over one second
  local a b
  read -r -a a < /proc/stat
  sleep 1
  read -r -a b < /proc/stat
  local total=0 i
  for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
  echo $((100 * (b[4] - a[4]) / (total > 0 ? total : 1)))
}

wait_quiet() {
  local k idle
  for k in $(seq 1 120); do
    idle=$(cpu_idle_pct)
    if [ "$idle" -ge 90 ]; then echo "(quiet: ${idle}% idle; $(uptime | sed 's/.*load/load/'))"; return 0; fi
  done
  echo "(NOT quiet after 2 minutes: ${idle}% idle; $(uptime | sed 's/.*load/load/'))"
}

for r in $(seq 1 "$rounds"); do
  echo "## round $r"
  wait_quiet
  "$bin" barrier 5
  for shape in "128 768 768" "512 384 384" "256 512 512" "32 512 512"; do
    wait_quiet
    "$bin" gemm $shape 7
  done
  for w in $workloads; do
    wait_quiet
    "$bin" contend "$w" 7
    for t in 1 2; do
      wait_quiet
      "$bin" loop "$w" "$t" 2
      wait_quiet
      data="$out/$w-$t-r$r.data"
      perf record -q -F 2000 --call-graph dwarf,16384 -o "$data" "$bin" loop "$w" "$t" 2 > "$out/$w-$t-r$r.txt" 2>&1
      forwards=$(sed -n 's/.*: \([0-9]*\) forwards.*/\1/p' "$out/$w-$t-r$r.txt")
      echo "perf profile (the run under perf: $(head -1 "$out/$w-$t-r$r.txt" | sed 's/.*: //'))"
      perf script -i "$data" 2> /dev/null | node bench/js/tools/perf_phases.js "$forwards"
      rm -f "$data"
      wait_quiet
      (cd bench && SA_BENCH_THREADS=$t node js/tools/ort_node_loop.js "$w" 2 contrib)
    done
  done
done
