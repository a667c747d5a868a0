// Attention explorer: a sentence through one attention layer (d_model = 64,
// 8 heads), three of whose heads are built by hand from the sinusoidal
// positional encoding so that their pattern is known.
import {
  attentionModule, initPage, el, heatmap, legend, randn, hashString, formatNumber, showError,
  requireFunction, onWidthChange, showBuild, rowArgmax, niceTicks, tickLabel, PALETTE,
} from './common.js';

const D = 64;
const H = 8;
const DK = D / H;
const MAX_TOKENS = 32;
/** Dimensions 0..POS_DIMS-1 (the 4 fastest sine/cosine pairs) carry position only. */
const POS_DIMS = DK;
const PAIRS = POS_DIMS / 2;
/** Softmax gap (in the exponent) between a built head's best key and the runner-up. */
const TARGET_GAP = 12;

// omega_f of the sinusoidal encoding: PE[p, 2f] = sin(p w_f), PE[p, 2f+1] = cos(p w_f).
const OMEGA = Array.from({ length: PAIRS }, (_, f) => 10000 ** (-(2 * f) / D));
const similarity = (delta) => OMEGA.reduce((s, w) => s + Math.cos(w * delta), 0);
// The best any other offset (up to twice the longest sentence) can do.
let RUNNER_UP = -Infinity;
for (let d = 1; d <= 2 * MAX_TOKENS + 1; d++) RUNNER_UP = Math.max(RUNNER_UP, similarity(d));
const MARGIN = PAIRS - RUNNER_UP;
/** Query scale of the built heads: alpha / sqrt(d_k) * MARGIN = TARGET_GAP. */
const ALPHA = (TARGET_GAP * Math.sqrt(DK)) / MARGIN;

const HEADS = [
  { name: 'previous token', pattern: 'previous', built: true },
  { name: 'current token', pattern: 'self', built: true },
  { name: 'first token', pattern: 'first', built: true },
  ...Array.from({ length: H - 3 }, () => ({ name: 'random weights', pattern: 'random', built: false })),
];

/** The argmax each row of a built head must have (null: no claim). */
function expectedArgmax(pattern, tq, tk) {
  return Array.from({ length: tq }, (_, i) => {
    if (pattern === 'first') return 0;
    if (pattern === 'self') return i < tk ? i : null;
    if (pattern === 'previous') return i - 1 < tk ? Math.max(0, i - 1) : null;
    return null;
  });
}

// ---------------------------------------------------------------------------
// Weights (X @ W layout: rows = input features, columns = outputs)
// ---------------------------------------------------------------------------

function buildWeights() {
  const w = {
    wQ: new Float32Array(D * D), wK: new Float32Array(D * D),
    wV: randn(D * D, 1 / Math.sqrt(D), 301), wO: randn(D * D, 1 / Math.sqrt(D), 302),
    bQ: new Float32Array(D), bK: new Float32Array(D), bV: new Float32Array(D), bO: new Float32Array(D),
  };
  const set = (m, row, col, v) => { m[row * D + col] = v; };
  HEADS.forEach((head, h) => {
    const c0 = h * DK;
    if (!head.built) {
      // Random query and key projections of every input feature.
      const q = randn(D * DK, 0.2, 400 + h);
      const k = randn(D * DK, 0.2, 500 + h);
      for (let r = 0; r < D; r++) {
        for (let c = 0; c < DK; c++) {
          set(w.wQ, r, c0 + c, q[r * DK + c]);
          set(w.wK, r, c0 + c, k[r * DK + c]);
        }
      }
      return;
    }
    // Keys: the position features as they are.
    for (let r = 0; r < POS_DIMS; r++) set(w.wK, r, c0 + r, 1);
    if (head.pattern === 'self') {
      for (let r = 0; r < POS_DIMS; r++) set(w.wQ, r, c0 + r, ALPHA);
    } else if (head.pattern === 'previous') {
      // Rotate each (sin, cos) pair back by one step: PE(p) -> PE(p - 1).
      OMEGA.forEach((om, f) => {
        const s = 2 * f;
        const c = s + 1;
        set(w.wQ, s, c0 + s, ALPHA * Math.cos(om));
        set(w.wQ, c, c0 + s, -ALPHA * Math.sin(om));
        set(w.wQ, s, c0 + c, ALPHA * Math.sin(om));
        set(w.wQ, c, c0 + c, ALPHA * Math.cos(om));
      });
    } else if (head.pattern === 'first') {
      // A constant query, alpha * PE(0) = alpha * (0, 1, 0, 1, ...), from the bias alone.
      for (let f = 0; f < PAIRS; f++) w.bQ[c0 + 2 * f + 1] = ALPHA;
    }
  });
  return w;
}

// ---------------------------------------------------------------------------
// Tokens and embeddings
// ---------------------------------------------------------------------------

function tokenize(text) {
  const all = text.match(/[\p{L}\p{N}]+(?:['\u2019][\p{L}]+)*|[^\s\p{L}\p{N}]/gu) ?? [];
  return { tokens: all.slice(0, MAX_TOKENS), dropped: Math.max(0, all.length - MAX_TOKENS) };
}

// Word embedding (seeded by the word) in dimensions POS_DIMS..D-1, plus the
// library's sinusoidal positional encoding in all D dimensions.
function embed(module, tokens) {
  const t = tokens.length;
  const pe = requireFunction(module, 'positionalEncoding')(t, D);
  if (pe.data.length !== t * D) {
    throw new Error(`positionalEncoding(${t}, ${D}) returned ${pe.data.length} values, expected ${t * D}`);
  }
  const x = Float32Array.from(pe.data);
  tokens.forEach((word, i) => {
    const e = randn(D - POS_DIMS, 0.5, hashString(word.toLowerCase()));
    for (let c = POS_DIMS; c < D; c++) x[i * D + c] += e[c - POS_DIMS];
  });
  return x;
}

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

const ui = {};
const state = { selected: new Set(HEADS.map((_, h) => h)), last: null };

function headCard(h, run, width) {
  const head = HEADS[h];
  const { tq, tk, probs, queries, keys } = run;
  const offset = h * tq * tk;
  const argmax = rowArgmax(probs, tq, tk, offset);
  const rowMax = argmax.map((j, i) => probs[offset + i * tk + j]);
  const expected = head.built ? expectedArgmax(head.pattern, tq, tk) : null;
  const matches = expected ? expected.every((e, i) => e === null || e === argmax[i]) : null;
  const fig = heatmap({
    data: probs, offset, rows: tq, cols: tk, scale: 'prob', vmin: 0, vmax: 1, width,
    rowLabels: queries, colLabels: keys, xTitle: 'keys', yTitle: 'queries',
    label: `Attention weights of head ${h} (${head.name}): ${tq} queries by ${tk} keys`,
    // Causal (bottom-right aligned): query i sees keys j <= i + (tk - tq).
    isMasked: run.causal ? (r, c) => c > r + (tk - tq) : undefined,
    describe: (r, c, v) => `"${queries[r]}" \u2192 "${keys[c]}": ${run.causal && c > r + (tk - tq) ? 'masked' : formatNumber(v, 3)}`,
  });
  return el('article', {
    class: 'card head-card',
    dataset: {
      head: h, pattern: head.pattern, rows: tq, cols: tk,
      argmax: argmax.join(','), rowmax: rowMax.map((p) => p.toFixed(4)).join(','),
      ...(expected ? { expected: expected.map((e) => (e === null ? '' : e)).join(','), matches: String(matches) } : {}),
    },
  },
  el('h3', {},
    el('span', { class: 'swatch', style: `background:${PALETTE[h]}` }),
    `Head ${h}`, el('span', { class: 'note' }, `· ${head.name}`),
    el('span', { class: `pill kind ${head.built ? 'tag-built' : 'tag-random'}` }, head.built ? 'hand-built' : 'random')),
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
        x, y: y(v), width: Math.max(1, barW - 1), height: Math.max(0, y(0) - y(v)), fill: PALETTE[h],
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
    el('span', { class: 'swatch', style: `background:${PALETTE[h]}` }), `head ${h} (${HEADS[h].name})`)));
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
  contributionChart(run);
  document.body.dataset.mode = run.cross ? 'cross' : 'self';
  document.body.dataset.causal = String(run.causal);
  document.getElementById('masked-key').hidden = !run.causal;
}

function compute() {
  const cross = ui.cross.checked;
  const causal = !cross && ui.causal.checked;
  const a = tokenize(ui.sentence.value);
  const b = cross ? tokenize(ui.sentence2.value) : a;
  const notes = [];
  if (a.dropped || (cross && b.dropped)) notes.push(`Only the first ${MAX_TOKENS} tokens are used.`);
  if (a.tokens.length === 0 || b.tokens.length === 0) {
    ui.tokenNote.textContent = 'Type at least one word in each sentence.';
    return;
  }
  notes.push(`${a.tokens.length} query tokens${cross ? `, ${b.tokens.length} key tokens` : ''}.`);
  ui.tokenNote.textContent = notes.join(' ');
  const xq = embed(state.module, a.tokens);
  const query = { data: xq, shape: [1, a.tokens.length, D] };
  const key = cross ? { data: embed(state.module, b.tokens), shape: [1, b.tokens.length, D] } : undefined;
  const r = state.mha.forward(query, key, undefined,
    { causal, returnAttnWeights: true, returnPerHeadOutput: true });
  state.last = {
    cross, causal, tq: a.tokens.length, tk: b.tokens.length, queries: a.tokens, keys: b.tokens,
    probs: r.attnWeights.data, perHead: r.perHeadOutput.data,
  };
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
  for (const id of ['sentence', 'sentence2', 'causal', 'cross']) ui[id] = document.getElementById(id);
  ui.grid = document.getElementById('head-grid');
  ui.chart = document.getElementById('chart');
  ui.chartLegend = document.getElementById('chart-legend');
  ui.tokenNote = document.getElementById('token-note');
  ui.construction = document.getElementById('construction');
  const params = new URLSearchParams(location.search);
  if (params.has('text')) ui.sentence.value = params.get('text');
  if (params.has('text2')) ui.sentence2.value = params.get('text2');
  if (params.get('causal') === '1') ui.causal.checked = true;
  if (params.get('cross') === '1') ui.cross.checked = true;
  ui.sentence2.disabled = !ui.cross.checked;
  ui.causal.disabled = ui.cross.checked;

  const picker = document.getElementById('heads');
  HEADS.forEach((head, h) => {
    picker.append(el('label', {},
      el('input', {
        type: 'checkbox', checked: true, 'data-head': h,
        onchange: (e) => {
          if (e.target.checked) state.selected.add(h);
          else state.selected.delete(h);
          render();
        },
      }),
      el('span', { class: 'swatch', style: `background:${PALETTE[h]}` }),
      `${h}: ${head.name}`));
  });
  document.getElementById('legend').replaceChildren(legend({ scale: 'prob', vmin: 0, vmax: 1, title: 'attention weight' }));
  explainConstruction();

  state.module = await attentionModule();
  showBuild(state.module);
  state.mha = new state.module.MultiHeadAttention({ dModel: D, numHeads: H });
  state.mha.setWeights(buildWeights());

  let timer = 0;
  const update = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      try {
        compute();
      } catch (e) {
        showError(e);
      }
    }, 120);
  };
  ui.sentence.addEventListener('input', update);
  ui.sentence2.addEventListener('input', update);
  ui.causal.addEventListener('change', update);
  ui.cross.addEventListener('change', () => {
    ui.sentence2.disabled = !ui.cross.checked;
    ui.causal.disabled = ui.cross.checked;
    update();
  });
  onWidthChange(render);
  compute();
  document.body.dataset.state = 'ready';
}

main().catch((e) => showError(e));
