// Interleaved timing of several implementations of one workload, and the
// statistics and output check around it: warm-up, then rounds in which every
// implementation runs a few calls in turn (A B C, B C A, ...), each call
// timed on its own. Inputs and weights are set up before; only the forward
// call (and its output read-back) is timed. Runs in Node and in a browser.

export function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

export function summarize(samples) {
  const s = [...samples].sort((a, b) => a - b);
  return {
    median: quantile(s, 0.5),
    p25: quantile(s, 0.25),
    p75: quantile(s, 0.75),
    min: s[0],
    n: s.length,
  };
}

export function maxAbsDiff(a, b) {
  if (!a || !b || a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (Number.isNaN(d)) return NaN;
    if (d > m) m = d;
  }
  return m;
}

// The process's CPU time (all threads), where the engine tells it (Node).
const cpuUsage = globalThis.process?.cpuUsage?.bind(globalThis.process) ?? null;

// Wall time of one call (ms); the process's CPU time of it goes to `cpu`
// where there is one (a wall time well above it means the core was shared).
// A synchronous run() is timed without a microtask turn; a promise is awaited.
async function timedCall(peer, cpu) {
  const c0 = cpu && cpuUsage ? cpuUsage() : null;
  const t0 = performance.now();
  const r = peer.run();
  if (r && typeof r.then === 'function') await r;
  const wall = performance.now() - t0;
  if (c0) {
    const c = cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  return wall;
}

/**
 * peers: [{name, run}], already checked against a reference.
 * opts: {warmupMs, warmupCalls, slotMs, budgetMs, minRounds, maxRounds,
 * maxCallsPerSlot (default 200)}.
 * log(text): the plan, once; onRound(done, rounds): after each round.
 * Returns {samples, cpuSamples, rounds}: Maps name -> ms per call (CPU
 * samples stay empty where the engine has no process CPU time).
 */
export async function interleave(peers, opts, { log = () => {}, onRound = () => {} } = {}) {
  const est = new Map();
  for (const p of peers) {
    const times = [];
    const t0 = performance.now();
    while (times.length < opts.warmupCalls || performance.now() - t0 < opts.warmupMs) {
      times.push(await timedCall(p));
      // one call of a slow implementation is warm-up enough
      if (times.length >= 2 && times[times.length - 1] > opts.warmupMs) break;
    }
    est.set(p.name, summarize(times).median);
  }
  const reps = new Map();
  let roundCost = 0;
  for (const p of peers) {
    const t = est.get(p.name);
    const n = Math.max(1, Math.min(opts.maxCallsPerSlot ?? 200, Math.round(opts.slotMs / t)));
    reps.set(p.name, n);
    roundCost += n * t;
  }
  const rounds = Math.max(opts.minRounds, Math.min(opts.maxRounds, Math.floor(opts.budgetMs / roundCost)));
  log(`${rounds} rounds x ~${roundCost.toFixed(0)} ms (calls per round: ${peers
    .map((p) => `${p.name} ${reps.get(p.name)}`)
    .join(', ')})`);
  const samples = new Map(peers.map((p) => [p.name, []]));
  const cpuSamples = new Map(peers.map((p) => [p.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < peers.length; i++) {
      const p = peers[(i + r) % peers.length];
      const out = samples.get(p.name);
      const cpu = cpuSamples.get(p.name);
      for (let k = reps.get(p.name); k > 0; k--) out.push(await timedCall(p, cpu));
    }
    onRound(r + 1, rounds);
  }
  return { samples, cpuSamples, rounds };
}
