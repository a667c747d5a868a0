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
import { createOurs, loadPackage, variantName } from '../../../web/bench-kit/ours.js';
import { createOrtNodeSession } from '../peers/ortnode.js';
import { createOrtWeb, GRAPHS } from '../peers/ortweb.js';
import { PRODUCTS } from '../storage.js';
import { checkEntries, oursFloat32Column, printLoadAverage, timeAndTabulate }
  from './stored_rows.js';

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
  await checkEntries(name, entries, await entries[0].peer.run());
  const peerName = args.native ? 'ort-node' : 'ort-web';
  await timeAndTabulate(name, entries, args.budget, [
    oursFloat32Column(entries),
    { title: `vs ${peerName} int8`, against: () => entries.find((e) => !e.ours && e.weights) },
    { title: `vs ${peerName} fp32`, against: () => entries.find((e) => !e.ours && !e.weights) },
  ]);
  for (const e of entries) await e.peer.dispose();
}
printLoadAverage();
