// The live benchmark's "pool, N workers" row: a workload's forward on a
// worker pool of the package (createAttentionPool), the heads split over its
// workers, as a benchmark implementation of web/bench-kit/timing.js, whose
// run() may return a promise. Started from the benchmark's own worker: the
// pool's workers are nested workers of it.
import { createAttentionPool } from '../../index.js';

/** { name, kernels, run, dispose } for the workload `data` on a pool of `workers`. */
export async function createPooled(data, workers) {
  const pool = await createAttentionPool({ workers });
  try {
    const { d, heads, tq, tk, cross, causal } = data;
    const mha = await pool.MultiHeadAttention({ dModel: d, numHeads: heads });
    await mha.setWeights({
      wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
      bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo,
    });
    const query = { data: data.xq, shape: [1, tq, d] };
    const kv = cross ? { data: data.xkv, shape: [1, tk, d] } : undefined;
    return {
      name: `pool, ${workers} ${workers === 1 ? 'worker' : 'workers'}`,
      kernels: `${pool.kernels} \u00d7 ${workers}`,
      async run() {
        return (await mha.forward(query, kv, undefined, { causal })).output.data;
      },
      dispose: () => pool.dispose(),
    };
  } catch (e) {
    await pool.dispose();
    throw e;
  }
}
