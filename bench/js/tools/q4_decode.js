// Decoding with 4-bit weights: D1 (or the workloads given) through ours with
// q4 weights given as their blocks (with a float32, a float16 and an int8
// cache) and with float32 weights, on the SIMD and relaxed-SIMD builds (highway),
// against onnxruntime-web's contrib graph with MatMulNBits 4-bit projections
// holding the same blocks (bench/js/q4.js) and its float32 contrib graph, one
// thread, interleaved. Every output is checked first against ours in
// float32: float32 within 1e-3, q4 within its bound (storage.js; onnxruntime's
// MatMulNBits at accuracy_level 4 also rounds each activation block to int8,
// counted as its int8 graphs are), and ours given the blocks bit-identical to
// ours given the float32 weights they hold. Median and least ms, and ratios.
//
//   bash scripts/node-wasm.sh bench/js/tools/q4_decode.js [--workloads D1] [--budget S]
//
// Needs the package built (scripts/build.sh wasm wasm-relaxed package, or
// SA_BENCH_WEB_DIR=copy of web/) and the peers (npm ci --prefix bench).
import os from 'node:os';
import { WORKLOADS, makeData } from '../../../web/bench-kit/workloads.js';
import { maxAbsDiff } from '../../../web/bench-kit/timing.js';
import { createOurs, loadPackage, variantName } from '../../../web/bench-kit/ours.js';
import { dequantizeQ4 } from '../../../web/src/quantized-weights.js';
import { createOrtWeb } from '../peers/ortweb.js';
import { q4Weights } from '../q4.js';
import { PRODUCTS } from '../storage.js';
import { checkEntries, oursFloat32Column, printLoadAverage, timeAndTabulate }
  from './stored_rows.js';

function parseArgs(argv) {
  const a = { workloads: ['D1'], budget: 40 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--workloads') a.workloads = argv[++i].split(',');
    else if (k === '--budget') a.budget = Number(argv[++i]);
    else throw new Error(`unknown option ${k} (--workloads LIST, --budget S)`);
  }
  return a;
}

const args = parseArgs(process.argv.slice(2));
const relaxed = (await loadPackage()).wasmRelaxedSimdSupported();
console.error(`q4 decoding; CPU ${os.cpus()[0]?.model}; relaxed SIMD ${relaxed ? 'on' : 'off'}`);
const builds = [{}, ...(relaxed ? [{ relaxed: true }] : [])];

for (const name of args.workloads) {
  const w = WORKLOADS.find((x) => x.name === name);
  if (!w) throw new Error(`--workloads: no workload ${name}`);
  const data = makeData(w);
  const blocks = q4Weights(data);
  const held = Object.fromEntries(Object.entries(blocks).map(([m, b]) =>
    [m, dequantizeQ4(b.q4, data.d, data.d)]));
  const entries = [];
  for (const build of builds) {
    const variant = { simd: true, backend: 'highway', ...build };
    entries.push({ peer: await createOurs(data, variant), ours: true, build,
      name: variantName(variant) });
    for (const cacheType of [undefined, 'f16', 'int8']) {
      const q4 = { ...variant, weights: 'q4', cacheType };
      const e = { peer: await createOurs({ ...data, ...blocks }, q4), ours: true, build,
        weights: 'q4', products: PRODUCTS.weights + (cacheType ? PRODUCTS.cache : 0),
        name: variantName(q4) };
      // The same object given the float32 weights the blocks hold.
      const fromFloats = await createOurs({ ...data, ...held }, q4);
      const [a, b] = [await e.peer.run(), await fromFloats.run()];
      if (maxAbsDiff(a, b) !== 0) e.error = 'the blocks given differ from their float32 weights';
      await fromFloats.dispose();
      entries.push(e);
    }
  }
  entries.push({ peer: await createOrtWeb(data, 'contrib') });
  entries.push({ peer: await createOrtWeb(data, 'nbits4'), weights: 'q4',
    products: PRODUCTS.ortInt8 });
  await checkEntries(name, entries, await entries[0].peer.run());
  await timeAndTabulate(name, entries, args.budget, [
    oursFloat32Column(entries),
    { title: 'vs ort-web q4 MatMulNBits',
      against: () => entries.find((e) => !e.ours && e.weights) },
    { title: 'vs ort-web fp32', against: () => entries.find((e) => !e.ours && !e.weights) },
  ], 3);
  for (const e of entries) await e.peer.dispose();
}
printLoadAverage();
