// The worker pool against our synchronous attention on one thread, run by
// `npm run bench` (run.js) or alone:
//
//   bash scripts/node-wasm.sh bench/js/pool.js [--workers N] [--quick]
//                                              [--workloads S2,S4,S4c,C1,D1]
//
// Per workload (web/bench-kit/workloads.json) both hold the same weights and
// inputs on the SIMD build's default backend; their outputs are checked
// against each other (max abs diff <= 1e-3), then they are timed interleaved
// (web/bench-kit/timing.js). Decoding (D1) is measured as steps, one token
// each, on a cache prefilled with cacheLen tokens that grows by the steps,
// in both (see decodeSteps). Also measured: how long the calling thread
// itself is busy per pool call on S2 (its CPU time, see mainThreadBusy:
// copying the inputs out and receiving the result).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { WORKLOADS, makeData } from '../../web/bench-kit/workloads.js';
import { interleave, maxAbsDiff, summarize } from '../../web/bench-kit/timing.js';
import { createOurs, loadPackage, oursModule } from '../../web/bench-kit/ours.js';
import { poolTable } from './report.js';

const TOLERANCE = 1e-3;

// Decoding: the cache grows by one token per step, from cacheLen keys to
// cacheLen + DECODE_STEPS, and is then truncated back to cacheLen by the next
// step (one step in DECODE_STEPS pays that extra call; the median does not
// see it). Truncating after every step, as a benchmark of one fixed cache
// length would, costs the pool a second round trip per token that decoding
// never makes, and the synchronous side almost nothing.
const DECODE_STEPS = 64;

// run() of a decoding benchmark: step() one token, after truncate() when the
// cache is full; sync: both synchronous, else both return promises.
function decodeSteps(step, truncate, sync) {
  let steps = 0;
  if (sync) {
    return () => {
      if (steps++ % DECODE_STEPS === 0 && steps > 1) truncate();
      return step();
    };
  }
  return async () => {
    if (steps++ % DECODE_STEPS === 0 && steps > 1) await truncate();
    return step();
  };
}

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
    const cache = await mha.createKVCache({ batch: 1, maxLength: cacheLen + DECODE_STEPS });
    await mha.forwardIncremental({ data: data.xpast, shape: [1, cacheLen, d] }, cache);
    const x = { data: data.xq, shape: [1, 1, d] };
    return {
      name,
      run: decodeSteps(async () => (await mha.forwardIncremental(x, cache)).output.data,
        () => cache.truncate(cacheLen), false),
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

// The synchronous side of a decoding workload, as createPooled's.
async function createSyncDecoding(data) {
  const { d, heads, cacheLen } = data;
  const mod = await oursModule(true);
  const mha = new mod.MultiHeadAttention({ dModel: d, numHeads: heads, backend: 'highway' });
  mha.setWeights({
    wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
    bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo,
  });
  const cache = mha.createKVCache({ batch: 1, maxLength: cacheLen + DECODE_STEPS });
  mha.forwardIncremental({ data: data.xpast, shape: [1, cacheLen, d] }, cache);
  const x = { data: data.xq, shape: [1, 1, d] };
  return {
    run: decodeSteps(() => mha.forwardIncremental(x, cache).output.data,
      () => cache.truncate(cacheLen), true),
    dispose() { cache.dispose(); mha.dispose(); },
  };
}

// The calling thread's CPU time so far in ms: Linux's schedstat of the main
// thread (its thread id is the process id), which counts only the time it
// ran, whatever else shares the cores; null where there is none.
function mainThreadCpuMs() {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return null;
  }
}

// Milliseconds the main thread was busy per call of `run`, over `calls`
// calls: its CPU time where the system tells it, else the time it ran JS
// (Node's event-loop utilization, which also counts the time it waited for
// a core while it ran).
async function mainThreadBusy(run, calls) {
  const cpu = mainThreadCpuMs();
  const before = performance.eventLoopUtilization();
  for (let i = 0; i < calls; ++i) await run();
  if (cpu !== null) return (mainThreadCpuMs() - cpu) / calls;
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
      const sync = data.cacheLen > 0 ? await createSyncDecoding(data)
        : await createOurs(data, { simd: true, backend: 'highway' });
      sync.name = 'synchronous, 1 thread';
      const pooled = await createPooled(pool, data);
      const diff = maxAbsDiff(await pooled.run(), sync.run());
      if (!(diff <= TOLERANCE)) throw new Error(`${name}: the pool differs by ${diff}`);
      const { samples } = await interleave([sync, pooled], timing);
      const [s, p] = [summarize(samples.get(sync.name)), summarize(samples.get(pooled.name))];
      const row = { workload: name, syncMs: s.median, poolMs: p.median,
        speedup: s.median / p.median, diff };
      if (name === 'S2') row.mainThreadMsPerCall = await mainThreadBusy(() => pooled.run(), 50);
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
