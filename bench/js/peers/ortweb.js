// onnxruntime-web, wasm execution provider, on one thread (SA_BENCH_THREADS
// threads in the threads run of run.js: its setting is per process), on
// graphs built in memory (bench/js/onnx.js): the com.microsoft
// MultiHeadAttention contrib op between MatMul/Add projections, the plain
// MatMul/Softmax graph, and for the storage types the contrib graph with
// int8 projections (MatMulInteger or MatMulNBits), 4-bit ones (MatMulNBits)
// or in float16.
import { pathToFileURL } from 'node:url';
import { mhaContribModel, plainModel } from '../onnx.js';
import { int8Weights } from '../int8.js';
import { q4Weights } from '../q4.js';
import { once, packageDir } from './loading.js';

// Threads of this process's onnxruntime-web and onnxruntime-node sessions.
export const PEER_THREADS = Number(process.env.SA_BENCH_THREADS ?? 1);

export const loadOrt = once(async () => {
  const ort = await import('onnxruntime-web');
  // The .mjs/.wasm pair next to the package.
  ort.env.wasm.wasmPaths = pathToFileURL(packageDir('onnxruntime-web')).href;
  ort.env.wasm.numThreads = PEER_THREADS;
  ort.env.wasm.proxy = false;
  ort.env.logLevel = 'error';
  return ort;
});

export function ortFeeds(ort, data, graph) {
  const { d, tq, tk, heads: H, cacheLen } = data;
  const feeds = { query: new ort.Tensor('float32', data.xq, [1, tq, d]) };
  if (data.cross) feeds.kv = new ort.Tensor('float32', data.xkv, [1, tk, d]);
  if (cacheLen > 0) {
    if (graph !== 'plain') {
      feeds.past_key = new ort.Tensor('float32', data.pastKHeads, [1, H, cacheLen, d / H]);
      feeds.past_value = new ort.Tensor('float32', data.pastVHeads, [1, H, cacheLen, d / H]);
    } else {
      feeds.past_key = new ort.Tensor('float32', data.pastK, [1, cacheLen, d]);
      feeds.past_value = new ort.Tensor('float32', data.pastV, [1, cacheLen, d]);
    }
  }
  return feeds;
}

// Each graph's implementation name, after its runtime's ('ort-web', 'ort-node').
export const GRAPHS = {
  contrib: 'MHA op',
  plain: 'plain',
  integer: 'int8 MatMulInteger',
  nbits: 'int8 MatMulNBits',
  nbits4: 'q4 MatMulNBits',
  fp16: 'fp16 MHA op',
};

/** The graphs of storage types, and the type each holds its weights in. */
export const TYPED_GRAPHS = { integer: 'int8', nbits: 'int8', fp16: 'f16' };

export function buildModel(data, graph) {
  if (graph === 'plain') return plainModel(data);
  if (graph === 'contrib') return mhaContribModel(data);
  if (graph === 'fp16') return mhaContribModel(data, { form: 'fp16' });
  if (graph === 'nbits4') return mhaContribModel({ ...data, q4: q4Weights(data) }, { form: graph });
  return mhaContribModel({ ...data, int8: int8Weights(data) }, { form: graph });
}

/** graph: a key of GRAPHS */
export async function createOrtWeb(data, graph) {
  const ort = await loadOrt();
  const session = await ort.InferenceSession.create(buildModel(data, graph), {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: PEER_THREADS,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  const feeds = ortFeeds(ort, data, graph);
  return {
    name: `ort-web ${GRAPHS[graph]}`,
    async run() {
      const r = await session.run(feeds);
      const out = r.output.data;
      for (const t of Object.values(r)) t.dispose?.();
      return out;
    },
    async dispose() {
      await session.release();
    },
  };
}
