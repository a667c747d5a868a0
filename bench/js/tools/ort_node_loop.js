// onnxruntime-node (CPU execution provider) running one workload's graph in
// a loop, as bench/js/native_ort.js builds it, for `perf record` or alone:
// prints ms per run and each busy thread's CPU time per run and its time
// runnable but not running (another process had the core), from
// /proc/self/task/*/schedstat, next to bench/threads_profile's `loop`.
//
//   SA_BENCH_THREADS=2 node bench/js/tools/ort_node_loop.js WORKLOAD [SECONDS] [contrib|plain]
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { WORKLOADS, makeData } from '../../../web/bench-kit/workloads.js';
import { createOrtNodeSession } from '../peers/ortnode.js';
import { PEER_THREADS } from '../peers/ortweb.js';

const require = createRequire(import.meta.url);
const [name = 'S2', seconds = '3', graph = 'contrib'] = process.argv.slice(2);
const w = WORKLOADS.find((x) => x.name === name);
if (!w) throw new Error(`unknown workload ${name}`);

function schedStats() {
  const out = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      const comm = readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim();
      out.set(tid, { run, wait, comm });
    } catch {
      // the thread ended
    }
  }
  return out;
}

const ort = require('onnxruntime-node');
const data = makeData(w);
const { session, feeds } = await createOrtNodeSession(ort, data, graph);
for (let i = 0; i < 5; i++) await session.run(feeds);
const before = schedStats();
const start = performance.now();
let n = 0;
while (performance.now() - start < Number(seconds) * 1000) {
  await session.run(feeds);
  n++;
}
const wall = (performance.now() - start) / n;
const after = schedStats();
console.log(`ort-node ${graph} ${w.name}, ${PEER_THREADS} intra-op thread(s): ${n} runs, ${wall.toFixed(4)} ms each (wall)`);
console.log('| thread (tid, name) | on CPU, ms per run | share of wall | runnable, not running, ms per run |');
console.log('|---|---:|---:|---:|');
for (const [tid, s] of after) {
  const b = before.get(tid);
  if (!b) continue;
  const run = (s.run - b.run) / 1e6 / n;
  if (run < 0.02 * wall) continue; // idle threads of Node
  const wait = (s.wait - b.wait) / 1e6 / n;
  console.log(`| ${tid} ${s.comm} | ${run.toFixed(4)} | ${(100 * run / wall).toFixed(0)}% | ${wait.toFixed(4)} |`);
}
await session.release();
