// Runs one benchmark workload off the main thread. Reuses the benchmark
// harness of bench/js (workload definitions and FLOP counts, inputs, the
// plain-JS loop, our package's variants, statistics), served by the demo
// server at /bench/js/.
import { WORKLOADS, makeData, workloadFlops } from '../../../bench/js/workloads.js';
import { summarize, maxAbsDiff } from '../../../bench/js/timing.js';
import { createPlainJs } from '../../../bench/js/peers/plainjs.js';
import { createOurs, oursModule, RELAXED_BACKENDS } from '../../../bench/js/peers/ours.js';
import { wasmSimdSupported, wasmRelaxedSimdSupported } from '../../index.js';

const TOLERANCE = 1e-3;
const TIMING = {
  quick: { warmupMs: 40, warmupCalls: 2, slotMs: 10, budgetMs: 1500, minRounds: 3, maxRounds: 3 },
  full: { warmupMs: 300, warmupCalls: 3, slotMs: 40, budgetMs: 12000, minRounds: 5, maxRounds: 15 },
};

const post = (m) => self.postMessage(m);

// Interleaved timing as in bench/js/timing.js (whose interleave() also
// reads Node's process.cpuUsage): warm up each implementation, size each
// one's turn to about slotMs, then rounds of turns in rotating order
// (A B C, B C A, ...), each call timed on its own.
function interleaveInBrowser(peers, opts, log) {
  const timed = (p) => {
    const t0 = performance.now();
    p.run();
    return performance.now() - t0;
  };
  const reps = new Map();
  let roundCost = 0;
  for (const p of peers) {
    const times = [];
    const t0 = performance.now();
    while (times.length < opts.warmupCalls || performance.now() - t0 < opts.warmupMs) {
      times.push(timed(p));
      if (times.length >= 2 && times[times.length - 1] > opts.warmupMs) break;
    }
    const est = summarize(times).median;
    const n = Math.max(1, Math.min(200, Math.round(opts.slotMs / est)));
    reps.set(p.name, n);
    roundCost += n * est;
  }
  const rounds = Math.max(opts.minRounds, Math.min(opts.maxRounds, Math.floor(opts.budgetMs / roundCost)));
  log(`${rounds} rounds of ~${roundCost.toFixed(0)} ms (calls per turn: ${peers
    .map((p) => `${p.name} ${reps.get(p.name)}`).join(', ')})`);
  const samples = new Map(peers.map((p) => [p.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < peers.length; i++) {
      const p = peers[(i + r) % peers.length];
      for (let k = reps.get(p.name); k > 0; k--) samples.get(p.name).push(timed(p));
    }
    log(`round ${r + 1}/${rounds} done`);
  }
  return { samples, rounds };
}
const progress = (text) => post({ type: 'progress', text });

/**
 * The relaxed-SIMD build's vector backends (when the engine has relaxed
 * SIMD), every backend of the SIMD build (when it has wasm SIMD), then the
 * non-SIMD build's default.
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
  out.push({ simd: false, backend: nosimd.backend });
  return out;
}

async function run({ workload, mode }) {
  const w = WORKLOADS.find((x) => x.name === workload);
  if (!w) throw new Error(`unknown workload ${workload}`);
  const flops = workloadFlops(w);
  progress(`${w.name}: preparing weights and inputs`);
  const data = makeData(w);
  const peers = [];
  try {
    for (const v of await variants()) peers.push(await createOurs(data, v));
    peers.push(await createPlainJs(data));
    const reference = Float32Array.from(peers[0].run());
    const diffs = new Map(peers.map((p) => [p.name, maxAbsDiff(reference, p.run())]));
    progress(`${w.name}: checked ${peers.length} implementations against ${peers[0].name}; timing (${mode})`);
    const { samples, rounds } = interleaveInBrowser(peers, TIMING[mode], progress);
    const rows = peers.map((p) => {
      const s = summarize(samples.get(p.name));
      return {
        name: p.name, kernels: p.kernels ?? 'JavaScript', median: s.median, p25: s.p25, p75: s.p75, n: s.n,
        gflops: flops / (s.median * 1e6), maxDiff: diffs.get(p.name), ok: diffs.get(p.name) <= TOLERANCE,
      };
    });
    post({ type: 'result', workload: w.name, flops, rounds, rows });
  } finally {
    for (const p of peers) p.dispose();
  }
}

self.onmessage = (e) => {
  run(e.data).catch((err) => post({ type: 'error', message: String(err?.stack ?? err) }));
};
post({ type: 'ready', simd: wasmSimdSupported(), relaxedSimd: wasmRelaxedSimdSupported() });
