// The training rows of `npm run bench`, on the training build
// (createAttentionModule({ training: true }): the SIMD build, highway, one
// thread):
//  - S2 and S4: a plain forward, a training forward and a backward of the
//    same build, interleaved with the inference build's forward (the SIMD
//    build, highway); the backward and the training forward run on one
//    object, the backward right after that object's training forwards;
//  - a training step of an S2-sized attention (training forward, backward,
//    Adam) against tfjs-wasm's same step (tf.variableGrads of
//    sum(output * dOutput), so the output's gradient is dOutput, then
//    tf.train.adam's applyGradients), after checking the forward outputs,
//    every gradient and the weights after one step against each other;
//  - L1's training forward and backward once, in a fresh module: their time
//    and the peak wasm heap;
//  - natively, backward_bench's medians (--json).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { makeData, randomVector } from '../../web/bench-kit/workloads.js';
import { interleave, summarize, maxAbsDiff } from '../../web/bench-kit/timing.js';
import { loadPackage, oursModule } from '../../web/bench-kit/ours.js';
import { attention, loadTf } from './peers/tfjs.js';
import { registerTfjsGradients } from './peers/tfjs_gradients.js';
import { repoRoot } from './native.js';

// Adam's hyperparameters, torch's defaults, given to both implementations
// (tfjs's own default eps is 1e-7).
const ADAM = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8 };

// Float32 tolerance of one implementation's values against another's, as a
// fraction of the largest |value| of the tensor: each value is a chain of at
// most K = 4 reductions (dWQ = X^T ((P * (dOutput WO^T V^T - rowsum)) K)),
// each over at most n = 768 terms, summed in a different order by each; the
// rounding errors of such sums grow like sqrt(n) u (u = 2^-24) relative to
// their terms, so K sqrt(n) u = 6.6e-6, and 15x that for terms larger than
// the results they cancel to and for exp's own error: 1e-4.
const RELATIVE_TOLERANCE = 1e-4;

const WEIGHT_KEYS = ['wQ', 'wK', 'wV', 'wO', 'bQ', 'bK', 'bV', 'bO'];
const gradientName = (key) => `d${key[0].toUpperCase()}${key.slice(1).toUpperCase()}`;

const weightsOf = (data) => ({ wQ: data.wq, wK: data.wk, wV: data.wv, wO: data.wo,
  bQ: data.bq, bK: data.bk, bV: data.bv, bO: data.bo });

// The training build's module, created once per process.
let trainingBuild = null;
const trainingModule = async () =>
  (trainingBuild ??= (await loadPackage()).createAttentionModule({ training: true }));

function maxAbs(a) {
  let m = 0;
  for (const x of a) m = Math.max(m, Math.abs(x));
  return m;
}

// { maxAbsDiff, scale, ok } of `a` against `reference`, the scale being
// max |reference| or `floor` if larger.
function compare(a, reference, floor = 0) {
  const diff = maxAbsDiff(a, reference);
  const scale = Math.max(maxAbs(reference), floor);
  return { maxAbsDiff: diff, scale, ok: diff <= RELATIVE_TOLERANCE * scale };
}

// Adam's first step from zero moments (torch.optim.Adam, in double, stored
// as float32 as `w` is): m^ = g, v^ = g^2 after bias correction.
function adamFirstStep(w, g) {
  return w.map((x, i) => {
    const m = (1 - ADAM.beta1) * g[i] / (1 - ADAM.beta1);
    const v = (1 - ADAM.beta2) * g[i] * g[i] / (1 - ADAM.beta2);
    return x - ADAM.lr * m / (Math.sqrt(v) + ADAM.eps);
  });
}

// Interleaved medians of `peers` (and of their CPU time) with the run's
// worst wall/CPU ratio; a run whose calls were descheduled (ratio above
// 1.05) is timed again, up to `retries` times, keeping the least disturbed.
async function time(peers, { timing, retries, log }) {
  let best = null;
  for (let attempt = 0; attempt <= retries && !(best?.contention <= 1.05); attempt++) {
    const run = await interleave(peers, timing, { log: (m) => log(`  ${m}`) });
    const rows = {};
    let contention = 1;
    for (const p of peers) {
      const s = summarize(run.samples.get(p.name));
      const cpu = summarize(run.cpuSamples.get(p.name)).median;
      rows[p.name] = { ...s, cpuMedian: cpu, rounds: run.rounds };
      contention = Math.max(contention, s.median / Math.max(1e-6, cpu));
    }
    if (!best || contention < best.contention) best = { rows, contention };
    if (contention > 1.05) log(`  the core was shared (wall/CPU up to ${contention.toFixed(2)})`);
  }
  return best;
}

const allFinite = (g) => Object.values(g).every((x) =>
  (x.data ?? x).every(Number.isFinite));

// Plain forward, training forward and backward of workload `w`.
async function runRatios(w, timer) {
  const { log } = timer;
  const sa = await trainingModule();
  const data = makeData(w);
  const plain = new sa.MultiHeadAttention({ dModel: w.d, numHeads: w.heads });
  const trained = new sa.MultiHeadAttention({ dModel: w.d, numHeads: w.heads });
  const inference = new (await oursModule(true)).MultiHeadAttention({ dModel: w.d, numHeads: w.heads });
  try {
    for (const m of [plain, trained, inference]) m.setWeights(weightsOf(data));
    const x = { data: data.xq, shape: [1, w.tq, w.d] };
    const dOutput = { data: randomVector(w.tq * w.d, 1, 12), shape: [1, w.tq, w.d] };
    const options = { causal: w.causal };
    const training = { causal: w.causal, training: true };
    const forwardDiff = maxAbsDiff(trained.forward(x, undefined, undefined, training).output.data,
      plain.forward(x, undefined, undefined, options).output.data);
    const g1 = trained.backward(dOutput);
    const g2 = trained.backward(dOutput);
    const repeatable = Object.keys(g1).every((k) => maxAbsDiff(g1[k].data ?? g1[k], g2[k].data ?? g2[k]) === 0);
    const result = { workload: w.name, kernels: trained.kernels, forwardDiff, repeatable,
      finite: allFinite(g1) };
    log(`  ${w.name}: training forward vs plain: max |diff| ${forwardDiff.toExponential(1)}; ` +
      `backward finite ${result.finite}, bit-identical on a second call ${repeatable}`);
    if (!(forwardDiff <= 1e-6) || !result.finite || !repeatable) {
      return { ...result, error: 'the checks failed; not timed' };
    }
    const { rows, contention } = await time([
      { name: 'forward', run: () => plain.forward(x, undefined, undefined, options).output.data },
      { name: 'inference build', run: () => inference.forward(x, undefined, undefined, options).output.data },
      { name: 'training forward', run: () => trained.forward(x, undefined, undefined, training).output.data },
      { name: 'backward', run: () => trained.backward(dOutput).dInput.data },
    ], timer);
    return { ...result, ...rows, contention };
  } finally {
    for (const m of [plain, trained, inference]) m.dispose();
  }
}

// Ours: one object and its Adam; step() is forward (training), backward,
// Adam.step, returning the output and the gradients.
async function oursTrainer(data, w) {
  const sa = await trainingModule();
  const mha = new sa.MultiHeadAttention({ dModel: w.d, numHeads: w.heads });
  mha.setWeights(weightsOf(data));
  const adam = new sa.Adam(ADAM);
  const x = { data: data.xq, shape: [1, w.tq, w.d] };
  const dOutput = { data: data.dOutput, shape: [1, w.tq, w.d] };
  const forwardWith = (weights) => {
    const fresh = new sa.MultiHeadAttention({ dModel: w.d, numHeads: w.heads });
    fresh.setWeights(weights);
    const out = fresh.forward(x).output.data;
    fresh.dispose();
    return out;
  };
  return {
    step() {
      const output = mha.forward(x, undefined, undefined, { training: true }).output.data;
      const gradients = mha.backward(dOutput);
      adam.step(mha);
      return { output, gradients };
    },
    forward: () => mha.forward(x).output.data,
    forwardWith,
    dispose() {
      adam.dispose();
      mha.dispose();
    },
  };
}

// tfjs-wasm: the input and the weights as variables, the loss
// sum(attention(x) * dOutput); step() takes the gradients of every variable
// (the input's too, as ours gives dInput) and applies the weights' with Adam.
async function tfjsTrainer(data, w) {
  const tf = await loadTf();
  await registerTfjsGradients();
  const { d, tq } = w;
  const v = (values, shape) => tf.variable(tf.tensor(values, shape));
  const t = {
    xq: v(data.xq, [tq, d]),
    wq: v(data.wq, [d, d]), wk: v(data.wk, [d, d]), wv: v(data.wv, [d, d]), wo: v(data.wo, [d, d]),
    bq: v(data.bq, [d]), bk: v(data.bk, [d]), bv: v(data.bv, [d]), bo: v(data.bo, [d]),
  };
  const constants = { dOutput: tf.tensor2d(data.dOutput, [tq, d]), scale: tf.scalar(1 / Math.sqrt(d / w.heads)) };
  const model = { ...t, scale: constants.scale, mask: null, xkv: null };
  const optimizer = tf.train.adam(ADAM.lr, ADAM.beta1, ADAM.beta2, ADAM.eps);
  const variables = Object.values(t);
  const loss = () => tf.sum(tf.mul(attention(tf, model, w), constants.dOutput));
  // Our key (wQ, bQ, ...) of each weight variable.
  const ours = WEIGHT_KEYS.map((k) => [k, t[k[0] + k[1].toLowerCase()]]);
  const stepTensors = () => {
    const { value, grads } = tf.variableGrads(loss, variables);
    optimizer.applyGradients(ours.map(([, variable]) => ({ name: variable.name, tensor: grads[variable.name] })));
    return { value, grads };
  };
  return {
    step() {
      const value = tf.tidy(() => stepTensors().value);
      const loss = value.dataSync()[0];
      value.dispose();
      return loss;
    },
    // One step, returning the output before it, every gradient (named as
    // ours) and the weights after it.
    checkedStep() {
      const output = tf.tidy(() => attention(tf, model, w));
      const result = { output: output.dataSync(), gradients: {}, weights: {} };
      output.dispose();
      const { value, grads } = stepTensors();
      result.gradients.dInput = grads[t.xq.name].dataSync();
      for (const [k, variable] of ours) {
        result.gradients[gradientName(k)] = grads[variable.name].dataSync();
        result.weights[k] = variable.dataSync();
      }
      tf.dispose([value, ...Object.values(grads)]);
      return result;
    },
    forward() {
      const out = tf.tidy(() => attention(tf, model, w));
      const values = out.dataSync();
      out.dispose();
      return values;
    },
    tensors: () => tf.memory().numTensors,
    dispose() {
      optimizer.dispose();
      tf.dispose([...variables, ...Object.values(constants)]);
    },
  };
}

// The training step of workload `w` (S2), ours against tfjs-wasm: checked,
// then timed.
async function runStep(w, timer) {
  const { log } = timer;
  const data = { ...makeData(w), dOutput: randomVector(w.tq * w.d, 1, 12) };
  const ours = await oursTrainer(data, w);
  let theirs = null;
  try {
    theirs = await tfjsTrainer(data, w);
    const initial = weightsOf(data);
    // One step each from the same weights: outputs, gradients, weights.
    const a = ours.step();
    const b = theirs.checkedStep();
    const checks = { output: compare(a.output, b.output), dInput: compare(a.gradients.dInput.data, b.gradients.dInput) };
    // A bias's gradient is judged on the scale of its weight's: both sum the
    // projection's gradient over the tokens, and dBK is zero but for
    // rounding (softmax ignores what is added to every key's score).
    for (const k of WEIGHT_KEYS.map(gradientName)) {
      const weight = k.replace('dB', 'dW');
      checks[k] = compare(a.gradients[k], b.gradients[k], k === weight ? 0 : maxAbs(b.gradients[weight]));
    }
    // tfjs's weights against Adam's first step from its own gradients,
    // elementwise: float32 rounding of w and of the lr-sized update.
    let tfjsAdam = 0;
    for (const k of WEIGHT_KEYS) {
      tfjsAdam = Math.max(tfjsAdam, maxAbsDiff(b.weights[k], adamFirstStep(initial[k], b.gradients[gradientName(k)])));
    }
    checks.tfjsWeightsAfterStep = { maxAbsDiff: tfjsAdam, ok: tfjsAdam <= 1e-6 };
    // Ours keeps its weights packed in wasm: they are checked through the
    // forward they give, against a fresh object holding Adam's first step
    // from our gradients, and against tfjs's forward after its step.
    const stepped = ours.forward();
    const expected = Object.fromEntries(WEIGHT_KEYS.map((k) =>
      [k, adamFirstStep(initial[k], a.gradients[gradientName(k)])]));
    checks.oursWeightsAfterStep = compare(stepped, ours.forwardWith(expected));
    checks.afterStepVsTfjs = compare(stepped, theirs.forward());
    checks.stepMoved = maxAbsDiff(stepped, a.output);
    const failed = Object.entries(checks).filter(([, c]) => c.ok === false).map(([k]) => k);
    log(`  the step moved the output by up to ${checks.stepMoved.toExponential(1)}`);
    for (const [k, c] of Object.entries(checks)) {
      if (typeof c === 'number') continue;
      log(`  ${k.padEnd(22)} max |diff| ${c.maxAbsDiff.toExponential(1)}` +
        (c.scale ? ` (${(c.maxAbsDiff / c.scale).toExponential(1)} of the scale ${c.scale.toPrecision(3)})` : '') +
        (c.ok ? '' : '  FAILED'));
    }
    const result = { workload: w.name, adam: ADAM, tolerance: RELATIVE_TOLERANCE, checks };
    if (failed.length) return { ...result, error: `checks failed: ${failed.join(', ')}; not timed` };
    const tensors = theirs.tensors();
    const { rows, contention } = await time([
      { name: 'ours', run: () => ours.step().output },
      { name: 'tfjs-wasm', run: () => theirs.step() },
    ], timer);
    return { ...result, ours: rows.ours, tfjs: rows['tfjs-wasm'], contention,
      tfjsTensorsLeaked: theirs.tensors() - tensors };
  } finally {
    ours.dispose();
    theirs?.dispose();
  }
}

// L1's training forward and backward once, in a fresh module (its heap
// starts at 16 MiB and grows to the 2 GiB maximum), so that its heap size
// afterwards is their peak. Checks dBO, the column sums of dOutput.
async function runL1(w, log) {
  const sa = await (await loadPackage()).createAttentionModule({ training: true });
  const heapBefore = sa.memoryStats().heapBytes;
  const mha = new sa.MultiHeadAttention({ dModel: w.d, numHeads: w.heads });
  try {
    const data = makeData(w);
    mha.setWeights(weightsOf(data));
    const dOutput = randomVector(w.tq * w.d, 1, 12);
    log(`  L1: training forward and backward, once (T = ${w.tq}: tens of seconds)`);
    let t0 = performance.now();
    mha.forward({ data: data.xq, shape: [1, w.tq, w.d] }, undefined, undefined,
      { causal: true, training: true });
    const forwardMs = performance.now() - t0;
    t0 = performance.now();
    const g = mha.backward({ data: dOutput, shape: [1, w.tq, w.d] });
    const backwardMs = performance.now() - t0;
    const stats = sa.memoryStats();
    const columnSums = new Float64Array(w.d);
    for (let i = 0; i < dOutput.length; i++) columnSums[i % w.d] += dOutput[i];
    const dBO = compare(g.dBO, Float32Array.from(columnSums));
    const result = { workload: w.name, forwardMs, backwardMs, heapBefore, peakHeapBytes: stats.heapBytes,
      maxHeapBytes: stats.maxHeapBytes, finite: allFinite(g), dBO };
    log(`  training forward ${(forwardMs / 1000).toFixed(2)} s, backward ${(backwardMs / 1000).toFixed(2)} s; ` +
      `wasm heap ${(heapBefore / 2 ** 20).toFixed(0)} -> ${(stats.heapBytes / 2 ** 20).toFixed(0)} MiB; ` +
      `gradients finite ${result.finite}; dBO vs dOutput's column sums ${dBO.maxAbsDiff.toExponential(1)}`);
    if (!result.finite || !dBO.ok) result.error = 'non-finite gradients or a wrong dBO';
    return result;
  } catch (e) {
    return { workload: w.name, heapBefore, error: String(e.message ?? e).split('\n')[0] };
  } finally {
    mha.dispose();
    sa.dispose();
  }
}

// backward_bench's medians: { kernels, rounds, rows: [{ name, forward_ms,
// training_forward_ms, backward_ms }] }, or { error }.
async function runNative({ quick }) {
  const exe = path.join(repoRoot, 'build/native/bench/backward_bench');
  if (!existsSync(exe)) return { error: `${exe} not built (cmake --build build/native --target backward_bench)` };
  const out = path.join(os.tmpdir(), `sa-backward-bench-${process.pid}.json`);
  try {
    await promisify(execFile)(exe, ['--rounds', quick ? '9' : '31', '--json', out]);
    return JSON.parse(readFileSync(out, 'utf8'));
  } catch (e) {
    return { error: String(e.message ?? e).split('\n')[0] };
  } finally {
    rmSync(out, { force: true });
  }
}

/**
 * The training rows of the selected workloads: S2 and S4 (ratios), S2 (the
 * step against tfjs-wasm), L1 (the backward once); with `native`,
 * backward_bench. { ratios, step, l1, native }, each null when not run.
 */
export async function runTrainingBench({ selected, native, quick, timing, retries, log }) {
  const timer = { timing, retries, log };
  const names = new Set(selected.map((w) => w.name));
  const pick = (name) => selected.find((w) => w.name === name);
  const guard = async (label, f) => {
    try {
      return await f();
    } catch (e) {
      return { workload: label, error: String(e.message ?? e).split('\n')[0] };
    }
  };
  const result = { ratios: [], step: null, l1: null, native: null };
  log('\ntraining (the training build): forward, training forward, backward');
  for (const name of ['S2', 'S4']) {
    if (names.has(name)) result.ratios.push(await guard(name, () => runRatios(pick(name), timer)));
  }
  if (names.has('S2')) {
    log('training step on S2 (forward, backward, Adam): ours against tfjs-wasm');
    result.step = await guard('S2', () => runStep(pick('S2'), timer));
  }
  if (names.has('L1')) result.l1 = await runL1(pick('L1'), log);
  if (native) {
    log('native: backward_bench');
    result.native = await runNative({ quick });
  }
  return result;
}
