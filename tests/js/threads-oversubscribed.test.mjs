// More threads than the machine has processors cost nothing: a module of 8
// threads on a 2-core machine runs S1 and D1 (web/bench-kit/workloads.json,
// the smallest forward and the decode step) at most 10% slower than a
// module of 2, with the same bits. Each loop wakes only the workers its work
// pays for, at most one per processor beside the caller; 7 workers spinning
// on 2 cores made S1 4.3x and D1 4.4-5.5x slower than 2 threads.
//
// On a machine shared with other work (CI) one measurement can land in a
// burst of it, and there more threads can even win a larger share of the
// cores: a measurement is the median of per-round ratios (the two modules
// alternate, each round 20 ms of calls each), and the test takes the median
// of 3 measurements (2 when they agree). The oversubscription this catches
// is 2-5x, not 10%: at a load average of 13 on the 2 cores the ratios
// measured were 0.95-1.09, and 2.0-5.2 before the fix. Where the machine's
// other work gives the 8 threads a larger share of the cores, their wall time
// may hide spinning; the process's CPU time per call does not (1.0-1.06 here,
// 2.0-2.3 before): on 2 processors or fewer, where both modules run as many
// threads, its median ratio is held to 1.25.
import os from 'node:os';

import { WORKLOADS, makeData } from '../../web/bench-kit/workloads.js';
import { WORKERS_PER_PROCESSOR } from '../../web/src/thread-workers.js';
import { createAttentionModule } from './support/modules.mjs';

const processors = os.availableParallelism?.() ?? os.cpus().length;
// 8, or the most a machine with fewer processors than 2 accepts.
const MANY = Math.min(8, WORKERS_PER_PROCESSOR * processors);
const ROUNDS = 41;
const SLOT_MS = 20;
const BOUND = 1.1;
const CPU_BOUND = 1.25;

const [two, many] = await Promise.all([2, MANY].map(async (threads) => {
  const module = await createAttentionModule({ threads });
  await module.threadsReady;
  return module;
}));

// A workload's forward on `module` as the benchmark runs it: S1 a
// self-attention call, D1 a decode step over a 512-token cache rolled back
// after each call.
function runner(module, w, data) {
  const mha = new module.MultiHeadAttention({ dModel: w.d, numHeads: w.heads });
  mha.setWeights({ wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
    bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo });
  if (w.cacheLen === 0) {
    const query = { data: data.xq, shape: [1, w.tq, w.d] };
    return { run: () => mha.forward(query).output.data, dispose: () => mha.dispose() };
  }
  const cache = mha.createKVCache({ batch: 1, maxLength: w.cacheLen + 1 });
  mha.forwardIncremental({ data: data.xpast, shape: [1, w.cacheLen, w.d] }, cache);
  const x = { data: data.xq, shape: [1, 1, w.d] };
  return {
    run() {
      const out = mha.forwardIncremental(x, cache).output.data;
      cache.truncate(w.cacheLen);
      return out;
    },
    dispose() {
      cache.dispose();
      mha.dispose();
    },
  };
}

// Wall and CPU ms (the process's, every thread) per call of a runner over
// one slot of `calls` calls.
function slot(r, calls) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) r.run();
  const wall = (performance.now() - t0) / calls;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 / calls };
}

const median = (values) => values.sort((x, y) => x - y)[values.length >> 1];

// The medians over ROUNDS rounds of (wall time on `b`) / (wall time on `a`)
// and of the same for CPU time, the two alternating which goes first.
function medianRatio(a, b, calls) {
  const wall = [];
  const cpu = [];
  for (let round = 0; round < ROUNDS; round++) {
    const first = round % 2 === 0 ? a : b;
    const second = first === a ? b : a;
    const t = new Map([[first, slot(first, calls)], [second, slot(second, calls)]]);
    wall.push(t.get(b).wall / t.get(a).wall);
    cpu.push(t.get(b).cpu / t.get(a).cpu);
  }
  return { wall: median(wall), cpu: median(cpu) };
}

test.each(['S1', 'D1'])(`%s on ${MANY} threads: at most 1.1x the time on 2`, (name) => {
  const w = WORKLOADS.find((x) => x.name === name);
  const data = makeData(w);
  const a = runner(two, w, data);
  const b = runner(many, w, data);
  try {
    const want = Float32Array.from(a.run());
    expect(Float32Array.from(b.run())).toEqual(want);
    for (let i = 0; i < 20; i++) a.run(), b.run(); // warm-up
    const calls = Math.max(1, Math.round(SLOT_MS / slot(a, 5).wall));
    const measured = [medianRatio(a, b, calls), medianRatio(a, b, calls)];
    const agree = (measured[0].wall <= BOUND) === (measured[1].wall <= BOUND);
    if (!agree) measured.push(medianRatio(a, b, calls));
    measured.sort((x, y) => x.wall - y.wall);
    console.log(`${name}: ${MANY} threads / 2 threads, medians of ${ROUNDS} rounds of ` +
      `${calls} calls: wall ${measured.map((r) => r.wall.toFixed(3)).join(', ')}; ` +
      `CPU ${measured.map((r) => r.cpu.toFixed(3)).join(', ')}`);
    expect(measured[1].wall).toBeLessThanOrEqual(BOUND);
    // Where both run on as many threads (2 processors or fewer), the same
    // work on the same threads: the same CPU time.
    if (processors <= 2) expect(median(measured.map((r) => r.cpu))).toBeLessThanOrEqual(CPU_BOUND);
  } finally {
    a.dispose();
    b.dispose();
  }
});
