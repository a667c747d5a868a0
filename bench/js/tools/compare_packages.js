// Two copies of the package, one interleaved run: whether a change moved the
// speed of the attention workloads (a refactoring should not). Each copy is
// a web/ folder with its dist/ built (e.g. a worktree of the commit before
// the change, `target=sa_js_module bash scripts/build.sh wasm-relaxed wasm
// package` there).
//
//   node --experimental-wasm-relaxed-simd bench/js/tools/compare_packages.js \
//     BEFORE_WEB_DIR AFTER_WEB_DIR [S2,C1,D1] [budget seconds per workload, 20] \
//     [weights[+cache type], e.g. q4 or q4+f16; f32]
//
// Per workload and build (relaxed SIMD, SIMD; one thread, the weights' type),
// both copies' outputs are compared first (max abs diff), then timed in
// rounds that alternate them; prints each median and after/before.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { interleave, maxAbsDiff, summarize } from '../../../web/bench-kit/timing.js';
import { makeData, WORKLOADS } from '../../../web/bench-kit/workloads.js';

const [beforeDir, afterDir, list = 'S2,C1,D1', budget = '20', stored = 'f32'] =
  process.argv.slice(2);
if (!beforeDir || !afterDir) {
  console.error('usage: compare_packages.js BEFORE_WEB_DIR AFTER_WEB_DIR [S2,C1,D1] [seconds] ' +
    '[weights[+cache]]');
  process.exit(2);
}
const [weights, cacheType] = stored.split('+');
const load = (dir) => import(pathToFileURL(path.resolve(dir, 'index.js')).href);
const copies = [['before', await load(beforeDir)], ['after', await load(afterDir)]];
const BUILDS = [['relaxed', { relaxedSimd: true }], ['simd', { simd: true, relaxedSimd: false }]];

// One workload on one module, as bench-kit/ours.js sets it up: weights and
// inputs resident; a decoding step truncates its cache back after each call.
function setUp(sa, data) {
  const { d, heads, tq, tk, cross, causal, cacheLen } = data;
  const mha = new sa.MultiHeadAttention({ dModel: d, numHeads: heads, weights, cacheType });
  mha.setWeights({ wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
    bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo });
  if (cacheLen > 0) {
    const cache = mha.createKVCache({ batch: 1, maxLength: cacheLen + 1 });
    mha.forwardIncremental({ data: data.xpast, shape: [1, cacheLen, d] }, cache);
    const x = { data: data.xq, shape: [1, 1, d] };
    return {
      run() {
        const out = mha.forwardIncremental(x, cache).output.data;
        cache.truncate(cacheLen);
        return out;
      },
      dispose() { cache.dispose(); mha.dispose(); },
    };
  }
  const query = { data: data.xq, shape: [1, tq, d] };
  const kv = cross ? { data: data.xkv, shape: [1, tk, d] } : undefined;
  return {
    run: () => mha.forward(query, kv, undefined, { causal }).output.data,
    dispose: () => mha.dispose(),
  };
}

const opts = { warmupMs: 300, warmupCalls: 3, slotMs: 40, budgetMs: Number(budget) * 1000,
  minRounds: 10, maxRounds: 400 };
console.log(`weights ${weights}, cache ${cacheType ?? 'f32'}`);
console.log('| workload | build | before ms | after ms | after / before | max abs diff |');
console.log('|---|---|---:|---:|---:|---:|');
for (const name of list.split(',')) {
  const w = WORKLOADS.find((x) => x.name === name);
  if (!w) throw new Error(`no workload ${name}`);
  const data = makeData(w);
  for (const [build, options] of BUILDS) {
    const peers = [];
    for (const [label, pkg] of copies) {
      const sa = await pkg.createAttentionModule({ ...options, threads: 1 });
      peers.push({ name: label, ...setUp(sa, data) });
    }
    const diff = maxAbsDiff(peers[0].run(), peers[1].run());
    const { samples } = await interleave(peers, opts);
    const [b, a] = peers.map((p) => summarize(samples.get(p.name)).median);
    for (const p of peers) p.dispose();
    console.log(`| ${name} | ${build} | ${b.toFixed(3)} | ${a.toFixed(3)} | ` +
      `${(a / b).toFixed(3)} | ${diff.toExponential(1)} |`);
  }
}
