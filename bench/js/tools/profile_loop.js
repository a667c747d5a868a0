// Runs one implementation on one workload in a loop, for profiling:
//   node --cpu-prof --cpu-prof-dir=DIR bench/js/tools/profile_loop.js IMPL WORKLOAD [SECONDS] [PKG_DIR]
// IMPL: ours-highway | ours-xsimd | ours-scalar | ours-nosimd | ort-contrib |
//       ort-plain | tfjs | plainjs. PKG_DIR: a copy of web/ whose dist/ holds
// a build linked with --profiling-funcs (wasm function names in the profile).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { WORKLOADS, makeData } from '../../../web/bench-kit/workloads.js';

const [impl, name, seconds = '8', pkgDir] = process.argv.slice(2);
const w = WORKLOADS.find((x) => x.name === name);
if (!w || !impl) {
  console.error('usage: profile_loop.js IMPL WORKLOAD [SECONDS] [PKG_DIR]');
  process.exit(2);
}
const data = makeData(w);
let peer;
if (impl.startsWith('ours')) {
  const indexUrl = pkgDir ? pathToFileURL(path.resolve(pkgDir, 'index.js')).href : '../../../web/index.js';
  const { createAttentionModule } = await import(indexUrl);
  // ours-scalar runs in the non-SIMD build, the one that has that backend.
  const simd = impl !== 'ours-nosimd' && impl !== 'ours-scalar';
  const mod = await createAttentionModule({ simd });
  const backend = impl === 'ours-nosimd' ? mod.backend : impl.slice(5);
  const mha = new mod.MultiHeadAttention({ dModel: w.d, numHeads: w.heads, backend });
  mha.setWeights({ wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
    bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo });
  const q = { data: data.xq, shape: [1, w.tq, w.d] };
  const kv = w.cross ? { data: data.xkv, shape: [1, w.tk, w.d] } : undefined;
  peer = { run: () => mha.forward(q, kv, undefined, { causal: w.causal }).output.data };
} else if (impl.startsWith('ort')) {
  const { createOrtWeb } = await import('../peers/ortweb.js');
  peer = await createOrtWeb(data, impl === 'ort-contrib' ? 'contrib' : 'plain');
} else if (impl === 'tfjs') {
  const { createTfjs } = await import('../peers/tfjs.js');
  peer = await createTfjs(data);
} else {
  const { createPlainJs } = await import('../../../web/bench-kit/plainjs.js');
  peer = await createPlainJs(data);
}
const t0 = performance.now();
const times = [];
while (performance.now() - t0 < Number(seconds) * 1000) {
  const t = performance.now();
  await peer.run();
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
console.log(`${impl} ${name}: ${times.length} calls, median ${times[times.length >> 1].toFixed(3)} ms, min ${times[0].toFixed(3)} ms`);
process.exit(0);
