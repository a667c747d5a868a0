// Prefill with int8 weights: S2 and C1 (or the workloads given) through ours
// with int8 and float32 weights, on the SIMD and relaxed-SIMD builds
// (highway), against onnxruntime-web's int8 graph (DynamicQuantizeLinear +
// MatMulInteger, the faster of its two int8 paths) and its float32 contrib
// graph, one thread, interleaved. Every output is checked first against
// the first float32 output (ours; natively onnxruntime-node's): float32
// within 1e-3, int8 within its bound (storage.js).
// What `npm run bench` measures on the same rows, without the rest of its
// run; the least of the calls beside the median, since a busy machine
// stretches some calls.
//
//   bash scripts/node-wasm.sh bench/js/tools/int8_prefill.js [--workloads S2,C1] [--budget S]
//   node bench/js/tools/int8_prefill.js --native [--workloads S2,C1] [--budget S]
//
// --native: onnxruntime-node's int8 and float32 graphs instead (CPU
// execution provider, one thread; alone in this process, as onnxruntime-web
// and -node never share one), to set beside
// build/native/bench/weight_types_bench, ours natively.
//
// Needs the package built (scripts/build.sh wasm wasm-relaxed package, or
// SA_BENCH_WEB_DIR=copy of web/) and the peers (npm ci --prefix bench).
import { createRequire } from 'node:module';
import os from 'node:os';
import { WORKLOADS, makeData } from '../../../web/bench-kit/workloads.js';
import { interleave, maxAbsDiff, summarize } from '../../../web/bench-kit/timing.js';
import { createOurs, loadPackage, variantName } from '../../../web/bench-kit/ours.js';
import { createOrtNodeSession } from '../peers/ortnode.js';
import { createOrtWeb, GRAPHS } from '../peers/ortweb.js';
import { PRODUCTS, checkStored } from '../storage.js';

const TOLERANCE = 1e-3;

function parseArgs(argv) {
  const a = { workloads: ['S2', 'C1'], budget: 40, native: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--workloads') a.workloads = argv[++i].split(',');
    else if (k === '--budget') a.budget = Number(argv[++i]);
    else if (k === '--native') a.native = true;
    else throw new Error(`unknown option ${k} (--workloads LIST, --budget S, --native)`);
  }
  return a;
}

// onnxruntime-node on a workload's `graph`, as a peer.
async function ortNode(ort, data, graph) {
  const { session, feeds } = await createOrtNodeSession(ort, data, graph);
  return {
    name: `ort-node ${GRAPHS[graph]}`,
    async run() {
      return (await session.run(feeds)).output.data;
    },
    async dispose() {
      await session.release();
    },
  };
}

const args = parseArgs(process.argv.slice(2));
const relaxed = !args.native && (await loadPackage()).wasmRelaxedSimdSupported();
console.error(`int8 prefill; CPU ${os.cpus()[0]?.model}; relaxed SIMD ${relaxed ? 'on' : 'off'}`);
const builds = args.native ? [] : [{}, ...(relaxed ? [{ relaxed: true }] : [])];
const ort = args.native ? createRequire(import.meta.url)('onnxruntime-node') : null;
const peer = (data, graph) => (args.native ? ortNode(ort, data, graph) : createOrtWeb(data, graph));

for (const name of args.workloads) {
  const w = WORKLOADS.find((x) => x.name === name);
  if (!w) throw new Error(`--workloads: no workload ${name}`);
  const data = makeData(w);
  const entries = [];
  for (const build of builds) {
    for (const weights of [undefined, 'int8']) {
      const variant = { simd: true, backend: 'highway', ...build, weights };
      entries.push({ peer: await createOurs(data, variant), ours: true, build, weights,
        name: variantName(variant) });
    }
  }
  entries.push({ peer: await peer(data, 'contrib') });
  entries.push({ peer: await peer(data, 'integer'), weights: 'int8', products: PRODUCTS.ortInt8 });
  const reference = await entries[0].peer.run();
  for (const e of entries) {
    e.name ??= e.peer.name;
    const out = await e.peer.run();
    if (!e.weights) {
      e.maxAbsDiff = maxAbsDiff(out, reference);
      if (!(e.maxAbsDiff <= TOLERANCE)) e.error = `output differs from ours in float32 by ${e.maxAbsDiff}`;
    } else {
      Object.assign(e, checkStored(e.name, 'int8', e.products ?? PRODUCTS.weights, out, reference));
    }
    if (e.error) console.error(`${name} ${e.name}: ${e.error}`);
  }
  const timed = entries.filter((x) => !x.error);
  const { samples } = await interleave(timed.map((e) => ({ name: e.name, run: () => e.peer.run() })), {
    warmupMs: 300, warmupCalls: 3, slotMs: 100, budgetMs: args.budget * 1000, minRounds: 5,
    maxRounds: 60,
  }, { log: (s) => console.error(`${name}: ${s}`) });
  const median = (e) => summarize(samples.get(e.name)).median;
  const least = (e) => Math.min(...samples.get(e.name));
  const oursF32 = (build) => entries.find((e) => e.ours && e.build === build && !e.weights);
  const ortInt8 = entries.find((e) => !e.ours && e.weights === 'int8');
  const ortF32 = entries.find((e) => !e.ours && !e.weights);
  const peerName = args.native ? 'ort-node' : 'ort-web';
  const ratio = (a, b, f) => (b && !b.error ? `${(f(b) / f(a)).toFixed(2)}x` : '');
  console.log(`\n| ${name} | median ms | least ms | vs ours f32 (same build) | vs ${peerName} int8 | ` +
    `vs ${peerName} fp32 | max abs diff from the reference |`);
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const e of entries) {
    if (e.error) {
      console.log(`| ${e.name} | ${e.error} ||||||`);
      continue;
    }
    const both = (b) => (b ? `${ratio(e, b, median)} (${ratio(e, b, least)})` : '');
    console.log(`| ${e.name} | ${median(e).toFixed(2)} | ${least(e).toFixed(2)} | ` +
      `${e.ours && e.weights ? both(oursF32(e.build)) : ''} | ${both(ortInt8)} | ${both(ortF32)} | ` +
      `${e.maxAbsDiff.toExponential(1)} |`);
  }
  for (const e of entries) await e.peer.dispose();
}
console.log(`\nload average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}; ratios by medians (by the least)`);
