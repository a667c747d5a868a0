// `npm run bench` (scripts/bench.sh runs this after building): the speed
// comparison, in one process tree.
//
//   node bench/js/run.js [--quick] [--json FILE] [--md FILE]
//                        [--workloads S1,S2,...] [--no-native] [--no-l1]
//                        [--no-pool] [--no-threads] [--no-training] [--no-llama] [--budget SECONDS] [--retries N]
//                        [--threads 1,2,4,8] [--only-threads]
//   node bench/js/run.js --render FILE.json [--md FILE]   (tables of an earlier run)
//
// Per workload (web/bench-kit/workloads.json) it sets up every
// implementation with weights and inputs resident, checks each output
// against ours (max abs diff <= 1e-3), warms up, then times them
// interleaved (A B C .., B C .. A, ...; single thread everywhere). On S1,
// S2, C1 and D1 the storage types run in the same rounds (storage.js): ours
// with float16, bfloat16 and int8 weights (D1: and a float16/bfloat16
// cache) on the SIMD and relaxed-SIMD builds, onnxruntime-web's float16
// graph and its two int8 paths, each checked against float32 within its
// type's bound; natively weight_types_bench. Then the
// worker pool of 2 against our synchronous attention (pool.js) and,
// natively: kernels_bench (Google Benchmark), onnxruntime-node and the
// attention variants (variants_bench, sdpa_bench), and the training build's
// rows (training.js; --no-training skips them), and a decoding step of a
// 12-layer Llama-shaped stack against onnxruntime-web (decode_llama_stack.js;
// --no-llama skips it). Last, in a child process per
// thread count (onnxruntime-web's is per process), the same on that many
// threads: ours on the threaded builds against one thread, onnxruntime-web
// and -node with that many threads, and natively threads_bench (`--threads
// LIST`, default 2: a child per count, `--threads-run N` what each runs;
// --no-threads skips them); with a list other than 2, also the worker pool
// at each count and a table of every count (--only-threads: that alone,
// without the single-thread sections). Prints
// Markdown tables and the speed targets met or missed; --json/--md write
// them.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, statSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { WORKLOADS, makeData, workloadFlops, linear } from '../../web/bench-kit/workloads.js';
import { interleave, summarize, maxAbsDiff } from '../../web/bench-kit/timing.js';
import { createPlainJs } from '../../web/bench-kit/plainjs.js';
import { createOrtWeb, TYPED_GRAPHS, GRAPHS } from './peers/ortweb.js';
import { STORAGE_WORKLOADS, storageTypes, PRODUCTS, checkStored, runNativeStorage } from './storage.js';
import { int8Weights } from './int8.js';
import { createTfjs } from './peers/tfjs.js';
import { createOurs, oursVariants, variantName, loadPackage } from '../../web/bench-kit/ours.js';
import { repoRoot, runKernelsBench, runFmaPeak, runGemmEfficiency, runOrtNode,
  runThreadsBench, runVariantsBench } from './native.js';
import { runPoolBench } from './pool.js';
import { renderMarkdown, evaluateTargets } from './report.js';
import { runDecodePreview } from './decode_preview.js';
import { runTrainingBench } from './training.js';
import { runLlamaStackBench } from './decode_llama_stack.js';

const TOLERANCE = 1e-3;

// A --threads list: positive integers, ascending, each once.
function counts(k, text) {
  const list = [...new Set(text.split(',').map(Number))].sort((x, y) => x - y);
  if (!list.every((n) => Number.isInteger(n) && n >= 1)) {
    throw new Error(`${k}: expected thread counts such as 1,2,4,8, got ${text}`);
  }
  return list;
}

function parseArgs(argv) {
  const a = { quick: false, native: true, l1: true, pool: true, threadsRun: true, threads: 1,
    threadCounts: [2], onlyThreads: false, retries: null, training: true, llama: true };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--quick') a.quick = true;
    else if (k === '--json') a.json = next();
    else if (k === '--md') a.md = next();
    else if (k === '--workloads') a.workloads = next().split(',');
    else if (k === '--no-native') a.native = false;
    else if (k === '--no-l1') a.l1 = false;
    else if (k === '--no-pool') a.pool = false;
    else if (k === '--no-threads') a.threadsRun = false;
    else if (k === '--no-training') a.training = false;
    else if (k === '--no-llama') a.llama = false;
    else if (k === '--threads') a.threadCounts = counts(k, next());
    else if (k === '--threads-run') a.child = a.threads = Number(next());
    else if (k === '--only-threads') a.onlyThreads = true;
    else if (k === '--budget') a.budget = Number(next());
    else if (k === '--retries') a.retries = Number(next());
    else if (k === '--render') a.render = next();
    else if (k === '--help' || k === '-h') {
      const lines = readFileSync(new URL(import.meta.url), 'utf8').split('\n');
      console.log(lines.slice(0, lines.findIndex((l) => !l.startsWith('//'))).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown option ${k}`);
  }
  a.retries ??= a.quick ? 1 : 2;
  return a;
}

const log = (...x) => console.error(...x);

function timingOptions(args) {
  // Default: ~35 s per workload on the wasm side; --quick: ~6 s.
  const budget = (args.budget ?? (args.quick ? 6 : 35)) * 1000;
  return {
    warmupMs: args.quick ? 100 : 300,
    warmupCalls: 3,
    slotMs: args.quick ? 20 : 40,
    budgetMs: budget,
    minRounds: args.quick ? 3 : 5,
    maxRounds: args.quick ? 5 : 15,
  };
}

function lscpu() {
  try {
    const out = execFileSync('lscpu', { encoding: 'utf8' });
    const get = (k) => (out.match(new RegExp(`^${k}:\\s*(.+)$`, 'm')) || [])[1]?.trim();
    return {
      model: get('Model name'),
      cpus: get('CPU\\(s\\)'),
      threadsPerCore: get('Thread\\(s\\) per core'),
      l1d: get('L1d cache'),
      l2: get('L2 cache'),
      l3: get('L3 cache'),
      hypervisor: get('Hypervisor vendor'),
      avx512: /\bavx512f\b/.test(out),
      fma: /\bfma\b/.test(out),
      avx2: /\bavx2\b/.test(out),
      mhz: Number((readFileSync('/proc/cpuinfo', 'utf8').match(/^cpu MHz\s*:\s*([\d.]+)/m) || [])[1]),
    };
  } catch {
    return { model: os.cpus()[0]?.model };
  }
}

function versionOf(pkg) {
  try {
    const p = path.join(repoRoot, 'bench/node_modules', pkg, 'package.json');
    return JSON.parse(readFileSync(p, 'utf8')).version;
  } catch {
    return '?';
  }
}

async function safeCreate(label, fn) {
  try {
    return await fn();
  } catch (e) {
    return { name: label, error: String(e.message ?? e).split('\n')[0] };
  }
}

async function runWorkload(w, args, variants) {
  const data = makeData(w);
  const flops = workloadFlops(w);
  log(`\n${w.name}: ${w.kind} d=${w.d} H=${w.heads} Tq=${w.tq} Tk=${w.tk}` +
    `${w.causal ? ' causal' : ''} (${(flops / 1e9).toFixed(3)} GFLOP)`);
  const entries = [];
  const candidates = [];
  for (const v of variants) {
    try {
      candidates.push({ ours: true, variant: v, peer: await createOurs(data, v) });
    } catch (e) {
      const failure = e.notAvailable ? { na: e.message } : { error: String(e.message ?? e).split('\n')[0] };
      candidates.push({ ours: true, variant: v, peer: { name: variantName(v), ...failure } });
    }
  }
  candidates.push({ peer: await safeCreate('ort-web MHA op', () => createOrtWeb(data, 'contrib')) });
  candidates.push({ peer: await safeCreate('ort-web plain', () => createOrtWeb(data, 'plain')) });
  const typed = args.child === undefined && STORAGE_WORKLOADS.includes(w.name);
  if (typed) {
    // Ours per storage type on the SIMD and relaxed-SIMD builds (highway).
    for (const v of variants.filter((x) => x.backend === 'highway' && x.simd)) {
      for (const t of storageTypes(w)) {
        const variant = { ...v, weights: t.weights, cacheType: t.cacheType };
        const storage = { weights: t.weights, cacheType: t.cacheType,
          products: PRODUCTS.weights + (t.cacheType ? PRODUCTS.cache : 0) };
        try {
          candidates.push({ ours: true, storage, variant, peer: await createOurs(data, variant) });
        } catch (e) {
          const failure = e.notAvailable ? { na: e.message } : { error: String(e.message ?? e).split('\n')[0] };
          candidates.push({ ours: true, storage, variant, peer: { name: variantName(variant), ...failure } });
        }
      }
    }
    for (const [graph, type] of Object.entries(TYPED_GRAPHS)) {
      const storage = { weights: type, products: type === 'int8' ? PRODUCTS.ortInt8 : PRODUCTS.ortFp16 };
      candidates.push({ storage, peer: await safeCreate(`ort-web ${GRAPHS[graph]}`, () => createOrtWeb(data, graph)) });
    }
  }
  if (args.child === undefined) {
    candidates.push({ peer: await safeCreate('tfjs-wasm', () => createTfjs(data)) });
    candidates.push({ peer: await safeCreate('plain JS', () => createPlainJs(data)) });
  }

  // The reference: ours (SIMD build, default backend); for D1, where ours is
  // not available yet, the plain JS implementation.
  let reference = null;
  let referenceName = null;
  const outputs = new Map();
  for (const c of candidates) {
    if (c.peer.error || c.peer.na) continue;
    try {
      const r = c.peer.run();
      const out = Float32Array.from(r && typeof r.then === 'function' ? await r : r);
      outputs.set(c.peer.name, out);
    } catch (e) {
      c.peer.error = String(e.message ?? e).split('\n')[0];
    }
  }
  const refCandidate = candidates.find((c) => c.ours && !c.peer.error && !c.peer.na) ??
    candidates.find((c) => c.peer.name === 'plain JS' && !c.peer.error);
  if (refCandidate) {
    reference = outputs.get(refCandidate.peer.name);
    referenceName = refCandidate.peer.name;
  }
  const int8Mismatch = typed ? await checkInt8Weights(data, candidates, outputs) : undefined;
  const timed = [];
  for (const c of candidates) {
    const e = { name: c.peer.name, ours: !!c.ours };
    if (c.peer.na) {
      entries.push({ ...e, na: c.peer.na });
      log(`  ${e.name.padEnd(28)} ${c.peer.na}`);
      continue;
    }
    if (c.peer.kernels) e.kernels = c.peer.kernels;
    if (c.storage) e.storage = c.storage;
    if (c.peer.error) {
      e.error = c.peer.error;
    } else if (c.storage) {
      Object.assign(e, checkStored(e.name, c.storage.weights, c.storage.products,
        outputs.get(c.peer.name), reference));
      if (!e.error && c.storage.weights === 'int8' && !c.ours) e.error = int8Mismatch;
      if (!e.error) timed.push(c.peer);
    } else {
      e.maxAbsDiff = maxAbsDiff(outputs.get(c.peer.name), reference);
      if (!(e.maxAbsDiff <= TOLERANCE)) {
        e.error = `output differs from ${referenceName} by ${e.maxAbsDiff}; not timed`;
      } else {
        timed.push(c.peer);
      }
    }
    log(`  ${e.name.padEnd(28)} ${e.error ? 'SKIP ' + e.error : `max |diff| ${e.maxAbsDiff.toExponential(1)}`}`);
    entries.push(e);
  }
  // The machine may be shared (2 cores, other jobs): a call whose wall time
  // is well above its CPU time was descheduled. If that skews a workload's
  // medians, time it again (up to `retries` times) and keep the run whose
  // worst wall/CPU ratio is lowest.
  let best = null;
  for (let attempt = 0; attempt <= args.retries; attempt++) {
    const run = await interleave(timed, timingOptions(args), { log: (m) => log(`  ${m}`) });
    let worst = 1;
    for (const [name, wall] of run.samples) {
      const ratio = summarize(wall).median / Math.max(1e-6, summarize(run.cpuSamples.get(name)).median);
      worst = Math.max(worst, ratio);
    }
    run.contention = worst;
    if (!best || worst < best.contention) best = run;
    if (worst <= 1.05) break;
    if (Date.now() - args.started > (args.quick ? 120e3 : 360e3)) {
      log(`  the core was shared during this run (wall/CPU up to ${worst.toFixed(2)}); no time left to retry`);
      break;
    }
    log(`  the core was shared during this run (wall/CPU up to ${worst.toFixed(2)})` +
      (attempt < args.retries ? '; timing it again' : '; keeping the least disturbed run'));
  }
  const { samples, cpuSamples, rounds } = best;
  for (const e of entries) {
    if (!samples.has(e.name)) continue;
    const s = summarize(samples.get(e.name));
    const cpu = summarize(cpuSamples.get(e.name));
    Object.assign(e, s, { rounds, gflops: flops / (s.median * 1e6), cpuMedian: cpu.median });
  }
  const contention = best.contention;
  for (const c of candidates) {
    if (!c.peer.error && !c.peer.na) await c.peer.dispose?.();
  }
  const oursRef = outputs.get(variantName(variants[0]));
  globalThis.gc?.();
  return {
    workload: { ...w, flops },
    reference: referenceName,
    contention,
    referenceHead: reference ? [reference[0], reference[1]] : null,
    entries,
    oursOutput: oursRef,
  };
}

// The onnxruntime int8 graphs take the weights as bench/js/int8.js
// quantizes them; that must be what our package does at setWeights: ours
// given those { values, scales } must compute bit for bit what ours given
// the float32 weights computes. An error message for the int8 peers if not.
async function checkInt8Weights(data, candidates, outputs) {
  const c = candidates.find((x) => x.ours && x.storage?.weights === 'int8' && !x.peer.error && !x.peer.na);
  if (!c) return undefined;
  const given = await createOurs({ ...data, ...int8Weights(data) }, c.variant);
  try {
    const diff = maxAbsDiff(Float32Array.from(given.run()), outputs.get(c.peer.name));
    if (diff === 0) return undefined;
    return `bench/js/int8.js quantizes otherwise than our package (outputs differ by ${diff}); not timed`;
  } finally {
    given.dispose();
  }
}

// L1: T = 16384 causal self-attention, ours only (SIMD build, default
// backend), in a fresh wasm instance so that its heap size is L1's peak.
// Checks three output rows against a double-precision JS reference.
async function runL1(w, args) {
  const flops = workloadFlops(w);
  log(`\n${w.name}: ${w.kind} d=${w.d} H=${w.heads} T=${w.tq} causal (${(flops / 1e9).toFixed(1)} GFLOP as if dense)`);
  const result = { workload: { ...w, flops }, entries: [] };
  const entry = { name: 'ours wasm-simd highway', ours: true };
  result.entries.push(entry);
  let mod;
  let mha;
  try {
    mod = await (await loadPackage()).createAttentionModule({ simd: true, relaxedSimd: false,
      threads: 1 });
    entry.name = `ours wasm-simd ${mod.backend}`;
    const before = mod.memoryStats();
    const data = makeData(w);
    mha = new mod.MultiHeadAttention({ dModel: w.d, numHeads: w.heads });
    mha.setWeights({
      wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
      bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo,
    });
    const query = { data: data.xq, shape: [1, w.tq, w.d] };
    const times = [];
    let out;
    const calls = args.quick ? 1 : 3;
    for (let i = 0; i < calls; i++) {
      const t0 = performance.now();
      out = mha.forward(query, undefined, undefined, { causal: true }).output.data;
      times.push(performance.now() - t0);
      log(`  call ${i + 1}: ${(times[i] / 1000).toFixed(2)} s`);
    }
    const after = mod.memoryStats();
    entry.heapBefore = before.heapBytes;
    entry.peakHeapBytes = after.heapBytes;
    entry.maxHeapBytes = after.maxHeapBytes;
    const s = summarize(times.length > 1 ? times.slice(1) : times);
    Object.assign(entry, s, { gflops: flops / (s.median * 1e6), rounds: times.length });
    entry.firstCallMs = times[0];
    entry.maxAbsDiff = checkRows(data, w, out, [0, 8191, w.tq - 1]);
    if (!(entry.maxAbsDiff <= TOLERANCE)) entry.error = `rows differ from the JS reference by ${entry.maxAbsDiff}`;
    log(`  completed; wasm heap ${(before.heapBytes / 2 ** 20).toFixed(0)} -> ` +
      `${(after.heapBytes / 2 ** 20).toFixed(0)} MiB (max ${(after.maxHeapBytes / 2 ** 20).toFixed(0)} MiB); ` +
      `rows 0, 8191, ${w.tq - 1} vs JS reference: max |diff| ${entry.maxAbsDiff.toExponential(1)}`);
  } catch (e) {
    entry.error = String(e.message ?? e).split('\n')[0];
    log(`  FAILED: ${entry.error}`);
  } finally {
    mha?.dispose();
  }
  return result;
}

// Double-precision reference for a few query rows of causal self-attention.
function checkRows(data, w, out, rows) {
  const { d, heads: H, tq: t } = w;
  const dh = d / H;
  const k = linear(data.xq, t, d, data.wk, data.bk);
  const v = linear(data.xq, t, d, data.wv, data.bv);
  let worst = 0;
  for (const i of rows) {
    const q = linear(data.xq.subarray(i * d, (i + 1) * d), 1, d, data.wq, data.bq);
    const z = new Float64Array(d);
    const s = new Float64Array(i + 1);
    for (let h = 0; h < H; h++) {
      let max = -Infinity;
      for (let j = 0; j <= i; j++) {
        let dot = 0;
        for (let c = 0; c < dh; c++) dot += q[h * dh + c] * k[j * d + h * dh + c];
        s[j] = dot / Math.sqrt(dh);
        max = Math.max(max, s[j]);
      }
      let sum = 0;
      for (let j = 0; j <= i; j++) sum += (s[j] = Math.exp(s[j] - max));
      for (let j = 0; j <= i; j++) {
        for (let c = 0; c < dh; c++) z[h * dh + c] += (s[j] / sum) * v[j * d + h * dh + c];
      }
    }
    const y = linear(Float32Array.from(z), 1, d, data.wo, data.bo);
    for (let c = 0; c < d; c++) worst = Math.max(worst, Math.abs(y[c] - out[i * d + c]));
  }
  return worst;
}

function wasmSizes() {
  const dist = path.join(process.env.SA_BENCH_WEB_DIR ? path.resolve(process.env.SA_BENCH_WEB_DIR) : path.join(repoRoot, 'web'), 'dist');
  const size = (f) => (existsSync(path.join(dist, f)) ? statSync(path.join(dist, f)).size : null);
  return {
    simdWasm: size('simd_attention_simd.wasm'),
    simdJs: size('simd_attention_simd.js'),
    relaxedWasm: size('simd_attention_relaxed.wasm'),
    relaxedJs: size('simd_attention_relaxed.js'),
    nosimdWasm: size('simd_attention_nosimd.wasm'),
    nosimdJs: size('simd_attention_nosimd.js'),
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.render) {
    // Re-render the tables of an earlier --json file (no measuring).
    const report = JSON.parse(readFileSync(args.render, 'utf8'));
    report.targets = evaluateTargets(report);
    const md = renderMarkdown(report);
    console.log(md);
    if (args.md) writeFileSync(args.md, md);
    return;
  }
  const started = new Date();
  args.started = started.getTime();
  const selected = WORKLOADS.filter((w) => (args.workloads ? args.workloads.includes(w.name) : true))
    .filter((w) => args.l1 || w.name !== 'L1');
  if (args.child !== undefined) {
    await threadsRun(args, selected.filter((w) => !w.oursOnly));
    return;
  }
  // --only-threads: the threads runs alone.
  const single = !args.onlyThreads;
  const meta = {
    date: started.toISOString(),
    quick: args.quick,
    node: process.version,
    v8: process.versions.v8,
    nodeFlags: process.execArgv,
    cpu: lscpu(),
    loadAvgStart: os.loadavg(),
    versions: {
      'onnxruntime-web': versionOf('onnxruntime-web'),
      'onnxruntime-node': versionOf('onnxruntime-node'),
      '@tensorflow/tfjs-core': versionOf('@tensorflow/tfjs-core'),
      '@tensorflow/tfjs-backend-wasm': versionOf('@tensorflow/tfjs-backend-wasm'),
    },
    sizes: wasmSizes(),
    timing: timingOptions(args),
    tolerance: TOLERANCE,
  };
  let commit = '?';
  try {
    commit = execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {}
  meta.commit = commit;
  log(`simd-attention bench ${meta.date} on ${meta.cpu.model}, node ${meta.node}` +
    `${args.quick ? ' (--quick)' : ''}; load average ${meta.loadAvgStart.map((x) => x.toFixed(2)).join(' ')}`);

  const variants = await oursVariants();
  const wasm = [];
  for (const w of single ? selected : []) {
    if (w.oursOnly) wasm.push(await runL1(w, args));
    else wasm.push(await runWorkload(w, args, variants));
  }

  let pool = null;
  if (args.pool && single) {
    const names = selected.filter((w) => ['S2', 'S4', 'S4c', 'C1', 'D1'].includes(w.name))
      .map((w) => w.name);
    log('\nthe worker pool of 2 against the synchronous API (pool.js)');
    try {
      pool = await runPoolBench({ workers: 2, quick: args.quick, workloads: names });
    } catch (e) {
      pool = { error: e.message };
    }
  }

  const d1 = wasm.find((r) => r.workload.name === 'D1');
  let decodePreview = null;
  if (d1) {
    log('\nD1 preview through the C++ API (decode_bench, native and wasm)');
    decodePreview = await runDecodePreview(repoRoot, d1.referenceHead);
  }

  let native = null;
  if (args.native && single) {
    const names = selected.filter((w) => !w.oursOnly).map((w) => w.name);
    const references = {};
    for (const r of wasm) if (r.oursOutput) references[r.workload.name] = r.oursOutput;
    log('\nnative: fma_peak');
    const fma = await runFmaPeak();
    log('native: GEMM 128x768x768 between fma_peak runs');
    const gemm = await runGemmEfficiency({ quick: args.quick });
    log('native: kernels_bench (Google Benchmark)');
    const kb = await runKernelsBench({ quick: args.quick, workloads: names.filter((n) => n !== 'D1') });
    log('native: onnxruntime-node');
    // Two implementations, both fast: a smaller budget than the wasm side's.
    const nativeTiming = { ...timingOptions(args), budgetMs: args.quick ? 2000 : 8000 };
    const ortNode = await runOrtNode({ names, references, timing: nativeTiming, tolerance: TOLERANCE });
    log('native: variants_bench, sdpa_bench');
    const variants = await runVariantsBench({ quick: args.quick });
    if (variants.error) log(`  variants: ${variants.error}`);
    log('native: weight_types_bench (storage types)');
    const storage = await runNativeStorage({ repoRoot, names, references, tolerance: TOLERANCE,
      quick: args.quick });
    if (storage.error) log(`  weight_types_bench: ${storage.error}`);
    native = { fma, gemm, kernelsBench: kb, ortNode, variants, storage };
    if (kb.error) log(`  kernels_bench: ${kb.error}`);
    if (ortNode.error) log(`  onnxruntime-node: ${ortNode.error}`);
  }
  const training = args.training && single ? await runTrainingBench({ selected, native: args.native,
    quick: args.quick, timing: timingOptions(args), retries: args.retries, log }) : null;
  let llamaStack = null;
  if (args.llama && single) {
    try {
      llamaStack = await runLlamaStackBench({ quick: args.quick, log });
    } catch (e) {
      llamaStack = { error: String(e.message ?? e).split('\n')[0] };
      log(`  ${llamaStack.error}`);
    }
  }
  let threads = null;
  let threadCounts = null;
  if (args.threadsRun) {
    const runs = await spawnThreadsRuns(args, selected);
    threads = runs.find((r) => r.threads > 1) ?? null;
    if (args.threadCounts.join() !== '2') {
      threadCounts = { counts: args.threadCounts, runs,
        pools: args.pool ? await poolsAtEachCount(args, selected) : [] };
    }
  }
  meta.loadAvgEnd = os.loadavg();
  meta.seconds = (Date.now() - started.getTime()) / 1000;
  for (const r of wasm) delete r.oursOutput;
  const report = { meta, wasm, native, decodePreview, pool, threads, threadCounts, training,
    llamaStack };
  report.targets = evaluateTargets(report);
  const md = renderMarkdown(report);
  console.log(md);
  if (args.json) writeFileSync(args.json, JSON.stringify(report, null, 2) + '\n');
  if (args.md) writeFileSync(args.md, md);
  log(`done in ${meta.seconds.toFixed(0)} s`);
}

// The threads run (this process was started with --threads-run N and
// SA_BENCH_THREADS=N, so the peers' sessions take N threads): ours on one
// thread and on N (SIMD and relaxed-SIMD threaded builds, highway; for N =
// 1 the single-thread builds), onnxruntime-web on N, interleaved per
// workload; natively onnxruntime-node on N intra-op threads and
// threads_bench (N > 1). Writes --json.
async function threadsRun(args, selected) {
  const n = args.threads;
  const variants = [{ simd: true, backend: 'highway' },
    { simd: true, relaxed: n === 1, backend: 'highway', threads: n },
    ...(n > 1 ? [{ simd: true, relaxed: true, backend: 'highway', threads: n }] : [])];
  const wasm = [];
  for (const w of selected) wasm.push(await runWorkload(w, args, variants));
  const references = {};
  for (const r of wasm) if (r.oursOutput) references[r.workload.name] = r.oursOutput;
  const names = selected.map((w) => w.name);
  log(`\nnative on ${n} threads: onnxruntime-node, threads_bench`);
  const ortNode = await runOrtNode({ names, references,
    timing: { ...timingOptions(args), budgetMs: args.quick ? 2000 : 8000 }, tolerance: TOLERANCE });
  const ours = n > 1 ? await runThreadsBench({ threads: n, quick: args.quick }) : null;
  for (const r of wasm) delete r.oursOutput;
  writeFileSync(args.json, JSON.stringify({ threads: n, wasm, native: { ortNode, ours } }));
}

// Runs the threads run at each count of --threads (the single-thread
// sections have count 1, unless --only-threads) in a child process of this
// node and its flags; their reports, each { threads, ... } or { threads,
// error }.
async function spawnThreadsRuns(args, selected) {
  const names = selected.filter((w) => !w.oursOnly).map((w) => w.name);
  const runs = [];
  for (const n of args.threadCounts.filter((c) => c > 1 || args.onlyThreads)) {
    const out = path.join(os.tmpdir(), `sa-bench-threads-${process.pid}-${n}.json`);
    log(`\nthe same on ${n} thread${n > 1 ? 's' : ''} (a child process: onnxruntime-web sets ` +
      'its threads per process)');
    const argv = [...process.execArgv, fileURLToPath(import.meta.url), '--threads-run', String(n),
      '--json', out, '--workloads', names.join(','), ...(args.quick ? ['--quick'] : [])];
    const code = await new Promise((resolve) => {
      spawn(process.execPath, argv, { stdio: ['ignore', 'inherit', 'inherit'],
        env: { ...process.env, SA_BENCH_THREADS: String(n) } }).on('exit', resolve);
    });
    runs.push(code === 0 ? JSON.parse(readFileSync(out, 'utf8'))
      : { threads: n, error: `the threads run exited with ${code}` });
  }
  return runs;
}

// The worker pool of each count of --threads against the synchronous API
// on one thread (pool.js): [{ workers, rows } or { workers, error }].
async function poolsAtEachCount(args, selected) {
  const names = selected.filter((w) => !w.oursOnly).map((w) => w.name);
  const pools = [];
  for (const workers of args.threadCounts) {
    log(`\nthe worker pool of ${workers} against the synchronous API (pool.js)`);
    try {
      pools.push(await runPoolBench({ workers, quick: args.quick, workloads: names }));
    } catch (e) {
      pools.push({ workers, error: e.message });
    }
  }
  return pools;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
