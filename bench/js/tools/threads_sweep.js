// Ours at several thread counts on the same workloads, interleaved in one
// process (each count a module of its own; 1: the single-thread build):
// median ms per call, and whether every count gives the bits of the first.
//
//   bash scripts/node-wasm.sh bench/js/tools/threads_sweep.js [COUNTS [WORKLOADS [SECONDS]]]
// COUNTS: e.g. 1,2,4,8 (the default); WORKLOADS: e.g. S1,S2,C1,D1 (the
// default); SECONDS: the timing budget per workload (default 8). Uses the
// relaxed-SIMD builds where this node has relaxed SIMD, else the SIMD ones.
import { WORKLOADS, makeData } from '../../../web/bench-kit/workloads.js';
import { interleave, summarize } from '../../../web/bench-kit/timing.js';
import { createOurs, loadPackage } from '../../../web/bench-kit/ours.js';

const [countsArg = '1,2,4,8', namesArg = 'S1,S2,C1,D1', seconds = '8'] = process.argv.slice(2);
const counts = countsArg.split(',').map(Number);
const names = namesArg.split(',');
const relaxed = (await loadPackage()).wasmRelaxedSimdSupported();
const timing = { warmupMs: 200, warmupCalls: 3, slotMs: 30, budgetMs: Number(seconds) * 1000,
  minRounds: 5, maxRounds: 25 };

const rows = [];
for (const name of names) {
  const w = WORKLOADS.find((x) => x.name === name);
  const data = makeData(w);
  const peers = [];
  for (const threads of counts) {
    const p = await createOurs(data, { simd: true, relaxed, backend: 'highway', threads });
    peers.push({ ...p, name: String(threads) });
  }
  const first = Float32Array.from(peers[0].run());
  const same = peers.every((p) => {
    const out = Float32Array.from(p.run());
    return out.every((x, i) => Object.is(x, first[i]));
  });
  const { samples } = await interleave(peers, timing);
  rows.push([name, ...peers.map((p) => summarize(samples.get(p.name)).median), same]);
  for (const p of peers) p.dispose();
}
console.log(`${relaxed ? 'wasm-relaxed' : 'wasm-simd'} (threaded builds above 1), node ` +
  `${process.version}, median ms`);
console.log(`| workload | ${counts.map((c) => `${c} thread${c > 1 ? 's' : ''}`).join(' | ')} | same bits |`);
console.log(`|---|${counts.map(() => '---:|').join('')}---|`);
for (const [name, ...rest] of rows) {
  const same = rest.pop();
  console.log(`| ${name} | ${rest.map((x) => x.toFixed(3)).join(' | ')} | ${same ? 'yes' : 'NO'} |`);
}
process.exit(0);
