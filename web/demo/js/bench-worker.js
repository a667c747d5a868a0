// Runs one benchmark workload off the main thread, with the benchmark kit
// that `npm run bench` uses too (web/bench-kit/: workloads, inputs, the
// plain-JS loop, our package's variants, interleaved timing, statistics).
import { WORKLOADS, makeData, workloadFlops } from '../../bench-kit/workloads.js';
import { interleave, summarize, maxAbsDiff } from '../../bench-kit/timing.js';
import { createPlainJs } from '../../bench-kit/plainjs.js';
import { createOurs, oursModule, RELAXED_BACKENDS } from '../../bench-kit/ours.js';
import { wasmSimdSupported, wasmRelaxedSimdSupported } from '../../index.js';
import { createPooled } from './bench-pool.js';
import { createThreaded } from './bench-threads.js';

const TOLERANCE = 1e-3;
const TIMING = {
  quick: { warmupMs: 40, warmupCalls: 2, slotMs: 10, budgetMs: 1500, minRounds: 3, maxRounds: 3 },
  full: { warmupMs: 300, warmupCalls: 3, slotMs: 40, budgetMs: 12000, minRounds: 5, maxRounds: 15 },
};

const post = (m) => self.postMessage(m);
const progress = (text) => post({ type: 'progress', text });

/**
 * The relaxed-SIMD build's backends (when the engine has relaxed SIMD),
 * every backend of the SIMD build (when it has wasm SIMD), then every
 * backend of the non-SIMD build (the scalar baseline is there).
 */
async function variants() {
  const out = [];
  if (wasmRelaxedSimdSupported()) {
    for (const backend of RELAXED_BACKENDS) out.push({ simd: true, relaxed: true, backend });
  }
  if (wasmSimdSupported()) {
    const simd = await oursModule(true);
    for (const backend of simd.backends) out.push({ simd: true, backend });
  }
  const nosimd = await oursModule(false);
  for (const backend of nosimd.backends) out.push({ simd: false, backend });
  return out;
}

// threads: the threads of our threaded rows (1 for none): the relaxed-SIMD
// and SIMD builds' highway backend (the only one the threaded builds carry),
// each right after its single-thread row. poolWorkers: the workers of the
// "pool, N workers" row, 0 for none.
async function run({ workload, mode, threads = 1, poolWorkers }) {
  const w = WORKLOADS.find((x) => x.name === workload);
  if (!w) throw new Error(`unknown workload ${workload}`);
  const flops = workloadFlops(w);
  progress(`${w.name}: preparing weights and inputs`);
  const data = makeData(w);
  const peers = [];
  try {
    for (const v of await variants()) {
      peers.push(await createOurs(data, v));
      if (threads > 1 && v.simd && v.backend === 'highway') {
        progress(`${w.name}: starting the ${v.relaxed ? 'relaxed-SIMD' : 'SIMD'} build on ${threads} threads`);
        peers.push(await createThreaded(data, { relaxed: v.relaxed === true, threads }));
      }
    }
    if (poolWorkers > 0) {
      progress(`${w.name}: starting a pool of ${poolWorkers}`);
      peers.push({ ...(await createPooled(data, poolWorkers)), threads: poolWorkers, threadsAre: 'workers' });
    }
    peers.push(await createPlainJs(data));
    const reference = Float32Array.from(peers[0].run());
    const diffs = new Map();
    for (const p of peers) diffs.set(p.name, maxAbsDiff(reference, await p.run()));
    progress(`${w.name}: checked ${peers.length} implementations against ${peers[0].name}; timing (${mode})`);
    const { samples, rounds } = await interleave(peers, TIMING[mode], {
      log: progress,
      onRound: (done, total) => progress(`round ${done}/${total} done`),
    });
    const rows = peers.map((p) => {
      const s = summarize(samples.get(p.name));
      return {
        name: p.name, kernels: p.kernels ?? 'JavaScript', threads: p.threads ?? 1, threadsAre: p.threadsAre ?? 'threads',
        median: s.median, p25: s.p25, p75: s.p75, n: s.n,
        gflops: flops / (s.median * 1e6), maxDiff: diffs.get(p.name), ok: diffs.get(p.name) <= TOLERANCE,
      };
    });
    post({ type: 'result', workload: w.name, flops, rounds, rows });
  } finally {
    await Promise.all(peers.map((p) => p.dispose()));
  }
}

self.onmessage = (e) => {
  run(e.data).catch((err) => post({ type: 'error', message: String(err?.stack ?? err) }));
};
post({ type: 'ready', simd: wasmSimdSupported(), relaxedSimd: wasmRelaxedSimdSupported() });
