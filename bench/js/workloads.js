// The workloads of issue 5 (fp32, batch 1, weights [d_model, d_model]),
// mirrored from bench/workloads.h plus D1 (decode step with a KV cache) and
// L1 (long causal self-attention, ours only), and their inputs.

export const WORKLOADS = [
  { name: 'S1', kind: 'self', d: 512, heads: 8, tq: 10, tk: 10, causal: false },
  { name: 'S2', kind: 'self', d: 768, heads: 12, tq: 128, tk: 128, causal: false },
  { name: 'S3', kind: 'self', d: 768, heads: 12, tq: 128, tk: 128, causal: true },
  { name: 'S4', kind: 'self', d: 384, heads: 6, tq: 512, tk: 512, causal: false },
  { name: 'S4c', kind: 'self', d: 384, heads: 6, tq: 512, tk: 512, causal: true },
  { name: 'C1', kind: 'cross', d: 512, heads: 8, tq: 32, tk: 256, causal: false },
  // 512 cached (already projected) keys/values + the new token's.
  { name: 'D1', kind: 'decode', d: 768, heads: 12, tq: 1, tk: 513, cacheLen: 512, causal: false },
  { name: 'L1', kind: 'self', d: 256, heads: 4, tq: 16384, tk: 16384, causal: true, oursOnly: true },
].map((w) => ({ ...w, cross: w.kind === 'cross', cacheLen: w.cacheLen ?? 0 }));

/**
 * 2mnk for the four projections and the two attention products (QK^T, PV),
 * as if every score were computed (so causal work saved shows as more
 * GFLOP/s). The decode step projects only the new token.
 */
export function workloadFlops(w) {
  const { d, tq, tk } = w;
  const projectedKv = w.kind === 'decode' ? tq : tk;
  return 2 * tq * d * d * 2 + 2 * projectedKv * d * d * 2 + 2 * 2 * tq * tk * d;
}

// Deterministic uniform [-scale, scale) values (xorshift32).
export function randomVector(n, scale, seed) {
  let s = (seed * 2654435761) >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = ((s / 4294967296) * 2 - 1) * scale;
  }
  return out;
}

/**
 * The weights and inputs of one workload. For D1 also the projected cache
 * (pastK/pastV [cacheLen, d], i.e. K = Xpast W_K + b_K for a random Xpast)
 * and its per-head layout [H, cacheLen, dh] for the contrib op.
 */
export function makeData(w) {
  const { d } = w;
  const s = 1 / Math.sqrt(d);
  const data = {
    ...w,
    wq: randomVector(d * d, s, 1),
    wk: randomVector(d * d, s, 2),
    wv: randomVector(d * d, s, 3),
    wo: randomVector(d * d, s, 4),
    bq: randomVector(d, 0.1, 5),
    bk: randomVector(d, 0.1, 6),
    bv: randomVector(d, 0.1, 7),
    bo: randomVector(d, 0.1, 8),
    xq: randomVector(w.tq * d, 1, 9),
    xkv: w.cross ? randomVector(w.tk * d, 1, 10) : null,
  };
  if (w.cacheLen > 0) {
    const xpast = randomVector(w.cacheLen * d, 1, 11);
    data.xpast = xpast;
    data.pastK = linear(xpast, w.cacheLen, d, data.wk, data.bk);
    data.pastV = linear(xpast, w.cacheLen, d, data.wv, data.bv);
    data.pastKHeads = toHeads(data.pastK, w.cacheLen, w.heads, d);
    data.pastVHeads = toHeads(data.pastV, w.cacheLen, w.heads, d);
  }
  return data;
}

// X [m, k] @ W [k, n] + b (double accumulation; setup only).
export function linear(x, m, k, wt, b, n = k) {
  const out = new Float32Array(m * n);
  const acc = new Float64Array(n);
  for (let i = 0; i < m; i++) {
    acc.set(b);
    for (let p = 0; p < k; p++) {
      const a = x[i * k + p];
      const row = p * n;
      for (let j = 0; j < n; j++) acc[j] += a * wt[row + j];
    }
    out.set(acc, i * n);
  }
  return out;
}

// [T, H*dh] -> [H, T, dh]
export function toHeads(x, t, heads, d) {
  const dh = d / heads;
  const out = new Float32Array(t * d);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < t; i++) {
      out.set(x.subarray(i * d + h * dh, i * d + h * dh + dh), (h * t + i) * dh);
    }
  }
  return out;
}
