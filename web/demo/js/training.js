// Training page: the controls, the curves, the example and the heads of a
// TinyTransformer that training-worker.js trains off the page's thread.
import {
  initPage, el, heatmap, legend, formatNumber, showError, onWidthChange, showBuild, PALETTE,
} from './common.js';
import { TASKS, MODELS, modelLabel } from './training-tasks.js';
import { ROLES, ROLE_THRESHOLD } from './training-roles.js';
import { lineChart, lineLegend } from './training-draw.js';

const ui = {};
const state = {
  worker: null,
  seed: 1,
  running: false,
  resumeWhenVisible: false,
  settings: null,
  history: [], // { step, loss, accuracy }
  asymmetry: [], // { steps, values: per layer, per head }
  probe: null,
  goalReached: false,
};

const LOSS_COLOUR = '#c76a00';
const ACCURACY_COLOUR = '#2456c8';
const headColour = (layer, head, numHeads) => PALETTE[(layer * numHeads + head) % PALETTE.length];

function readSettings() {
  return {
    task: ui.task.value, model: ui.model.value, length: Number(ui.length.value), batch: Number(ui.batch.value),
    lr: Number(ui.lr.value), ffn: ui.ffn.checked, tied: ui.tied.checked, seed: state.seed, id: (state.settings?.id ?? 0) + 1,
  };
}

// The lengths of the chosen task, its own default selected.
function offerLengths(task) {
  ui.length.replaceChildren(...task.lengths.map((n) => el('option', { value: n, selected: n === task.length }, task.lengthLabel(n))));
}

function describeTask(task, settings) {
  const notes = {
    copy: 'Random tokens; at each position the model should output the token before it. One previous-token head does it.',
    reverse: 'A sequence, the separator |, then the sequence backwards: from the separator on, each position should output ' +
      'the next token of the reversed half, which sits at the mirrored place of the first half.',
    induction: 'A sequence of distinct tokens shown twice, at a random place and of random length, among other tokens. ' +
      'In the second copy each position should output the token that followed the current one the first time: a task ' +
      'for two heads in two layers (with one layer it stays near chance).',
  };
  const size = MODELS[settings.model];
  return `${notes[settings.task]} Vocabulary of ${task.vocab} tokens; ${task.lengthLabel(settings.length)}; ` +
    `${modelLabel(size)}${settings.ffn ? ', with feed-forward blocks' : ''}; batches of ${settings.batch}; Adam, ` +
    `learning rate ${settings.lr}${settings.tied ? '; every head starts with W_K = W_Q' : ''}. Goal: ${Math.round(task.goal * 100)}% accuracy.`;
}

// Sends the controls to the worker: a new model (the curves start again).
function setUp() {
  const settings = readSettings();
  state.settings = settings;
  state.history = [];
  state.asymmetry = [];
  state.probe = null;
  state.goalReached = false;
  ui.taskNote.textContent = describeTask(TASKS[settings.task], settings);
  ui.seed.textContent = String(settings.seed);
  ui.announce.textContent = '';
  document.body.dataset.task = settings.task;
  delete document.body.dataset.goalSteps;
  state.worker.postMessage({ type: 'setUp', settings });
}

function setRunning(running) {
  state.running = running;
  ui.start.textContent = running ? 'Pause' : 'Start';
  ui.start.setAttribute('aria-pressed', String(running));
  document.body.dataset.running = String(running);
  state.worker.postMessage({ type: running ? 'start' : 'pause' });
}

function showMetrics(m) {
  const task = TASKS[state.settings.task];
  ui.steps.textContent = m.steps.toLocaleString('en');
  ui.rate.textContent = m.stepsPerSecond.toFixed(0);
  ui.accuracy.textContent = m.accuracy === null ? '–' : `${(100 * m.accuracy).toFixed(1)}%`;
  ui.loss.textContent = m.loss === null ? '–' : formatNumber(m.loss, 3);
  ui.time.textContent = `${(m.trainedMs / 1000).toFixed(1)} s`;
  Object.assign(document.body.dataset, {
    steps: m.steps, accuracy: m.accuracy === null ? '' : m.accuracy.toFixed(4), stepsPerSecond: m.stepsPerSecond.toFixed(1),
  });
  state.history.push(...m.points);
  state.asymmetry.push(...m.asymmetry);
  if (!state.goalReached && m.accuracy !== null && m.accuracy >= task.goal) {
    state.goalReached = true;
    document.body.dataset.goalSteps = m.steps;
    ui.announce.textContent = `Reached ${Math.round(task.goal * 100)}% accuracy after ${m.steps.toLocaleString('en')} steps ` +
      `(${(m.trainedMs / 1000).toFixed(1)} s of training).`;
  }
  drawCurves();
  if (state.asymmetry.length) drawAsymmetry();
}

function drawCurves() {
  const task = TASKS[state.settings.task];
  const width = ui.lossChart.clientWidth;
  const loss = [{ label: 'loss', colour: LOSS_COLOUR, points: state.history.map((p) => [p.step, p.loss]) }];
  const accuracy = [{ label: 'accuracy', colour: ACCURACY_COLOUR, points: state.history.map((p) => [p.step, p.accuracy]) }];
  const last = state.history.at(-1);
  ui.lossChart.replaceChildren(lineChart({
    width, lines: loss, yMax: Math.max(Math.log(task.vocab), ...loss[0].points.map((p) => p[1])),
    xTitle: 'step', yTitle: 'cross-entropy', label: `Loss curve${last ? `: ${formatNumber(last.loss, 3)} at step ${last.step}` : ''}`,
  }));
  ui.accuracyChart.replaceChildren(lineChart({
    width, lines: accuracy, yMax: 1, yTicks: [0, 0.25, 0.5, 0.75, 1], format: (t) => `${t * 100}%`,
    goal: { y: task.goal, label: `goal ${Math.round(task.goal * 100)}%` },
    xTitle: 'step', yTitle: 'accuracy',
    label: `Accuracy curve${last ? `: ${(100 * last.accuracy).toFixed(1)}% at step ${last.step}` : ''}`,
  }));
  ui.lossLegend.replaceChildren(lineLegend(loss));
  ui.accuracyLegend.replaceChildren(lineLegend(accuracy));
}

// Tokens, targets and predictions of the example, column by column.
function drawExample(p) {
  const task = TASKS[state.settings.task];
  let scored = 0;
  let right = 0;
  const columns = Array.from(p.tokens, (token, t) => {
    const target = p.targets[t];
    const ok = target >= 0 && p.predictions[t] === target;
    if (target >= 0) {
      scored++;
      if (ok) right++;
    }
    return el('div', { class: 'ex-col', dataset: { position: t } },
      el('span', { class: 'ex-token' }, task.label(token)),
      el('span', { class: 'ex-target' }, target >= 0 ? task.label(target) : '\u00a0'),
      el('span', { class: `ex-prediction ${target < 0 ? '' : ok ? 'right' : 'wrong'}` },
        target >= 0 ? task.label(p.predictions[t]) : '\u00a0'));
  });
  ui.example.replaceChildren(
    el('div', { class: 'ex-col ex-head', 'aria-hidden': 'true' },
      el('span', {}, 'input'), el('span', {}, 'should be'), el('span', {}, 'model')),
    ...columns);
  ui.exampleSummary.textContent = `${right} of ${scored} scored positions right at step ${p.steps.toLocaleString('en')}.`;
  ui.example.setAttribute('aria-label', `Example row: ${Array.from(p.tokens, task.label).join(' ')}; ` +
    `the model gets ${right} of ${scored} scored positions right.`);
}

function headCard(p, layer, head, width) {
  const task = TASKS[state.settings.task];
  const T = p.tokens.length;
  const { numHeads } = MODELS[state.settings.model];
  const labels = Array.from(p.tokens, task.label);
  const scores = p.roles[layer][head];
  const colour = headColour(layer, head, numHeads);
  const name = `Layer ${layer + 1}, head ${head + 1}`;
  const role = scores.role ? ROLES[scores.role].name : null;
  const score = (v) => (v === null ? 'n/a' : formatNumber(v, 2));
  return el('article', {
    class: 'card head-card', style: `border-left: 4px solid ${colour}`,
    dataset: {
      layer, head, role: scores.role ?? '', previous: scores.previous ?? '', induction: scores.induction ?? '',
      asymmetry: p.asymmetry[layer][head].toFixed(4),
    },
  },
  el('h3', {}, el('span', { class: 'swatch', style: `background:${colour}` }), name,
    el('span', { class: `pill kind ${role ? 'role' : 'tag-random'}` }, role ?? 'no clear role yet')),
  heatmap({
    data: p.attention[layer], offset: head * T * T, rows: T, cols: T, scale: 'prob', vmin: 0, vmax: 1, width,
    rowLabels: labels, colLabels: labels, xTitle: 'keys', yTitle: 'queries', isMasked: (r, c) => c > r,
    label: `Attention weights of ${name}${role ? `, the ${role}` : ''}: ${T} queries by ${T} keys`,
    describe: (r, c, v) => `query ${r} "${labels[r]}" \u2192 key ${c} "${labels[c]}": ${c > r ? 'masked' : formatNumber(v, 3)}`,
  }),
  el('p', { class: 'note head-scores' },
    `weight on the previous token ${score(scores.previous)} \u00b7 on the token after the earlier occurrence ` +
    `${score(scores.induction)} \u00b7 \u2016A \u2212 A\u1d40\u2016 / \u2016A\u2016 = ${formatNumber(p.asymmetry[layer][head], 3)}`));
}

// The head cards of each layer in rows of equal length, as long as fit.
function drawHeads() {
  const p = state.probe;
  if (!p) return;
  const { numHeads } = MODELS[state.settings.model];
  const probe = ui.grid.clientWidth;
  const fit = Math.max(1, Math.floor((probe + 16) / (330 + 16)));
  let columns = Math.min(numHeads, fit);
  while (numHeads % columns) columns--;
  const cardWidth = Math.floor((probe - (columns - 1) * 16) / columns) - 36;
  ui.grid.replaceChildren(...p.roles.map((heads, layer) => el('div', {
    class: 'layer-heads', style: `grid-template-columns: repeat(${columns}, minmax(0, 1fr))`, dataset: { layer },
  }, ...heads.map((_, head) => headCard(p, layer, head, cardWidth)))));
  const roles = p.roles.flat().map((r) => r.role).filter(Boolean);
  document.body.dataset.roles = [...new Set(roles)].sort().join(',');
}

function drawAsymmetry() {
  const { numHeads } = MODELS[state.settings.model];
  const layers = state.asymmetry.at(-1)?.values.length ?? 0;
  const lines = [];
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < numHeads; h++) {
      lines.push({
        label: `layer ${l + 1}, head ${h + 1}`, colour: headColour(l, h, numHeads),
        points: state.asymmetry.map((a) => [a.steps, a.values[l][h]]),
      });
    }
  }
  ui.asymmetryChart.replaceChildren(lineChart({
    width: ui.asymmetryChart.clientWidth, lines, yMax: 2, yTicks: [0, 0.5, 1, 1.5, 2],
    xTitle: 'step', yTitle: '\u2016A \u2212 A\u1d40\u2016 / \u2016A\u2016', label: 'Asymmetry of each head\u2019s W_Q W_K^T over the steps',
  }));
  ui.asymmetryLegend.replaceChildren(lineLegend(lines));
}

function showProbe(p) {
  state.probe = p;
  drawExample(p);
  drawHeads();
}

function onMessage({ data: m }) {
  // Figures of a model set up before the current one are dropped.
  if (m.id !== undefined && m.id !== state.settings.id) return;
  if (m.type === 'ready') {
    showBuild({ build: m.build, kernels: m.kernels });
    setUp();
  } else if (m.type === 'set') {
    ui.start.disabled = false;
    ui.reset.disabled = false;
  } else if (m.type === 'metrics') {
    showMetrics(m);
  } else if (m.type === 'probe') {
    showProbe(m);
    if (document.body.dataset.state === 'loading') document.body.dataset.state = 'ready';
  } else if (m.type === 'error') {
    setRunning(false);
    showError(new Error(m.message));
  }
}

function main() {
  initPage();
  for (const id of ['task', 'model', 'length', 'batch', 'lr', 'tied', 'ffn', 'start', 'reset', 'steps', 'rate', 'accuracy',
    'loss', 'time', 'seed', 'announce', 'example']) ui[id] = document.getElementById(id);
  ui.taskNote = document.getElementById('task-note');
  ui.exampleSummary = document.getElementById('example-summary');
  ui.grid = document.getElementById('head-grid');
  ui.lossChart = document.getElementById('loss-chart');
  ui.lossLegend = document.getElementById('loss-legend');
  ui.accuracyChart = document.getElementById('accuracy-chart');
  ui.accuracyLegend = document.getElementById('accuracy-legend');
  ui.asymmetryChart = document.getElementById('asymmetry-chart');
  ui.asymmetryLegend = document.getElementById('asymmetry-legend');
  document.getElementById('threshold').textContent = String(ROLE_THRESHOLD);
  document.getElementById('legend').replaceChildren(legend({ scale: 'prob', vmin: 0, vmax: 1, title: 'attention weight' }));

  ui.task.append(...Object.entries(TASKS).map(([key, t]) => el('option', { value: key }, t.name)));
  ui.model.append(...Object.entries(MODELS).map(([key, m]) => el('option', { value: key }, modelLabel(m))));
  const asked = new URLSearchParams(location.search).get('task');
  ui.task.value = TASKS[asked] ? asked : 'copy';
  const chooseTask = () => {
    const task = TASKS[ui.task.value];
    ui.model.value = task.model;
    offerLengths(task);
  };
  chooseTask();
  ui.task.addEventListener('change', () => {
    chooseTask();
    setUp();
  });
  for (const input of [ui.model, ui.length, ui.batch, ui.lr, ui.tied, ui.ffn]) input.addEventListener('change', setUp);
  ui.start.addEventListener('click', () => setRunning(!state.running));
  ui.reset.addEventListener('click', () => {
    state.seed++;
    setUp();
  });
  // A hidden tab trains on no one's behalf: it pauses, and goes on when seen again.
  document.addEventListener('visibilitychange', () => {
    if (document.hidden && state.running) {
      state.resumeWhenVisible = true;
      setRunning(false);
    } else if (!document.hidden && state.resumeWhenVisible) {
      state.resumeWhenVisible = false;
      setRunning(true);
    }
  });
  onWidthChange(() => {
    drawCurves();
    drawHeads();
    if (state.asymmetry.length) drawAsymmetry();
  });

  state.worker = new Worker(new URL('./training-worker.js', import.meta.url), { type: 'module' });
  state.worker.onmessage = onMessage;
  state.worker.onerror = (e) => showError(new Error(`training worker: ${e.message ?? 'failed to load'}`));
}

try {
  main();
} catch (e) {
  showError(e);
}
