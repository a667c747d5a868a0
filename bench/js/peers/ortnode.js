// onnxruntime-node, CPU execution provider, PEER_THREADS intra-op threads
// (SA_BENCH_THREADS in the threads run) and 1 inter-op thread, on the graphs
// onnxruntime-web runs (ortweb.js): what bench/js/native_ort.js times and
// bench/js/tools/ort_node_loop.js profiles.
import { buildModel, ortFeeds, PEER_THREADS } from './ortweb.js';

// A session of `ort` (onnxruntime-node) on workload data's `graph`
// (a key of ortweb.js's GRAPHS), and its inputs.
export async function createOrtNodeSession(ort, data, graph) {
  const session = await ort.InferenceSession.create(buildModel(data, graph), {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: PEER_THREADS,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  });
  return { session, feeds: ortFeeds(ort, data, graph) };
}
