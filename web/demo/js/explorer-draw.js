// The explorer's figures, for its built-in layer and for a layer of the
// visitor's model alike: a heatmap card per head and the bar chart of each
// head's contribution. A run describes its heads (`heads`: name, pattern,
// whether built by hand), their number, the key/value heads and the width.
import {
  el, heatmap, formatNumber, rowArgmax, niceTicks, tickLabel,
} from './common.js';
import { expectedArgmax } from './position-heads.js';
import { kvHeadOf, headColour } from './explorer-model.js';

/** The colour of head h in a run. */
export const runColour = (run, h) => headColour(h, run.kvHeads, run.numHeads);

/** Head h's heatmap of weights, its tags and (built heads) whether it does what it was built for. */
export function headCard(h, run, width) {
  const head = run.heads[h];
  const { tq, tk, probs, scores, queries, keys } = run;
  const offset = h * tq * tk;
  const argmax = rowArgmax(probs, tq, tk, offset);
  const rowMax = argmax.map((j, i) => probs[offset + i * tk + j]);
  const expected = head.built ? expectedArgmax(head.pattern, tq, tk) : null;
  const matches = expected ? expected.every((e, i) => e === null || e === argmax[i]) : null;
  // The library marks with -Infinity the scores of keys the masks hide.
  const masked = (r, c) => scores[offset + r * tk + c] === -Infinity;
  const colour = runColour(run, h);
  const kv = kvHeadOf(h, run.kvHeads, run.numHeads);
  // A model's weights may differ little (a tiny random model spreads them
  // evenly): its maps run from their own smallest to their largest weight.
  const [vmin, vmax] = run.fitScale ? weightRange(probs, scores, offset, tq * tk) : [0, 1];
  const fig = heatmap({
    data: probs, offset, rows: tq, cols: tk, scale: 'prob', vmin, vmax, width,
    rowLabels: queries, colLabels: keys, xTitle: 'keys', yTitle: 'queries',
    label: `Attention weights of head ${h} (${head.name}): ${tq} queries by ${tk} keys`,
    isMasked: masked,
    describe: (r, c, v) => `"${queries[r]}" \u2192 "${keys[c]}": ${masked(r, c) ? 'masked'
      : `${formatNumber(v, 3)} (score ${formatNumber(scores[offset + r * tk + c], 3)})`}`,
  });
  // A model's heads have no tag (tag: null); the example's are built or random.
  const tag = head.tag !== undefined ? head.tag : (head.built ? 'hand-built' : 'random');
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
    `Head ${h}`, head.name ? el('span', { class: 'note' }, `\u00b7 ${head.name}`) : null,
    run.fitScale ? el('span', { class: 'note' }, `\u00b7 ${formatNumber(vmin, 3)} to ${formatNumber(vmax, 3)}`) : null,
    tag ? el('span', { class: `pill kind ${head.built ? 'tag-built' : 'tag-random'}` }, tag) : null,
    run.kvHeads < run.numHeads ? el('span', { class: 'pill kind', style: `background:${colour};color:#fff` }, `kv head ${kv}`) : null),
  fig,
  head.built ? builtNote(argmax, rowMax, expected, matches) : null);
}

// The smallest and largest of n weights from `offset`, masked keys left out.
function weightRange(probs, scores, offset, n) {
  let lo = Infinity;
  let hi = -Infinity;
  for (let k = offset; k < offset + n; k++) {
    if (scores[k] === -Infinity) continue;
    lo = Math.min(lo, probs[k]);
    hi = Math.max(hi, probs[k]);
  }
  return hi > lo ? [lo, hi] : [0, Math.max(hi, 1e-6)];
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

/**
 * The bars of ||z_h W_O^h|| per query token for the selected heads, into
 * `container`, their legend into `legendBox`; `hint` says when the chart
 * scrolls sideways.
 */
export function contributionChart(run, selected, { container, legendBox, hint }) {
  const { tq, perHead, queries, dModel } = run;
  const heads = [...selected].sort((a, b) => a - b);
  const norms = heads.map((h) => queries.map((_, i) => {
    let s = 0;
    for (let c = 0; c < dModel; c++) s += perHead[(h * tq + i) * dModel + c] ** 2;
    return Math.sqrt(s);
  }));
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
        x, y: y(v), width: Math.max(1, barW - 1), height: Math.max(0, y(0) - y(v)), fill: runColour(run, h),
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
  legendBox.replaceChildren(...heads.map((h) => el('span', {},
    el('span', { class: 'swatch', style: `background:${runColour(run, h)}` }),
    run.heads[h].name ? `head ${h} (${run.heads[h].name})` : `head ${h}`)));
  // On a narrow screen the bars scroll sideways inside the card: say so.
  const hidden = container.scrollWidth - container.clientWidth;
  hint.hidden = hidden <= 0;
  hint.textContent = `Swipe or scroll the chart sideways: it is ${width} px wide, for all ${tq} tokens \u2192`;
}

/** Which query heads read each key/value head, in their colours (nothing without grouping). */
export function kvLegend(run) {
  const { kvHeads, numHeads } = run;
  if (kvHeads === numHeads) return [];
  const readers = (g) => run.heads.flatMap((_, h) => (kvHeadOf(h, kvHeads, numHeads) === g ? [h] : []));
  return Array.from({ length: kvHeads }, (_, g) => el('span', { dataset: { kvHead: g } },
    ...readers(g).map((h) => el('span', { class: 'swatch', style: `background:${runColour(run, h)}` })),
    `kv head ${g}: heads ${readers(g).join(', ')}`));
}
