// Attention explorer: a sentence through one attention layer (d_model = 64,
// 8 heads, explorer-model.js), with the masks, grouped key/value heads and
// rotary positions of the library's MultiHeadAttention to switch on and off.
// The layer runs in the page's worker pool, so typing never waits for it.
import {
  attentionModule, attentionPool, initPage, el, heatmap, legend, formatNumber, formatShape, showError, onWidthChange, showBuild,
  rowArgmax, niceTicks, tickLabel,
} from './common.js';
import { newestOnly } from './newest-only.js';
import { expectedArgmax } from './position-heads.js';
import {
  D, H, MAX_TOKENS, PAIRS, TARGET_GAP, KV_CHOICES, ALPHA, RUNNER_UP, MARGIN, HEADS, kvHeadOf, headColour,
  buildWeights, tokenize, embed,
} from './explorer-model.js';

/** Rotary positions when switched on: pairs (2i, 2i+1), as the sin/cos pairs of the encoding. */
const ROPE = { style: 'interleaved' };

const ui = {};
const state = { selected: new Set(HEADS.map((_, h) => h)), last: null, layer: null };

/** The last run's numbers, for the browser test (which reads them as the page shows them). */
export const lastRun = () => state.last;

function headCard(h, run, width) {
  const head = HEADS[h];
  const { tq, tk, probs, scores, queries, keys } = run;
  const offset = h * tq * tk;
  const argmax = rowArgmax(probs, tq, tk, offset);
  const rowMax = argmax.map((j, i) => probs[offset + i * tk + j]);
  const expected = head.built ? expectedArgmax(head.pattern, tq, tk) : null;
  const matches = expected ? expected.every((e, i) => e === null || e === argmax[i]) : null;
  // The library marks with -Infinity the scores of keys the masks hide.
  const masked = (r, c) => scores[offset + r * tk + c] === -Infinity;
  const colour = headColour(h, run.kvHeads);
  const kv = kvHeadOf(h, run.kvHeads);
  const fig = heatmap({
    data: probs, offset, rows: tq, cols: tk, scale: 'prob', vmin: 0, vmax: 1, width,
    rowLabels: queries, colLabels: keys, xTitle: 'keys', yTitle: 'queries',
    label: `Attention weights of head ${h} (${head.name}): ${tq} queries by ${tk} keys`,
    isMasked: masked,
    describe: (r, c, v) => `"${queries[r]}" \u2192 "${keys[c]}": ${masked(r, c) ? 'masked'
      : `${formatNumber(v, 3)} (score ${formatNumber(scores[offset + r * tk + c], 3)})`}`,
  });
  return el('article', {
    class: 'card head-card', style: `border-left: 4px solid ${colour}`,
    dataset: {
      head: h, pattern: head.pattern, rows: tq, cols: tk, kvHead: kv,
      argmax: argmax.join(','), rowmax: rowMax.map((p) => p.toFixed(4)).join(','),
      ...(expected ? { expected: expected.map((e) => (e === null ? '' : e)).join(','), matches: String(matches) } : {}),
    },
  },
  el('h3', {},
    el('span', { class: 'swatch', style: `background:${colour}` }),
    `Head ${h}`, el('span', { class: 'note' }, `\u00b7 ${head.name}`),
    el('span', { class: `pill kind ${head.built ? 'tag-built' : 'tag-random'}` }, head.built ? 'hand-built' : 'random'),
    run.kvHeads < H ? el('span', { class: 'pill kind', style: `background:${colour};color:#fff` }, `kv head ${kv}`) : null),
  fig,
  head.built ? builtNote(argmax, rowMax, expected, matches) : null);
}

// Under a built head: does every row's strongest key match, and how crisp.
function builtNote(argmax, rowMax, expected, matches) {
  const claimed = expected.flatMap((e, i) => (e === null ? [] : [rowMax[i]]));
  const unclaimed = expected.length - claimed.length;
  return el('p', { class: 'note', style: 'margin:0.2rem 0 0' },
    el('span', { class: `pill ${matches ? 'ok' : 'bad'}` }, matches ? 'pattern as built' : 'pattern differs'),
    ` strongest key per row: ${argmax.join(' ')}; its weight is at least ${formatNumber(Math.min(...claimed), 4)}`,
    unclaimed ? `; the last ${unclaimed} ${unclaimed === 1 ? 'query has' : 'queries have'} no such key in the second sentence` : '');
}

function contributionChart(run) {
  const { tq, perHead, queries } = run;
  const heads = [...state.selected].sort((a, b) => a - b);
  const norms = heads.map((h) => queries.map((_, i) => {
    let s = 0;
    for (let c = 0; c < D; c++) s += perHead[(h * tq + i) * D + c] ** 2;
    return Math.sqrt(s);
  }));
  const container = ui.chart;
  const margin = { top: 12, right: 12, bottom: 78, left: 58 };
  const minBand = Math.max(18, heads.length * 5 + 8);
  const width = Math.max(container.clientWidth, margin.left + margin.right + tq * minBand);
  const height = 300;
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const maxV = Math.max(1e-6, ...norms.flat());
  const ticks = niceTicks(maxV, 4);
  const top = ticks[ticks.length - 1];
  const y = (v) => margin.top + plotH * (1 - v / top);
  const band = plotW / tq;
  const barW = Math.max(2, (band * 0.8) / Math.max(1, heads.length));
  const svg = el('svg:svg', {
    width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': 'Bar chart: contribution norm of each head per query token',
  });
  for (const t of ticks) {
    svg.append(el('svg:line', { class: 'grid', x1: margin.left, x2: width - margin.right, y1: y(t), y2: y(t) }));
    svg.append(el('svg:text', { class: 'tick', x: margin.left - 6, y: y(t) + 4, 'text-anchor': 'end' }, tickLabel(t)));
  }
  heads.forEach((h, k) => {
    queries.forEach((_, i) => {
      const v = norms[k][i];
      const x = margin.left + i * band + band * 0.1 + k * barW;
      svg.append(el('svg:rect', {
        x, y: y(v), width: Math.max(1, barW - 1), height: Math.max(0, y(0) - y(v)), fill: headColour(h, run.kvHeads),
        'data-head': h, 'data-token': i, 'data-value': v.toFixed(5),
      }, el('svg:title', {}, `head ${h}, "${queries[i]}": ${formatNumber(v, 4)}`)));
    });
  });
  svg.append(el('svg:line', { x1: margin.left, x2: width - margin.right, y1: y(0), y2: y(0), stroke: '#5a6375' }));
  svg.append(el('svg:line', { x1: margin.left, x2: margin.left, y1: margin.top, y2: y(0), stroke: '#5a6375' }));
  queries.forEach((q, i) => {
    const x = margin.left + (i + 0.5) * band;
    svg.append(el('svg:text', {
      class: 'tick', x, y: y(0) + 14, 'text-anchor': 'end', transform: `rotate(-40 ${x} ${y(0) + 14})`,
    }, q.length > 12 ? `${q.slice(0, 11)}\u2026` : q));
  });
  svg.append(el('svg:text', { class: 'axis-title', x: margin.left + plotW / 2, y: height - 6, 'text-anchor': 'middle' },
    'query token'));
  const yt = margin.top + plotH / 2;
  svg.append(el('svg:text', { class: 'axis-title', x: 14, y: yt, 'text-anchor': 'middle', transform: `rotate(-90 14 ${yt})` },
    '\u2016z\u2095 W\u2092\u02b0\u2016 (contribution norm)'));
  container.replaceChildren(svg);
  ui.chartLegend.replaceChildren(...heads.map((h) => el('span', {},
    el('span', { class: 'swatch', style: `background:${headColour(h, run.kvHeads)}` }), `head ${h} (${HEADS[h].name})`)));
  // On a narrow screen the bars scroll sideways inside the card: say so.
  const hidden = container.scrollWidth - container.clientWidth;
  ui.chartHint.hidden = hidden <= 0;
  ui.chartHint.textContent = `Swipe or scroll the chart sideways: it is ${width} px wide, for all ${tq} tokens \u2192`;
}

// Which query heads read each key/value head, in their colours.
function kvLegend(kvHeads) {
  if (kvHeads === H) return [];
  return Array.from({ length: kvHeads }, (_, g) => el('span', { dataset: { kvHead: g } },
    ...HEADS.flatMap((_, h) => (kvHeadOf(h, kvHeads) === g
      ? [el('span', { class: 'swatch', style: `background:${headColour(h, kvHeads)}` })] : [])),
    `kv head ${g}: heads ${HEADS.flatMap((_, h) => (kvHeadOf(h, kvHeads) === g ? [h] : [])).join(', ')}`));
}

function render() {
  const run = state.last;
  if (!run) return;
  const heads = [...state.selected].sort((a, b) => a - b);
  const probe = ui.grid.clientWidth;
  const columns = Math.max(1, Math.floor((probe + 16) / (330 + 16)));
  const cardWidth = Math.floor((probe - (columns - 1) * 16) / columns) - 36;
  ui.grid.replaceChildren(...heads.map((h) => headCard(h, run, cardWidth)));
  if (heads.length === 0) ui.grid.append(el('p', { class: 'note' }, 'No head selected.'));
  ui.swatches.forEach((s, h) => { s.style.background = headColour(h, run.kvHeads); });
  ui.kvLegend.replaceChildren(...kvLegend(run.kvHeads));
  contributionChart(run);
  Object.assign(document.body.dataset, {
    mode: run.cross ? 'cross' : 'self', causal: run.causal, window: run.window.join(','),
    kvHeads: run.kvHeads, rope: String(run.rope),
  });
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
async function compute() {
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
      cross, ...options, kvHeads, rope, tq: a.tokens.length, tk: b.tokens.length, queries: a.tokens, keys: b.tokens,
      kvShape: r.k.shape, probs: r.attnWeights.data, scores: r.scores.data, perHead: r.perHeadOutput.data,
    },
  };
}

function show({ note, run }) {
  ui.tokenNote.textContent = note;
  if (!run) return;
  state.last = run;
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

  const picker = document.getElementById('heads');
  ui.swatches = HEADS.map((head, h) => {
    const swatch = el('span', { class: 'swatch' });
    picker.append(el('label', {},
      el('input', {
        type: 'checkbox', checked: true, 'data-head': h,
        onchange: (e) => {
          if (e.target.checked) state.selected.add(h);
          else state.selected.delete(h);
          render();
        },
      }),
      swatch, `${h}: ${head.name}`));
    return swatch;
  });
  document.getElementById('legend').replaceChildren(legend({ scale: 'prob', vmin: 0, vmax: 1, title: 'attention weight' }));
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
