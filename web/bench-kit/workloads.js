// The workloads (workloads.json, the one list of names and shapes), their
// FLOP count, and their deterministic weights and inputs. Runs in Node and
// in a browser (page or worker): the list is read from the file next to this
// module, with fs under Node (whose fetch has no file: URLs), fetch elsewhere.

async function readJson(url) {
  if (url.protocol === 'file:') {
    const { readFile } = await import('node:fs/promises');
    return JSON.parse(await readFile(url, 'utf8'));
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}

const list = await readJson(new URL('./workloads.json', import.meta.url));

/**
 * [{name, kind: 'self'|'cross'|'decode', d, heads, tq, tk, causal, cacheLen,
 * cross, oursOnly}], in the order of workloads.json.
 */
export const WORKLOADS = list.workloads.map((w) => ({
  ...w,
  cross: w.kind === 'cross',
  cacheLen: w.cacheLen ?? 0,
  oursOnly: w.oursOnly ?? false,
}));

/**
 * The formula of workloads.json ("flops"), also implemented by
 * WorkloadFlops in bench/workloads.h: 2mnk for the four projections and the
 * two attention products (QK^T, PV), as if every score were computed (so
 * causal work saved shows as more GFLOP/s); a decode step projects only the
 * new token.
 */
export function workloadFlops(w) {
  const { d, tq, tk } = w;
  const projectedKv = tk - (w.cacheLen ?? 0);
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
 * The weights and inputs of one workload. For a decode step also the
 * projected cache (pastK/pastV [cacheLen, d], i.e. K = Xpast W_K + b_K for a
 * random Xpast) and its per-head layout [H, cacheLen, dh] for onnxruntime's
 * contrib op.
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

// X [m, k] @ W [k, n] + b (double accumulation; setup and references only).
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
