// The live benchmark's threaded rows: a workload's forward on one of our
// threaded builds (createAttentionModule({ threads })), as a benchmark
// implementation of web/bench-kit/timing.js. Started from the benchmark's
// own worker: the module's N - 1 workers are nested workers of it, and a
// call blocks that worker (never the page) until they finish. Each row has a
// module of its own, ended with the row (dispose), so that picking another
// thread count next time leaves no idle workers behind.
import { createAttentionModule } from '../../index.js';
import { variantName } from '../../bench-kit/ours.js';

/**
 * { name, kernels, threads, run, dispose } for the workload `data` on
 * `threads` threads of the relaxed-SIMD build (relaxed: true) or the SIMD
 * build. `threads` is given explicitly, so a page where threads cannot run
 * rejects with the reason instead of timing one thread.
 */
export async function createThreaded(data, { relaxed, threads }) {
  const sa = await createAttentionModule({ simd: true, relaxedSimd: relaxed, threads });
  await sa.threadsReady; // timed on all its threads
  try {
    const { d, heads, tq, tk, cross, causal } = data;
    const mha = new sa.MultiHeadAttention({ dModel: d, numHeads: heads });
    mha.setWeights({
      wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
      bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo,
    });
    const query = { data: data.xq, shape: [1, tq, d] };
    const kv = cross ? { data: data.xkv, shape: [1, tk, d] } : undefined;
    const options = { causal };
    return {
      name: variantName({ simd: true, relaxed, backend: sa.backend, threads: sa.threads }),
      kernels: mha.kernels,
      threads: sa.threads,
      run() {
        return mha.forward(query, kv, undefined, options).output.data;
      },
      dispose() {
        mha.dispose();
        sa.dispose();
      },
    };
  } catch (e) {
    sa.dispose();
    throw e;
  }
}
