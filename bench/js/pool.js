// The worker pool against our synchronous attention on one thread, run by
// `npm run bench` (run.js) or alone:
//
//   bash scripts/node-wasm.sh bench/js/pool.js [--workers N] [--quick]
//                                              [--workloads S2,S4,S4c,C1,D1]
//
// Per workload (web/bench-kit/workloads.json) both hold the same weights and
// inputs on the SIMD build's default backend; their outputs are checked
// against each other (max abs diff <= 1e-3), then they are timed interleaved
// (web/bench-kit/timing.js). A decode step (D1) runs over a cache prefilled
// with cacheLen tokens and truncates it back after each token, in both.
// Also measured: how long the calling thread itself is busy per pool call
// on S2 (Node's event-loop utilization: JS run on the main thread, i.e.
// copying the inputs out and adding the partial outputs).
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { WORKLOADS, makeData } from '../../web/bench-kit/workloads.js';
import { interleave, maxAbsDiff, summarize } from '../../web/bench-kit/timing.js';
import { createOurs, loadPackage } from '../../web/bench-kit/ours.js';
import { poolTable } from './report.js';

const TOLERANCE = 1e-3;

function parseArgs(argv) {
  const a = { workers: 2, quick: false, workloads: ['S2', 'S4', 'S4c', 'C1', 'D1'] };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--workers') a.workers = Number(next());
    else if (k === '--quick') a.quick = true;
    else if (k === '--workloads') a.workloads = next().split(',');
    else throw new Error(`unknown option ${k}`);
  }
  return a;
}

// The workload on the pool, as a benchmark implementation { name, run, dispose }.
async function createPooled(pool, data) {
  const { d, heads, tq, tk, cross, causal, cacheLen } = data;
  const mha = await pool.MultiHeadAttention({ dModel: d, numHeads: heads });
  await mha.setWeights({
    wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
    bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo,
  });
  const name = `pool of ${pool.workers}`;
  if (cacheLen > 0) {
    const cache = await mha.createKVCache({ batch: 1, maxLength: cacheLen + 1 });
    await mha.forwardIncremental({ data: data.xpast, shape: [1, cacheLen, d] }, cache);
    const x = { data: data.xq, shape: [1, 1, d] };
    return {
      name,
      async run() {
        const out = (await mha.forwardIncremental(x, cache)).output.data;
        await cache.truncate(cacheLen);
        return out;
      },
      dispose: async () => { await cache.dispose(); await mha.dispose(); },
    };
  }
  const query = { data: data.xq, shape: [1, tq, d] };
  const kv = cross ? { data: data.xkv, shape: [1, tk, d] } : undefined;
  return {
    name,
    async run() { return (await mha.forward(query, kv, undefined, { causal })).output.data; },
    dispose: () => mha.dispose(),
  };
}

// Milliseconds the main thread ran JS per call of `run`, over `calls` calls.
async function mainThreadBusy(run, calls) {
  const before = performance.eventLoopUtilization();
  for (let i = 0; i < calls; ++i) await run();
  return performance.eventLoopUtilization(before).active / calls;
}

// Rows { workload, syncMs, poolMs, speedup, diff, mainThreadMsPerCall? }
// for a pool of `workers` on the SIMD build's default backend.
export async function runPoolBench({ workers = 2, quick = false,
  workloads = ['S2', 'S4', 'S4c', 'C1', 'D1'] } = {}) {
  const { createAttentionPool } = await loadPackage();
  const pool = await createAttentionPool({ workers, build: 'simd' });
  const timing = {
    warmupMs: quick ? 100 : 300, warmupCalls: 3, slotMs: quick ? 20 : 40,
    budgetMs: (quick ? 4 : 20) * 1000, minRounds: quick ? 3 : 5,
    maxRounds: quick ? 5 : 15,
  };
  const rows = [];
  try {
    for (const name of workloads) {
      const w = WORKLOADS.find((x) => x.name === name);
      if (!w) throw new Error(`no workload ${name}`);
      const data = makeData(w);
      const sync = await createOurs(data, { simd: true, backend: 'highway' });
      sync.name = 'synchronous, 1 thread';
      const pooled = await createPooled(pool, data);
      const diff = maxAbsDiff(await pooled.run(), sync.run());
      if (!(diff <= TOLERANCE)) throw new Error(`${name}: the pool differs by ${diff}`);
      const { samples } = await interleave([sync, pooled], timing);
      const [s, p] = [summarize(samples.get(sync.name)), summarize(samples.get(pooled.name))];
      const row = { workload: name, syncMs: s.median, poolMs: p.median,
        speedup: s.median / p.median, diff };
      if (name === 'S2') row.mainThreadMsPerCall = await mainThreadBusy(() => pooled.run(), 20);
      rows.push(row);
      console.error(`${name}: synchronous ${s.median.toFixed(2)} ms, pool ${p.median.toFixed(2)} ms` +
        ` (${row.speedup.toFixed(2)}x)`);
      sync.dispose();
      await pooled.dispose();
    }
  } finally {
    await pool.dispose();
  }
  return { workers, rows };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(poolTable(await runPoolBench(parseArgs(process.argv.slice(2)))));
}
