// The training page's line charts (SVG, no library): curves over training
// steps with a linear y axis, an optional dashed goal line, and a legend.
import { el, niceTicks, tickLabel, formatNumber } from './common.js';

/** At most this many points per line (evenly kept; the last always). */
const MAX_POINTS = 400;

function thin(points) {
  if (points.length <= MAX_POINTS) return points;
  const stride = points.length / MAX_POINTS;
  const out = [];
  for (let i = 0; i < MAX_POINTS - 1; i++) out.push(points[Math.floor(i * stride)]);
  out.push(points[points.length - 1]);
  return out;
}

/**
 * lineChart({ width, height, lines: [{ label, colour, points: [[x, y]], dash? }],
 * yMax, yTicks?, goal?: { y, label }, xTitle, yTitle, label, format? })
 * returns an <svg>; x runs from 0 to the last point's x (at least xMin).
 */
export function lineChart(opts) {
  const { width, height = 200, lines, yMax, goal } = opts;
  const margin = { top: 10, right: 14, bottom: 38, left: 48 };
  const plotW = Math.max(40, width - margin.left - margin.right);
  const plotH = height - margin.top - margin.bottom;
  const xEnd = Math.max(opts.xMin ?? 10, ...lines.map((l) => l.points.at(-1)?.[0] ?? 0));
  const xTicks = niceTicks(xEnd, Math.max(2, Math.floor(plotW / 70)));
  const xTop = xTicks.at(-1);
  const yTicks = opts.yTicks ?? niceTicks(yMax, 4);
  const yTop = yTicks.at(-1);
  const x = (v) => margin.left + (plotW * v) / xTop;
  const y = (v) => margin.top + plotH * (1 - Math.min(v, yTop) / yTop);
  const svg = el('svg:svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': opts.label });
  for (const t of yTicks) {
    svg.append(el('svg:line', { class: 'grid', x1: margin.left, x2: margin.left + plotW, y1: y(t), y2: y(t) }),
      el('svg:text', { class: 'tick', x: margin.left - 6, y: y(t) + 4, 'text-anchor': 'end' }, (opts.format ?? tickLabel)(t)));
  }
  for (const t of xTicks) {
    svg.append(el('svg:text', { class: 'tick', x: x(t), y: margin.top + plotH + 15, 'text-anchor': 'middle' }, tickLabel(t)));
  }
  if (goal) {
    svg.append(el('svg:line', { class: 'goal', x1: margin.left, x2: margin.left + plotW, y1: y(goal.y), y2: y(goal.y) }),
      el('svg:text', { class: 'tick', x: margin.left + plotW - 4, y: y(goal.y) + 14, 'text-anchor': 'end' }, goal.label));
  }
  for (const line of lines) {
    if (line.points.length === 0) continue;
    const d = thin(line.points).map(([px, py]) => `${x(px).toFixed(1)},${y(py).toFixed(1)}`).join(' ');
    svg.append(el('svg:polyline', {
      points: d, fill: 'none', stroke: line.colour, 'stroke-width': 2, 'stroke-linejoin': 'round',
      'stroke-dasharray': line.dash, 'data-series': line.label,
    }));
  }
  svg.append(el('svg:line', { x1: margin.left, x2: margin.left + plotW, y1: y(0), y2: y(0), stroke: '#5a6375' }),
    el('svg:line', { x1: margin.left, x2: margin.left, y1: margin.top, y2: y(0), stroke: '#5a6375' }),
    el('svg:text', { class: 'axis-title', x: margin.left + plotW / 2, y: height - 4, 'text-anchor': 'middle' }, opts.xTitle));
  const yt = margin.top + plotH / 2;
  svg.append(el('svg:text', {
    class: 'axis-title', x: 12, y: yt, 'text-anchor': 'middle', transform: `rotate(-90 12 ${yt})`,
  }, opts.yTitle));
  return svg;
}

/** A legend row: a swatch per line, with its last value. */
export function lineLegend(lines, digits = 3) {
  return el('div', { class: 'chart-legend' }, ...lines.map((l) => el('span', {},
    el('span', { class: 'swatch', style: `background:${l.colour}` }),
    l.points.length ? `${l.label}: ${formatNumber(l.points.at(-1)[1], digits)}` : l.label)));
}
