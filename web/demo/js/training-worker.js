// The training page's worker: a TinyTransformer of the package's training
// build learning a task from fresh batches (forward, backward, Adam), off the
// page's thread. Every METRICS_MS it posts the running figures and the
// curves' new points (one per POINT_STEPS steps, and the heads' W_Q W_K^T
// asymmetry at steps ever further apart); every PROBE_MS the attention of
// the page's example and the heads' roles.
import { createAttentionModule } from '../../index.js';
import { TASKS, MODELS, integers, makeBatch, makeExample } from './training-tasks.js';
import { headRoles, asymmetries } from './training-roles.js';

const METRICS_MS = 150;
const PROBE_MS = 300;
/** Steps per point of the loss and accuracy curves (their mean). */
const POINT_STEPS = 10;
/** Steps between two looks at the messages (and at the clock for posts). */
const SLICE_MS = 30;
/** The accuracy the page shows: over the last WINDOW batches, each fresh when scored. */
const WINDOW = 20;

const post = (m) => self.postMessage(m);

let sa = null;
let run = null;
let running = false;

function dispose() {
  run?.model.dispose();
  run?.optimizer.dispose();
  run = null;
}

// A new model and optimizer for `settings` ({ id, task, model, length, batch,
// lr, ffn, tied, seed }) and its example; nothing trained yet. `tied` starts
// every head with W_K = W_Q (and b_K = b_Q): a symmetric W_Q W_K^T, for the
// page to show training make it asymmetric.
function setUp(settings) {
  dispose();
  const task = TASKS[settings.task];
  const size = MODELS[settings.model];
  const model = new sa.TinyTransformer({
    vocab: task.vocab, ...size, maxTokens: task.rowTokens(settings.length),
    ffnDim: settings.ffn ? 4 * size.dModel : 0, seed: settings.seed,
  });
  if (settings.tied) {
    const weights = model.getWeights();
    for (const layer of weights.layers) Object.assign(layer, { wK: layer.wQ, bK: layer.bQ });
    model.setWeights(weights);
  }
  run = {
    settings, task, size, model,
    optimizer: new sa.Adam({ lr: settings.lr }),
    draw: integers(settings.seed * 2654435761),
    example: makeExample(task, settings.length),
    steps: 0,
    trainedMs: 0,
    recent: [], // { correct, counted, loss } of the last WINDOW steps
    pending: { steps: 0, loss: 0, correct: 0, counted: 0 }, // since the last point
    points: [], // not yet posted
    asymmetry: [], // { steps, values } not yet posted
    nextAsymmetry: 0,
    rate: [], // [ms, steps] over the last second, for steps per second
    lastMetrics: 0,
    lastProbe: 0,
  };
  sampleAsymmetry();
  probe();
  metrics(performance.now());
}

const asymmetryNow = () => asymmetries(run.model.getWeights().layers, run.size.dModel, run.size.numHeads);

// A point of the asymmetry chart: every 5 steps at first, then at steps 4%
// apart, so that the chart shows the first steps' change and a long run
// stays cheap.
function sampleAsymmetry() {
  run.asymmetry.push({ steps: run.steps, values: asymmetryNow() });
  run.nextAsymmetry = run.steps + Math.max(5, Math.ceil(run.steps / 25));
}

function step() {
  const { tokens, targets } = makeBatch(run.task, run.draw, run.settings.batch, run.settings.length);
  const r = run.model.forward(tokens, { targets, training: true });
  run.model.backward();
  run.optimizer.step(run.model);
  run.steps++;
  const correct = r.accuracy * r.counted;
  run.recent.push({ correct, counted: r.counted, loss: r.loss });
  if (run.recent.length > WINDOW) run.recent.shift();
  const p = run.pending;
  Object.assign(p, { steps: p.steps + 1, loss: p.loss + r.loss, correct: p.correct + correct, counted: p.counted + r.counted });
  if (p.steps === POINT_STEPS) {
    run.points.push({ step: run.steps, loss: p.loss / p.steps, accuracy: p.correct / Math.max(1, p.counted) });
    run.pending = { steps: 0, loss: 0, correct: 0, counted: 0 };
  }
  if (run.steps >= run.nextAsymmetry) sampleAsymmetry();
}

// The running figures, and the curves' points since the last post.
function metrics(now) {
  run.lastMetrics = now;
  run.rate.push([now, run.steps]);
  while (run.rate.length > 2 && now - run.rate[0][0] > 1000) run.rate.shift();
  const [t0, s0] = run.rate[0];
  const sum = (key) => run.recent.reduce((s, r) => s + r[key], 0);
  post({
    type: 'metrics',
    id: run.settings.id,
    steps: run.steps,
    trainedMs: run.trainedMs,
    stepsPerSecond: running && now > t0 ? ((run.steps - s0) * 1000) / (now - t0) : 0,
    accuracy: run.recent.length ? sum('correct') / Math.max(1, sum('counted')) : null,
    loss: run.recent.length ? sum('loss') / run.recent.length : null,
    points: run.points,
    asymmetry: run.asymmetry,
  });
  run.points = [];
  run.asymmetry = [];
}

// The example through the model: its attention per layer and head, the
// predictions, the roles; and the heads' asymmetry now.
function probe() {
  run.lastProbe = performance.now();
  const { tokens, targets } = run.example;
  const n = tokens.length;
  const r = run.model.forward({ data: tokens, shape: [1, n] }, { targets, returnAttnWeights: true });
  const { vocab } = run.task;
  const predictions = new Int32Array(n);
  for (let t = 0; t < n; t++) {
    let best = 0;
    for (let v = 1; v < vocab; v++) if (r.logits.data[t * vocab + v] > r.logits.data[t * vocab + best]) best = v;
    predictions[t] = best;
  }
  const attention = r.attnWeights.map((w) => w.data);
  post({
    type: 'probe',
    id: run.settings.id,
    steps: run.steps,
    tokens, targets, predictions, attention,
    roles: headRoles(attention, Array.from(tokens), run.size.numHeads),
    asymmetry: asymmetryNow(),
  });
}

// Training in slices of SLICE_MS, with a message-channel hop between them
// (not setTimeout, which browsers clamp to 4 ms when it nests), so that a
// pause or a new setting is taken at once.
const hop = new MessageChannel();
hop.port1.onmessage = () => slice();

function slice() {
  if (!running || !run) return;
  const start = performance.now();
  let now = start;
  try {
    while (now - start < SLICE_MS) {
      step();
      now = performance.now();
    }
  } catch (e) {
    running = false;
    post({ type: 'error', message: e.message });
    return;
  }
  run.trainedMs += now - start;
  if (now - run.lastMetrics >= METRICS_MS) metrics(now);
  if (now - run.lastProbe >= PROBE_MS) probe();
  hop.port2.postMessage(null);
}

const handlers = {
  setUp: ({ settings }) => {
    setUp(settings);
    post({ type: 'set', settings });
  },
  start: () => {
    if (running) return;
    running = true;
    run.rate = [[performance.now(), run.steps]];
    slice();
  },
  pause: () => {
    running = false;
    metrics(performance.now());
    probe();
  },
};

self.onmessage = ({ data }) => {
  try {
    handlers[data.type](data);
  } catch (e) {
    running = false;
    post({ type: 'error', message: e.message });
  }
};

createAttentionModule({ training: true }).then((module) => {
  sa = module;
  post({ type: 'ready', build: sa.build, kernels: sa.kernels });
}, (e) => post({ type: 'error', message: `the training build did not load: ${e.message}` }));
