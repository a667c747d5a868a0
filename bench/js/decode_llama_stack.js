// One decoding step of a 12-layer Llama-shaped model (RMSNorm, grouped-query
// attention with rotate-half RoPE, SwiGLU MLP, a last norm): our
// TransformerStack's forwardIncremental, one call for every layer, against
// onnxruntime-web running the same stack as one ONNX graph with its
// GroupQueryAttention contrib op (onnx_llama.js). d_model 768, 12 query
// heads and 4 key/value heads of 64, FFN 2048: 75.5 M weights (302 MB in
// float32) that every step reads from DRAM, as decoding a real model does;
// KV caches of 512 tokens holding a 256-token prompt, one new token per
// step (the caches truncated back after each, inside the timed call).
//
// Checked before anything is timed:
// - ours (SIMD build, float32) fed the prompt token by token equals its own
//   full causal forward over the prompt;
// - onnxruntime-web, given ours' caches, then decoding a few tokens on its
//   own presents, equals ours decoding the same tokens (1e-3);
// - every other row's step output equals that reference: float32 within
//   1e-3, float16 and int8 weights within their bound (storage.js) over the
//   chained products of the stack.
// Then every row is timed interleaved (one call per row per round), medians.
//
//   bash scripts/node-wasm.sh bench/js/decode_llama_stack.js [--quick] [--budget S]
//     [--builds simd,relaxed] [--types f32,f16,int8]
//
// npm run bench runs it (run.js; --no-llama skips it). Needs the package
// built and the peers installed (npm ci --prefix bench).
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { interleave, maxAbsDiff, summarize } from '../../web/bench-kit/timing.js';
import { loadPackage, oursModule } from '../../web/bench-kit/ours.js';
import { randomFloats } from '../../tests/js/support/layers.mjs';
import { loadOrt, PEER_THREADS } from './peers/ortweb.js';
import { llamaStackModel } from './onnx_llama.js';
import { checkStored } from './storage.js';

export const LLAMA_STACK = {
  dModel: 768, numHeads: 12, numKvHeads: 4, headDim: 64, ffnDim: 2048, numLayers: 12, eps: 1e-5,
  ropeBase: 10000, cacheLength: 512, promptLength: 256,
};
const TOLERANCE = 1e-3;
// onnxruntime-web's graphs (onnx_llama.js): float32 MatMuls, and int8
// weights as ours through MatMulInteger (its activations quantized too).
const INT8 = { weights: 'int8', label: 'int8' };
const ORT_GRAPHS = [
  { name: 'ort-web GroupQueryAttention graph, f32 weights', type: { label: 'f32' } },
  { form: 'integer', name: 'ort-web GroupQueryAttention graph, int8 MatMulInteger', type: INT8 },
];
// onnxruntime's int8 products also quantize their activations: 5 units of
// rounding each instead of 1 (storage.js, PRODUCTS.ortInt8).
const ORT_INT8_UNITS = 5;
// Ours fed token by token against its own causal forward: the same kernels
// summing in another order (rows of one GEMM against one row at a time).
const TOKEN_BY_TOKEN_TOLERANCE = 1e-4;
// Tokens onnxruntime-web decodes on its own presents in the check.
const CHECK_STEPS = 4;
// Chained products per layer whose rounding a stored type's bound counts
// (storage.js): Q or K, V, W_O, then gate or up, down.
const PRODUCTS_PER_LAYER = 5;

export const LLAMA_TYPES = [
  { label: 'f32' },
  { weights: 'f16', label: 'f16' },
  { weights: 'int8', label: 'int8' },
];

// Random weights (no biases), X @ W; scales keep the residual stream near 1.
export function llamaStackWeights(c, seed = 1) {
  const kv = c.numKvHeads * c.headDim;
  const q = c.numHeads * c.headDim;
  let s = seed;
  const m = (n) => randomFloats(n, s++ * 7919, 0.04);
  const gamma = () => randomFloats(c.dModel, s++ * 7919, 0.1).map((v) => 1 + v);
  const layers = [];
  for (let l = 0; l < c.numLayers; l++) {
    layers.push({ sublayers: [
      { norm: { gamma: gamma() },
        attention: { wQ: m(c.dModel * q), wK: m(c.dModel * kv), wV: m(c.dModel * kv), wO: m(q * c.dModel) } },
      { norm: { gamma: gamma() },
        gatedFfn: { wGate: m(c.dModel * c.ffnDim), wUp: m(c.dModel * c.ffnDim), wDown: m(c.ffnDim * c.dModel) } },
    ] });
  }
  return { layers, finalNorm: { gamma: gamma() } };
}

const stackConfig = (c, weights) => ({
  dModel: c.dModel, numHeads: c.numHeads, numKvHeads: c.numKvHeads, headDim: c.headDim, ffnDim: c.ffnDim,
  activation: 'silu', norm: 'rms_norm', eps: c.eps, rope: { style: 'half', base: c.ropeBase },
  sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }], numLayers: c.numLayers, finalNorm: true,
  backend: 'highway', weights,
});

const tokens = (x, c, from, to) => ({ data: x.subarray(from * c.dModel, to * c.dModel), shape: [1, to - from, c.dModel] });

function weightBytes(mod) {
  return Object.values(mod.memoryStats().weightBytes ?? {}).reduce((a, b) => a + b, 0);
}

// Ours on one build and weight type, its caches holding the prompt: run()
// is one decoding step of `next`, the caches truncated back to the prompt.
async function createOursStack(c, weights, x, build, type, { tokenByToken = false } = {}) {
  const mod = await oursModule(true, build === 'relaxed');
  const before = weightBytes(mod);
  const stack = new mod.TransformerStack(stackConfig(c, type.weights));
  stack.setWeights(weights);
  const bytes = weightBytes(mod) - before;
  const caches = stack.createKVCaches({ batch: 1, maxLength: c.cacheLength });
  const P = c.promptLength;
  let prompt = null;
  if (tokenByToken) {
    prompt = new Float32Array(P * c.dModel);
    for (let t = 0; t < P; t++) prompt.set(stack.forwardIncremental(tokens(x, c, t, t + 1), caches).data, t * c.dModel);
  } else {
    stack.forwardIncremental(tokens(x, c, 0, P), caches);
  }
  const next = tokens(x, c, P, P + 1);
  return {
    name: `ours wasm-${build === 'relaxed' ? 'relaxed' : 'simd'} ${stack.config.backend}, ${type.label} weights`,
    build, type, bytes, stack, caches, prompt,
    run() {
      const out = stack.forwardIncremental(next, caches).data;
      for (const cache of caches) cache.truncate(P);
      return out;
    },
    dispose() {
      for (const cache of caches) cache.dispose();
      stack.dispose();
    },
  };
}

// [1, T, Hkv * dh] token-major (our KVCache.keys()) -> [1, Hkv, T, dh].
function toHeads(t, c) {
  const [, T] = t.shape;
  const { numKvHeads: H, headDim: dh } = c;
  const out = new Float32Array(t.data.length);
  for (let s = 0; s < T; s++) {
    for (let h = 0; h < H; h++) out.set(t.data.subarray((s * H + h) * dh, (s * H + h + 1) * dh), (h * T + s) * dh);
  }
  return out;
}

// onnxruntime-web on the same stack (graph: an entry of ORT_GRAPHS): run()
// is the step of `next` over past key/values of the prompt (ours' in
// float32, as they start equal), the output alone fetched. step(x, past)
// decodes on given past tensors, for the check.
async function createOrtStack(c, weights, x, caches, graph) {
  const ort = await loadOrt();
  const model = llamaStackModel({ ...c, maxPositions: c.cacheLength }, weights, { form: graph.form });
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['wasm'], graphOptimizationLevel: 'all', intraOpNumThreads: PEER_THREADS,
    interOpNumThreads: 1, executionMode: 'sequential',
  });
  const P = c.promptLength;
  const shape = [1, c.numKvHeads, P, c.headDim];
  const past = {};
  caches.forEach((cache, l) => {
    past[`past_key_${l}`] = new ort.Tensor('float32', toHeads(cache.keys(), c), shape);
    past[`past_value_${l}`] = new ort.Tensor('float32', toHeads(cache.values(), c), shape);
  });
  const feeds = (token, pastFeeds, pastLength) => ({
    ...pastFeeds,
    x: new ort.Tensor('float32', token.data, token.shape),
    seqlens_k: new ort.Tensor('int32', Int32Array.of(pastLength), [1]),
    total_sequence_length: new ort.Tensor('int32', Int32Array.of(pastLength + 1), []),
  });
  const stepFeeds = feeds(tokens(x, c, P, P + 1), past, P);
  return {
    name: graph.name,
    type: graph.type,
    bytes: null,
    past,
    async run() {
      const r = await session.run(stepFeeds, ['output']);
      const out = r.output.data;
      r.output.dispose?.();
      return out;
    },
    // One token on pastFeeds (pastLength tokens): { output, presents }.
    async step(token, pastFeeds, pastLength) {
      const r = await session.run(feeds(token, pastFeeds, pastLength));
      const presents = {};
      for (let l = 0; l < c.numLayers; l++) {
        presents[`past_key_${l}`] = r[`present_key_${l}`];
        presents[`past_value_${l}`] = r[`present_value_${l}`];
      }
      return { output: r.output.data, presents };
    },
    async dispose() {
      await session.release();
    },
  };
}

// ours (the reference stack, its caches holding the prompt) and onnxruntime
// decoding CHECK_STEPS tokens, onnxruntime on its own presents: the largest
// difference of a step's output.
async function checkOrtDecoding(c, x, ours, ort) {
  const P = c.promptLength;
  let past = ort.past;
  let worst = 0;
  for (let s = 0; s < CHECK_STEPS; s++) {
    const token = tokens(x, c, P + s, P + s + 1);
    const want = ours.stack.forwardIncremental(token, ours.caches).data;
    const got = await ort.step(token, past, P + s);
    worst = Math.max(worst, maxAbsDiff(got.output, want));
    past = got.presents;
  }
  for (const cache of ours.caches) cache.truncate(P);
  return worst;
}

function parseArgs(argv) {
  const a = { quick: false, budget: null, builds: ['simd', 'relaxed'], types: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--quick') a.quick = true;
    else if (k === '--budget') a.budget = Number(argv[++i]);
    else if (k === '--builds') a.builds = argv[++i].split(',');
    else if (k === '--types') a.types = argv[++i].split(',');
    else throw new Error(`unknown option ${k} (--quick, --budget S, --builds simd,relaxed, --types f32,f16,int8)`);
  }
  return a;
}

/**
 * The measurement: { config, checks: { tokenByToken, ortDecoding }, entries:
 * [{ name, ours, build, weights, bytes, median, p25, p75, cpuMedian, n,
 * maxAbsDiff, error? }], loadAvg: [start, end], relaxed }.
 */
export async function runLlamaStackBench({ quick = false, budget = null, builds = ['simd', 'relaxed'],
  types = null, log = () => {} } = {}) {
  const c = LLAMA_STACK;
  const relaxed = (await loadPackage()).wasmRelaxedSimdSupported();
  const result = { config: c, relaxed, loadAvg: [os.loadavg()], checks: {}, entries: [] };
  log(`\n${c.numLayers}-layer Llama-shaped stack, one decoding step (d_model ${c.dModel}, ${c.numHeads} heads, ` +
    `${c.numKvHeads} KV heads, FFN ${c.ffnDim}, ${c.promptLength} of ${c.cacheLength} cached tokens)`);
  const weights = llamaStackWeights(c);
  const x = randomFloats((c.promptLength + CHECK_STEPS) * c.dModel, 4242, 1);

  // The reference, fed the prompt token by token, against its causal forward.
  const reference = await createOursStack(c, weights, x, 'simd', LLAMA_TYPES[0], { tokenByToken: true });
  const full = reference.stack.forward(tokens(x, c, 0, c.promptLength), { causal: true }).data;
  result.checks.tokenByToken = maxAbsDiff(reference.prompt, full);
  log(`  ours token by token vs its causal forward over ${c.promptLength} tokens: max |diff| ` +
    `${result.checks.tokenByToken.toExponential(1)}`);
  if (!(result.checks.tokenByToken <= TOKEN_BY_TOKEN_TOLERANCE)) {
    result.error = `ours token by token differs from its causal forward by ${result.checks.tokenByToken}`;
  }
  const want = Float32Array.from(reference.run());

  const rows = [];
  const wanted = (t) => !types || types.includes(t.label);
  for (const build of builds) {
    if (build === 'relaxed' && !relaxed) continue;
    for (const type of LLAMA_TYPES.filter(wanted)) {
      if (build === 'simd' && !type.weights) rows.push(reference);
      else rows.push(await createOursStack(c, weights, x, build, type));
    }
  }
  // onnxruntime's float32 graph decodes a few tokens beside ours first.
  const ortErrors = [];
  for (const graph of ORT_GRAPHS.filter((g) => wanted(g.type))) {
    let ort = null;
    try {
      ort = await createOrtStack(c, weights, x, reference.caches, graph);
      if (!graph.type.weights) {
        result.checks.ortDecoding = await checkOrtDecoding(c, x, reference, ort);
        log(`  onnxruntime-web decoding ${CHECK_STEPS} tokens on its own presents vs ours: max |diff| ` +
          `${result.checks.ortDecoding.toExponential(1)}`);
        if (!(result.checks.ortDecoding <= TOLERANCE)) {
          ort.error = `decoding differs from ours by ${result.checks.ortDecoding}; not timed`;
        }
      }
      rows.push(ort);
    } catch (e) {
      ortErrors.push({ name: graph.name, ours: false, weights: graph.type.label, error: String(e.message ?? e).split('\n')[0] });
      log(`  ${graph.name}: ${ortErrors.at(-1).error}`);
      for (const cache of reference.caches) cache.truncate(c.promptLength);
      await ort?.dispose();
    }
  }

  const timed = [];
  for (const r of rows) {
    const ours = !!r.stack;
    const e = { name: r.name, ours, build: r.build, weights: r.type.label, bytes: r.bytes };
    const out = await r.run();
    if (!r.type.weights) {
      e.maxAbsDiff = maxAbsDiff(out, want);
      if (!(e.maxAbsDiff <= TOLERANCE)) e.error = `output differs from ours in float32 by ${e.maxAbsDiff}; not timed`;
    } else {
      const units = ours ? 1 : ORT_INT8_UNITS;
      Object.assign(e, checkStored(r.name, r.type.weights, units * PRODUCTS_PER_LAYER * c.numLayers, out, want));
    }
    e.error ??= r.error;
    log(`  ${e.name.padEnd(48)} ${e.error ?? `max |diff| ${e.maxAbsDiff.toExponential(1)}`}`);
    result.entries.push(e);
    if (!e.error) timed.push(r);
  }
  result.entries.push(...ortErrors);

  const run = timed.length === 0 ? { samples: new Map() } : await interleave(timed, {
    warmupMs: 0, warmupCalls: 2, slotMs: 0, budgetMs: (budget ?? (quick ? 10 : 40)) * 1000,
    minRounds: quick ? 3 : 7, maxRounds: quick ? 5 : 100, maxCallsPerSlot: 1,
  }, { log: (m) => log(`  ${m}`) });
  for (const e of result.entries) {
    if (!run.samples.has(e.name)) continue;
    const cpu = summarize(run.cpuSamples.get(e.name));
    Object.assign(e, summarize(run.samples.get(e.name)), { cpuMedian: cpu.median, rounds: run.rounds });
  }
  for (const r of rows) await r.dispose();
  if (!rows.includes(reference)) reference.dispose();
  result.loadAvg.push(os.loadavg());
  return result;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { llamaStackSection } = await import('./report.js');
  const args = parseArgs(process.argv.slice(2));
  const result = await runLlamaStackBench({ ...args, log: (m) => console.error(m) });
  console.log(`\n${llamaStackSection(result, os.cpus()[0]?.model)}`);
}
