// One wasm implementation on one workload in a loop, on 1 or more threads:
// wall ms per call and each busy thread's CPU time per call and time
// runnable but not running (another process had the core), from
// /proc/self/task/*/schedstat (Linux): how busy each worker of a threaded
// module or of onnxruntime-web's pool is, i.e. the load balance and the
// serial share.
//
//   bash scripts/node-wasm.sh bench/js/tools/wasm_threads_loop.js IMPL WORKLOAD THREADS [SECONDS]
// IMPL: ours (the threaded SIMD build, highway; 1 thread: the single-thread
// build) | ours-relaxed | ort-contrib | ort-plain (onnxruntime-web with
// numThreads = THREADS, which it takes once per process).
import { readFileSync, readdirSync } from 'node:fs';
import { WORKLOADS, makeData } from '../../../web/bench-kit/workloads.js';

const [impl, name, threadsArg, seconds = '3'] = process.argv.slice(2);
const w = WORKLOADS.find((x) => x.name === name);
const threads = Number(threadsArg);
if (!w || !impl || !(threads >= 1)) {
  console.error('usage: wasm_threads_loop.js ours|ours-relaxed|ort-contrib|ort-plain WORKLOAD THREADS [SECONDS]');
  process.exit(2);
}

function schedStats() {
  const out = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      out.set(tid, { run, wait, comm: readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() });
    } catch {
      // the thread ended
    }
  }
  return out;
}

const data = makeData(w);
let peer;
if (impl.startsWith('ours')) {
  const { createOurs } = await import('../../../web/bench-kit/ours.js');
  peer = await createOurs(data, { simd: true, relaxed: impl === 'ours-relaxed', backend: 'highway', threads });
} else {
  process.env.SA_BENCH_THREADS = String(threads);
  const { createOrtWeb } = await import('../peers/ortweb.js');
  peer = await createOrtWeb(data, impl === 'ort-contrib' ? 'contrib' : 'plain');
}
for (let i = 0; i < 5; i++) await peer.run();
const before = schedStats();
const start = performance.now();
let n = 0;
while (performance.now() - start < Number(seconds) * 1000) {
  await peer.run();
  n++;
}
const wall = (performance.now() - start) / n;
const after = schedStats();
console.log(`${peer.name ?? impl} ${w.name}, ${threads} thread(s): ${n} calls, ${wall.toFixed(4)} ms each (wall)`);
console.log('| thread (tid, name) | on CPU, ms per call | share of wall | runnable, not running, ms per call |');
console.log('|---|---:|---:|---:|');
let total = 0;
for (const [tid, s] of after) {
  const b = before.get(tid);
  if (!b) continue;
  const run = (s.run - b.run) / 1e6 / n;
  total += run;
  if (run < 0.02 * wall) continue; // Node's idle threads
  const wait = (s.wait - b.wait) / 1e6 / n;
  console.log(`| ${tid} ${s.comm} | ${run.toFixed(4)} | ${(100 * run / wall).toFixed(0)}% | ${wait.toFixed(4)} |`);
}
console.log(`(all threads: ${total.toFixed(4)} ms on CPU per call)`);
await peer.dispose?.();
process.exit(0);
