// A decoding step through a stack of attentions, each with its own weights
// and 512-token KV cache (D1's shape: d_model 768, 12 heads): what a model
// of that many layers reads per token. D1 alone repeats one attention, whose
// 12.6 MB stay in the L3 between calls, so it is bound by instructions; a
// stack of 12 (151 MB in float32, BERT-base's and GPT-2 small's depth)
// streams every byte from DRAM on each step, as decoding a real model does.
// Ours per storage type (SIMD build, highway; the relaxed-SIMD build too
// where the engine runs it) against onnxruntime-web's float32 contrib graph
// and its int8 MatMulInteger graph, one session per layer, interleaved.
// Every layer holds the same values, so each step's output is checked
// against one float32 attention: ours in float32 and onnxruntime's float32
// within 1e-3, the stored types within their bound (storage.js).
//
//   bash scripts/node-wasm.sh bench/js/tools/decode_stack.js [--layers N] [--budget S] [--quick]
//     [--types f32,f16,bf16,int8,f16+cache,bf16+cache,int8+f16cache,q4,q4+f16cache]
//     [--builds simd,relaxed]
//
// Needs the package built (scripts/build.sh wasm wasm-relaxed package, or
// SA_BENCH_WEB_DIR=copy of web/) and the peers (npm ci --prefix bench).
import os from 'node:os';
import { WORKLOADS, makeData } from '../../../web/bench-kit/workloads.js';
import { interleave, maxAbsDiff, summarize } from '../../../web/bench-kit/timing.js';
import { createOurs, loadPackage, oursModule, variantName } from '../../../web/bench-kit/ours.js';
import { createOrtWeb, GRAPHS } from '../peers/ortweb.js';
import { PRODUCTS, checkStored } from '../storage.js';

const TOLERANCE = 1e-3;

function parseArgs(argv) {
  const a = { layers: 12, budget: 60, quick: false, types: null, builds: ['simd', 'relaxed'] };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--layers') a.layers = Number(argv[++i]);
    else if (k === '--budget') a.budget = Number(argv[++i]);
    else if (k === '--quick') a.quick = true;
    else if (k === '--types') a.types = argv[++i].split(',');
    else if (k === '--builds') a.builds = argv[++i].split(',');
    else throw new Error(`unknown option ${k} (--layers N, --budget S, --quick, --types LIST, --builds LIST)`);
  }
  if (!(Number.isInteger(a.layers) && a.layers >= 1)) throw new Error(`--layers: expected an integer >= 1, got ${a.layers}`);
  return a;
}

// Our storage types here: D1's rows of the storage table, and int8 and q4
// weights with a float16 cache, the fewest bytes per step.
const TYPES = [
  { label: 'f32' },
  { weights: 'f16', label: 'f16' },
  { weights: 'bf16', label: 'bf16' },
  { weights: 'int8', label: 'int8' },
  { weights: 'f16', cacheType: 'f16', label: 'f16+cache' },
  { weights: 'bf16', cacheType: 'bf16', label: 'bf16+cache' },
  { weights: 'int8', cacheType: 'f16', label: 'int8+f16cache' },
  { weights: 'q4', label: 'q4' },
  { weights: 'q4', cacheType: 'f16', label: 'q4+f16cache' },
];

// Weight and cache bytes a module's objects hold (memoryStats), summed over types.
function heldBytes(mod) {
  const s = mod.memoryStats();
  const sum = (o) => Object.values(o ?? {}).reduce((a, b) => a + b, 0);
  return sum(s.weightBytes) + sum(s.cacheBytes);
}

// N instances of one implementation as one: run() steps every layer in turn
// and returns the last layer's output.
function stack(name, layers) {
  return {
    name,
    async run() {
      let out;
      for (const l of layers) {
        const r = l.run();
        out = r && typeof r.then === 'function' ? await r : r;
      }
      return out;
    },
    async dispose() {
      for (const l of layers) await l.dispose();
    },
  };
}

async function oursStack(data, variant, label, n) {
  const mod = await oursModule(variant.simd, variant.relaxed);
  const before = heldBytes(mod);
  const layers = [];
  for (let i = 0; i < n; i++) layers.push(await createOurs(data, variant));
  const build = variantName({ ...variant, weights: undefined, cacheType: undefined });
  return { peer: stack(`${build}, ${label}`, layers), bytes: heldBytes(mod) - before };
}

async function ortStack(data, graph, n) {
  const layers = [];
  for (let i = 0; i < n; i++) layers.push(await createOrtWeb(data, graph));
  return { peer: stack(`ort-web ${GRAPHS[graph]}`, layers), bytes: null };
}

const args = parseArgs(process.argv.slice(2));
const w = WORKLOADS.find((x) => x.name === 'D1');
const data = makeData(w);
const relaxed = (await loadPackage()).wasmRelaxedSimdSupported();
console.error(`decode step through ${args.layers} attentions of D1's shape (d ${w.d}, ${w.heads} heads, ` +
  `${w.cacheLen} cached tokens); CPU ${os.cpus()[0]?.model}; relaxed SIMD ${relaxed ? 'on' : 'off'}`);

const entries = [];
const builds = [];
if (args.builds.includes('simd')) builds.push({});
if (args.builds.includes('relaxed') && relaxed) builds.push({ relaxed: true });
for (const build of builds) {
  for (const t of TYPES.filter((x) => !args.types || args.types.includes(x.label))) {
    const variant = { simd: true, backend: 'highway', ...build, weights: t.weights, cacheType: t.cacheType };
    entries.push({ ...(await oursStack(data, variant, t.label, args.layers)), type: t, ours: true, build });
  }
}
entries.push({ ...(await ortStack(data, 'contrib', args.layers)), type: { label: 'f32' } });
entries.push({ ...(await ortStack(data, 'integer', args.layers)), type: { label: 'int8', weights: 'int8' },
  products: PRODUCTS.ortInt8 });

// Outputs, checked before any timing.
const single = await createOurs(data, { simd: true, backend: 'highway' });
const reference = single.run();
single.dispose();
for (const e of entries) {
  const out = await e.peer.run();
  if (!e.type.weights) {
    e.maxAbsDiff = maxAbsDiff(out, reference);
    if (!(e.maxAbsDiff <= TOLERANCE)) e.error = `output differs from ours in float32 by ${e.maxAbsDiff}`;
  } else {
    const products = e.products ?? PRODUCTS.weights + (e.type.cacheType ? PRODUCTS.cache : 0);
    Object.assign(e, checkStored(e.peer.name, e.type.weights, products, out, reference));
  }
  if (e.error) console.error(`${e.peer.name}: ${e.error}`);
}

const timed = entries.filter((e) => !e.error);
const budget = (args.quick ? 15 : args.budget) * 1000;
const { samples, cpuSamples } = await interleave(timed.map((e) => e.peer), {
  warmupMs: 0, warmupCalls: 2, slotMs: 0, budgetMs: budget, minRounds: args.quick ? 3 : 7,
  maxRounds: args.quick ? 5 : 25, maxCallsPerSlot: 1,
}, { log: (s) => console.error(s) });

const median = (e) => summarize(samples.get(e.peer.name)).median;
const oursF32 = (build) => entries.find((e) => e.ours && e.build === build && !e.type.weights);
const ortF32 = entries.find((e) => !e.ours && !e.type.weights);
const ortInt8 = entries.find((e) => !e.ours && e.type.weights === 'int8');
const ratio = (a, b) => (b && !b.error ? `${(median(b) / median(a)).toFixed(2)}x` : '');

console.log(`\n| ${args.layers} layers | ms per step | ms per layer | MB per step | GB/s | ` +
  'vs ours f32 | vs ort-web fp32 | vs ort-web int8 | CPU/wall | max abs diff |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const e of entries) {
  if (e.error) {
    console.log(`| ${e.peer.name} | ${e.error} |||||||||`);
    continue;
  }
  const ms = median(e);
  const cpu = summarize(cpuSamples.get(e.peer.name)).median;
  const mb = e.bytes === null ? '' : (e.bytes / 1e6).toFixed(1);
  const gbs = e.bytes === null ? '' : (e.bytes / 1e6 / ms).toFixed(1);
  console.log(`| ${e.peer.name} | ${ms.toFixed(2)} | ${(ms / args.layers).toFixed(3)} | ${mb} | ${gbs} | ` +
    `${e.ours ? ratio(e, oursF32(e.build)) : ''} | ${ratio(e, ortF32)} | ${ratio(e, ortInt8)} | ` +
    `${(cpu / ms).toFixed(2)} | ${e.maxAbsDiff.toExponential(1)} |`);
}
console.log(`\nload average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
for (const e of entries) await e.peer.dispose();
