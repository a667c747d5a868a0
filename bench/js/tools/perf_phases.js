#!/usr/bin/env node
// Reads `perf script` output (samples with call stacks, e.g. from
// `perf record -F 2000 --call-graph dwarf build/native/bench/threads_profile
// loop S2 2 4`) on stdin and prints, per thread, the share of its samples in
// each phase of a forward: the projections' GEMM, the attention kernel
// (its Q K^T and P V tiles included), the pool (spinning, yielding or asleep
// in ThreadPool: waiting at a fork/join), the value checks, memory
// (zeroing, copies, page faults) and the rest. With FORWARDS (forwards in
// the recording) it also gives CPU ms per forward (each sample stands for its
// period of cpu-clock; the set-up before the loop is counted too, about 1%).
//
//   perf script -i perf.data | node bench/js/tools/perf_phases.js [FORWARDS]
import readline from 'node:readline';

const PHASES = ['GEMM', 'attention', 'pool wait', 'checks', 'memory', 'other'];

function phaseOf(frames) {
  const has = (re) => frames.some((f) => re.test(f));
  if (has(/Attention<|PackScaledQueries|::Attention::/)) return 'attention';
  if (has(/Gemm<|ParallelGemm/)) return 'GEMM';
  const leaf = frames[0] ?? '';
  if (/CheckComputed|CheckFinite|CheckTensor|MaxAbs/.test(leaf)) return 'checks';
  if (has(/ThreadPool|sched_yield|futex/)) return 'pool wait';
  if (has(/memset|memmove|memcpy|clear_page|page_fault|do_anonymous_page/)) return 'memory';
  return 'other';
}

const threads = new Map(); // tid -> { phase -> samples }
const cpuNs = new Map(); // tid -> { phase -> ns }
let current = null;
const flush = () => {
  if (!current) return;
  const counts = threads.get(current.tid) ?? Object.fromEntries(PHASES.map((p) => [p, 0]));
  const phase = phaseOf(current.frames);
  counts[phase] += 1;
  threads.set(current.tid, counts);
  const ns = cpuNs.get(current.tid) ?? Object.fromEntries(PHASES.map((p) => [p, 0]));
  ns[phase] += current.period;
  cpuNs.set(current.tid, ns);
  current = null;
};

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  if (line.trim() === '') {
    flush();
    return;
  }
  if (!/^\s/.test(line)) {
    flush();
    // "comm  pid/tid  time:  period event: ..." or "comm tid time: period event:"
    const m = /^\S+\s+(?:\d+\/)?(\d+)\s+[\d.]+:\s+(\d+)\s/.exec(line);
    current = { tid: m ? Number(m[1]) : -1, period: m ? Number(m[2]) : 0, frames: [] };
    return;
  }
  if (current) current.frames.push(line.trim().replace(/^[0-9a-f]+\s+/, ''));
});
rl.on('close', () => {
  flush();
  const forwards = Number(process.argv[2]);
  const tids = [...threads.keys()].sort((a, b) => a - b);
  const total = tids.reduce((s, t) => s + Object.values(threads.get(t)).reduce((a, b) => a + b, 0), 0);
  console.log(`| thread | samples | ${PHASES.join(' | ')} |`);
  console.log(`|---|---:|${PHASES.map(() => '---:').join('|')}|`);
  for (const t of tids) {
    const c = threads.get(t);
    const n = Object.values(c).reduce((a, b) => a + b, 0);
    if (n < total * 0.005) continue; // perf's own, the harness's set-up threads
    console.log(`| ${t} | ${n} | ${PHASES.map((p) => `${(100 * c[p] / n).toFixed(1)}%`).join(' | ')} |`);
  }
  if (forwards > 0) {
    console.log('\nCPU ms per forward:');
    console.log(`| thread | ${PHASES.join(' | ')} | total |`);
    console.log(`|---|${PHASES.map(() => '---:').join('|')}|---:|`);
    for (const t of tids) {
      const c = cpuNs.get(t);
      const n = Object.values(threads.get(t)).reduce((a, b) => a + b, 0);
      if (n < total * 0.005) continue;
      const ms = (x) => (x / 1e6 / forwards).toFixed(3);
      console.log(`| ${t} | ${PHASES.map((p) => ms(c[p])).join(' | ')} | ${ms(Object.values(c).reduce((a, b) => a + b, 0))} |`);
    }
  }
});
