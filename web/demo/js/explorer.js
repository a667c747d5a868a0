// Attention explorer: a sentence through one attention layer (d_model = 64,
// 8 heads, explorer-model.js), with the masks, grouped key/value heads and
// rotary positions of the library's MultiHeadAttention to switch on and off;
// or a layer of the visitor's own model (explorer-open.js). The layers run
// in the page's worker pool, so typing never waits for them.
import {
  attentionModule, attentionPool, initPage, el, legend, formatNumber, formatShape, showError, onWidthChange, showBuild,
} from './common.js';
import { newestOnly } from './newest-only.js';
import {
  D, H, MAX_TOKENS, PAIRS, TARGET_GAP, KV_CHOICES, ALPHA, RUNNER_UP, MARGIN, HEADS,
  buildWeights, tokenize, embed,
} from './explorer-model.js';
import { headCard, contributionChart, kvLegend, runColour } from './explorer-draw.js';
import { modelCard } from './explorer-open.js';

/** Rotary positions when switched on: pairs (2i, 2i+1), as the sin/cos pairs of the encoding. */
const ROPE = { style: 'interleaved' };

const ui = {};
const state = { selected: new Set(HEADS.map((_, h) => h)), last: null, layer: null, picker: null, model: null };

/** The last run's numbers, for the browser test (which reads them as the page shows them). */
export const lastRun = () => state.last;

// The head checkboxes of a run's heads, in the picker of its view (the
// built-in layer's controls, or the model's card); made again, every head
// selected, when the heads change.
function headsPicker(run) {
  const container = run.source === 'model' ? ui.modelHeads : ui.heads;
  const key = `${run.source} ${run.numHeads}`;
  if (state.picker?.key !== key) {
    if (state.picker) state.selected = new Set(run.heads.map((_, h) => h));
    state.picker?.container.replaceChildren();
    const swatches = run.heads.map(() => el('span', { class: 'swatch' }));
    container.replaceChildren(...run.heads.map((head, h) => el('label', {},
      el('input', {
        type: 'checkbox', checked: state.selected.has(h), 'data-head': h,
        onchange: (e) => {
          if (e.target.checked) state.selected.add(h);
          else state.selected.delete(h);
          render();
        },
      }),
      swatches[h], head.name ? `${h}: ${head.name}` : `${h}`)));
    state.picker = { key, container, swatches };
  }
  state.picker.swatches.forEach((s, h) => { s.style.background = runColour(run, h); });
}

function render() {
  const run = state.last;
  if (!run) return;
  headsPicker(run);
  const heads = [...state.selected].sort((a, b) => a - b);
  const probe = ui.grid.clientWidth;
  const columns = Math.max(1, Math.floor((probe + 16) / (330 + 16)));
  const cardWidth = Math.floor((probe - (columns - 1) * 16) / columns) - 36;
  ui.grid.replaceChildren(...heads.map((h) => headCard(h, run, cardWidth)));
  if (heads.length === 0) ui.grid.append(el('p', { class: 'note' }, 'No head selected.'));
  ui.kvLegend.replaceChildren(...kvLegend(run));
  ui.legend.replaceChildren(run.fitScale
    ? legend({ scale: 'prob', vmin: 0, vmax: 1, title: 'attention weight: each map from its smallest (0) to its largest (1)' })
    : legend({ scale: 'prob', vmin: 0, vmax: 1, title: 'attention weight' }));
  contributionChart(run, state.selected, { container: ui.chart, legendBox: ui.chartLegend, hint: ui.chartHint });
  if (run.source !== 'model') {
    Object.assign(document.body.dataset, {
      mode: run.cross ? 'cross' : 'self', causal: run.causal, window: run.window.join(','),
      kvHeads: run.kvHeads, rope: String(run.rope),
    });
  }
  document.getElementById('masked-key').hidden = !run.scores.includes(-Infinity);
}

// A window bound as typed: a whole number >= 0, or -1 (unbounded) for
// anything else, so a half-typed field never reaches the library.
function windowBound(input) {
  const v = Number(input.value);
  return Number.isInteger(v) && v >= 0 ? v : -1;
}

// The pooled layer for the chosen key/value heads and positions (made again
// when they change). Runs never overlap (newestOnly), so the old layer has
// no call in flight when it is disposed.
function layer(kvHeads, rope) {
  const key = `${kvHeads} ${rope}`;
  if (state.layer?.key !== key) {
    state.layer?.mha.then((old) => old.dispose(), () => {});
    const config = { dModel: D, numHeads: H, numKvHeads: kvHeads, ...(rope ? { rope: ROPE } : {}) };
    const mha = state.pool.MultiHeadAttention(config).then(async (m) => {
      await m.setWeights(buildWeights(kvHeads));
      return m;
    });
    state.layer = { key, mha };
  }
  return state.layer.mha;
}

// Reads the controls and runs the layer on them: resolves to the note to show
// and the run to draw (none when a sentence is empty).
async function computeExample() {
  const cross = ui.cross.checked;
  const a = tokenize(ui.sentence.value);
  const b = cross ? tokenize(ui.sentence2.value) : a;
  const notes = [];
  if (a.dropped || (cross && b.dropped)) notes.push(`Only the first ${MAX_TOKENS} tokens are used.`);
  if (a.tokens.length === 0 || b.tokens.length === 0) return { note: 'Type at least one word in each sentence.' };
  const kvHeads = Number(ui.kvHeads.value);
  const rope = ui.rope.checked;
  const options = { causal: ui.causal.value, window: [windowBound(ui.windowLeft), windowBound(ui.windowRight)] };
  // positionalEncoding runs on the page's own module: at most 32 x 64 values
  // take far less than a round trip to a worker.
  const query = { data: embed(state.module, a.tokens), shape: [1, a.tokens.length, D] };
  const key = cross ? { data: embed(state.module, b.tokens), shape: [1, b.tokens.length, D] } : undefined;
  // The scores are the ones the softmax took (returnScores), -Infinity where masked.
  const r = await (await layer(kvHeads, rope)).forward(query, key, undefined, {
    ...options, returnAttnWeights: true, returnPerHeadOutput: true, returnIntermediates: true, returnScores: true,
  });
  notes.push(`${a.tokens.length} query tokens${cross ? `, ${b.tokens.length} key tokens` : ''}; ` +
    `K and V ${formatShape(r.k.shape)}: ${kvHeads} key/value ${kvHeads === 1 ? 'head' : 'heads'} ` +
    `for ${H} query heads; computed in ${state.pool.workers} workers.`);
  return {
    note: notes.join(' '),
    run: {
      source: 'example', heads: HEADS, numHeads: H, dModel: D,
      cross, ...options, kvHeads, rope, tq: a.tokens.length, tk: b.tokens.length, queries: a.tokens, keys: b.tokens,
      kvShape: r.k.shape, probs: r.attnWeights.data, scores: r.scores.data, perHead: r.perHeadOutput.data,
    },
  };
}

// The run of what the page shows: the built-in layer, or the visitor's
// model. A model closed or replaced is freed here, between runs.
async function compute() {
  await state.model.disposeRetired();
  return state.model.isOpen() ? { model: true, ...await state.model.compute() } : computeExample();
}

function show(result) {
  if (result.model) state.model.show(result);
  else ui.tokenNote.textContent = result.note;
  if (!result.run) return;
  state.last = result.run;
  render();
}

function explainConstruction() {
  const f = (x, d = 2) => formatNumber(x, d);
  ui.construction.replaceChildren(
    el('p', {}, 'Positions use the sinusoidal encoding of the original Transformer, from the library\'s ',
      el('code', {}, 'positionalEncoding(t, 64)'), ': PE(p)', el('sub', {}, '2f'), ' = sin(p·ω', el('sub', {}, 'f'),
      '), PE(p)', el('sub', {}, '2f+1'), ' = cos(p·ω', el('sub', {}, 'f'), '), ω', el('sub', {}, 'f'),
      ' = 10000', el('sup', {}, '−2f/64'), '. It is added to the word embeddings, which come from a generator seeded by the word ',
      'and leave dimensions 0–7 (the four fastest sine/cosine pairs) empty: those eight carry the position alone. ',
      'The three built heads read only them, with keys K = PE (identity weights) and these queries:'),
    el('ul', { class: 'explain-list' },
      el('li', {}, el('b', {}, 'Current token'), ' (head 1): Q = α·PE(i). The score of key j is α/√8 · PE(i)·PE(j) = α/√8 · Σ',
        el('sub', {}, 'f'), ' cos(ω', el('sub', {}, 'f'), '(i − j)), largest when j = i.'),
      el('li', {}, el('b', {}, 'Previous token'), ' (head 0): W', el('sub', {}, 'Q'),
        ' rotates each (sin, cos) pair back by ω', el('sub', {}, 'f'),
        ' (sin(a − b) = sin a cos b − cos a sin b, cos(a − b) = cos a cos b + sin a sin b), which turns PE(i) into PE(i − 1): ',
        'the score is α/√8 · Σ cos(ω', el('sub', {}, 'f'), '(i − 1 − j)), largest when j = i − 1. Token 0 has no previous token and takes key 0.'),
      el('li', {}, el('b', {}, 'First token'), ' (head 2): W', el('sub', {}, 'Q'), ' = 0 and the query bias is b',
        el('sub', {}, 'Q'), ' = α·PE(0) = α·(0, 1, 0, 1, …), the same query for every token; the score is α/√8 · Σ cos(ω',
        el('sub', {}, 'f'), '·j), largest at j = 0.')),
    el('p', {}, `Σ cos(ω_f δ) is ${PAIRS} at δ = 0 and at most ${f(RUNNER_UP, 3)} for any other offset up to ${2 * MAX_TOKENS + 1}, `,
      `a margin of ${f(MARGIN, 3)}. Scaling the queries by α = ${f(ALPHA, 1)} makes the best key's score beat the runner-up's by at least `,
      `${TARGET_GAP} before the softmax, so the best key gets more than 99.9% of the weight in a sentence of up to ${MAX_TOKENS} tokens: `,
      'the patterns are crisp. In cross-attention the keys are positions of the second sentence, so the heads attend to the key at the ',
      'same position, the one before it, and the first key; a query past the end of the second sentence has no such key and its ',
      'weights follow whichever position is most alike.'),
    el('p', { class: 'note' }, 'Heads 3–7 draw their query and key weights from a seeded generator: no designed pattern, but they mix word ',
      'and position features as a trained head would. Every head\'s values and output weights are random.'));
}

async function main() {
  initPage();
  for (const id of ['sentence', 'sentence2', 'causal', 'cross', 'rope']) ui[id] = document.getElementById(id);
  ui.kvHeads = document.getElementById('kv-heads');
  ui.windowLeft = document.getElementById('window-left');
  ui.windowRight = document.getElementById('window-right');
  ui.grid = document.getElementById('head-grid');
  ui.chart = document.getElementById('chart');
  ui.chartHint = document.getElementById('chart-hint');
  ui.chartLegend = document.getElementById('chart-legend');
  ui.kvLegend = document.getElementById('kv-legend');
  ui.tokenNote = document.getElementById('token-note');
  ui.construction = document.getElementById('construction');
  const params = new URLSearchParams(location.search);
  if (params.has('text')) ui.sentence.value = params.get('text');
  if (params.has('text2')) ui.sentence2.value = params.get('text2');
  // causal=1 is the library's causal: true (bottom-right).
  const causal = params.get('causal') === '1' ? 'bottom-right' : params.get('causal');
  if (['none', 'top-left', 'bottom-right'].includes(causal)) ui.causal.value = causal;
  if (params.get('cross') === '1') ui.cross.checked = true;
  if (params.get('rope') === '1') ui.rope.checked = true;
  if (KV_CHOICES.includes(Number(params.get('kv')))) ui.kvHeads.value = params.get('kv');
  const [left, right] = (params.get('window') ?? '').split(',');
  if (right !== undefined) [ui.windowLeft.value, ui.windowRight.value] = [left, right];
  ui.sentence2.disabled = !ui.cross.checked;

  ui.heads = document.getElementById('heads');
  ui.modelHeads = document.getElementById('model-heads');
  ui.legend = document.getElementById('legend');
  explainConstruction();

  [state.module, state.pool] = await Promise.all([attentionModule(), attentionPool()]);
  showBuild(state.module);
  document.body.dataset.poolWorkers = state.pool.workers;

  // The first result makes the page ready; an input made while it runs
  // supersedes it like any other.
  const recompute = newestOnly(compute, {
    onResult: (result) => {
      show(result);
      if (document.body.dataset.state === 'loading') document.body.dataset.state = 'ready';
    },
    onError: showError,
  });
  let timer = 0;
  const update = () => {
    clearTimeout(timer);
    timer = setTimeout(recompute, 120);
  };
  state.model = modelCard({
    module: state.module, pool: state.pool,
    request: ({ debounce = false } = {}) => (debounce ? update() : recompute()),
    onView: (open) => { document.body.dataset.view = open ? 'model' : 'example'; },
  });
  for (const input of [ui.sentence, ui.sentence2, ui.windowLeft, ui.windowRight]) input.addEventListener('input', update);
  for (const input of [ui.causal, ui.kvHeads, ui.rope]) input.addEventListener('change', update);
  ui.cross.addEventListener('change', () => {
    ui.sentence2.disabled = !ui.cross.checked;
    update();
  });
  onWidthChange(render);
  recompute();
}

main().catch((e) => showError(e));
