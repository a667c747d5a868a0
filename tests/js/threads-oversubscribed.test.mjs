// More threads than the machine has processors cost nothing: a module of 8
// threads on a 2-core machine runs S1 and D1 (web/bench-kit/workloads.json,
// the smallest forward and the decode step) at most 10% slower than a
// module of 2, with the same bits. Each loop wakes only the workers its work
// pays for, at most one per processor beside the caller; 7 workers spinning
// on 2 cores made S1 4.3x and D1 4.4-5.5x slower than 2 threads.
//
// On a machine shared with other work (CI), one interleaved measurement can
// land in a burst of it: the ratio is the median of per-round ratios (the two
// modules alternate, each round a few milliseconds of calls), and a
// measurement over the bound is taken again, up to 3 in all; the
// oversubscription this catches is 4x, not 10%.
import os from 'node:os';

import { WORKLOADS, makeData } from '../../web/bench-kit/workloads.js';
import { WORKERS_PER_PROCESSOR } from '../../web/src/thread-workers.js';
import { createAttentionModule } from './support/modules.mjs';

const processors = os.availableParallelism?.() ?? os.cpus().length;
// 8, or the most a machine with fewer processors than 2 accepts.
const MANY = Math.min(8, WORKERS_PER_PROCESSOR * processors);
const ROUNDS = 21;
const SLOT_MS = 6;
const BOUND = 1.1;
const ATTEMPTS = 3;

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

// ms per call of each runner over one slot of `calls` calls.
function slot(r, calls) {
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) r.run();
  return (performance.now() - t0) / calls;
}

// The median over ROUNDS rounds of (time on `b`) / (time on `a`), the two
// alternating which goes first.
function medianRatio(a, b, calls) {
  const ratios = [];
  for (let round = 0; round < ROUNDS; round++) {
    const first = round % 2 === 0 ? a : b;
    const second = first === a ? b : a;
    const t = new Map([[first, slot(first, calls)], [second, slot(second, calls)]]);
    ratios.push(t.get(b) / t.get(a));
  }
  ratios.sort((x, y) => x - y);
  return ratios[ROUNDS >> 1];
}

test.each(['S1', 'D1'])(`%s on ${MANY} threads takes at most 1.1x its time on 2`, (name) => {
  const w = WORKLOADS.find((x) => x.name === name);
  const data = makeData(w);
  const a = runner(two, w, data);
  const b = runner(many, w, data);
  try {
    const want = Float32Array.from(a.run());
    expect(Float32Array.from(b.run())).toEqual(want);
    for (let i = 0; i < 20; i++) a.run(), b.run(); // warm-up
    const calls = Math.max(1, Math.round(SLOT_MS / slot(a, 5)));
    const measured = [];
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      measured.push(medianRatio(a, b, calls));
      if (measured.at(-1) <= BOUND) break;
    }
    console.log(`${name}: ${MANY} threads / 2 threads, medians of ${ROUNDS} rounds of ` +
      `${calls} calls: ${measured.map((r) => r.toFixed(3)).join(', ')}`);
    expect(Math.min(...measured)).toBeLessThanOrEqual(BOUND);
  } finally {
    a.dispose();
    b.dispose();
  }
});
