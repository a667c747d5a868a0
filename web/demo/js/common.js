// Shared by the demo pages: the package (one wasm module and one worker pool
// per page), the nav, seeded random numbers, heatmaps, colour legends and
// small DOM helpers.
import {
  createAttentionModule, createAttentionPool, wasmSimdSupported, wasmRelaxedSimdSupported,
} from '../../index.js';

export { createAttentionModule, wasmSimdSupported, wasmRelaxedSimdSupported };

// ---------------------------------------------------------------------------
// The library
// ---------------------------------------------------------------------------

let modulePromise = null;

/**
 * The page's wasm module (the SIMD build when the browser has wasm SIMD), on
 * one thread: the pages show every backend, which only the single-thread
 * builds carry.
 */
export function attentionModule() {
  modulePromise ??= createAttentionModule({ threads: 1 });
  return modulePromise;
}

/** Workers of the page's pool: the forwards run beside the page, on two cores. */
export const POOL_WORKERS = 2;

let poolPromise = null;

/**
 * The page's worker pool, created once: the pages run their forwards in it
 * so that the page's own thread stays free to draw and to take input.
 */
export function attentionPool() {
  poolPromise ??= createAttentionPool({ workers: POOL_WORKERS });
  return poolPromise;
}

/** Awaits fn(mha) with a fresh MultiHeadAttention of the pool and disposes it afterwards. */
export async function withPooledMha(pool, config, weights, fn) {
  const mha = await pool.MultiHeadAttention(config);
  try {
    await mha.setWeights(weights);
    return await fn(mha);
  } finally {
    await mha.dispose();
  }
}

/** Calls fn(mha) with a fresh MultiHeadAttention and disposes it afterwards. */
export function withMha(module, config, weights, fn) {
  const mha = new module.MultiHeadAttention(config);
  try {
    mha.setWeights(weights);
    return fn(mha);
  } finally {
    mha.dispose();
  }
}

/** Whether the module has a function of the layer API (it may not yet). */
export function requireFunction(module, name) {
  if (typeof module[name] !== 'function') {
    throw new Error(`this build of simd-attention has no module.${name}(); ` +
      'rebuild the package (npm run build) with the layers API');
  }
  return module[name];
}

// ---------------------------------------------------------------------------
// Page frame
// ---------------------------------------------------------------------------

const PAGES = [
  ['index.html', 'Home'],
  ['shapes.html', 'Shapes walk-through'],
  ['explorer.html', 'Attention explorer'],
  ['bench.html', 'Live benchmark'],
  ['training.html', 'Training'],
];

/**
 * Puts the site header (the nav and a slot for the build badge) at the top of
 * the page and the footer at its end; every page calls it first.
 */
export function initPage() {
  const here = location.pathname.split('/').pop() || 'index.html';
  const nav = el('nav', { id: 'site-nav', 'aria-label': 'Demos' },
    el('a', { class: 'brand', href: 'index.html' }, 'simd-attention'),
    el('ul', {}, ...PAGES.slice(1).map(([href, label]) => el('li', {},
      el('a', { href, ...(href === here ? { 'aria-current': 'page' } : {}) }, label)))),
    el('span', { id: 'build-badge', class: 'build-badge', hidden: true }));
  document.body.prepend(el('header', { class: 'site-header' }, nav));
  document.body.append(el('footer', {}, 'simd-attention demos \u00b7 computed in your browser with WebAssembly \u00b7 ',
    el('code', {}, 'npm start'), ' serves them'));
}

const BUILD_NAMES = { 'relaxed-simd': 'relaxed-SIMD', simd: 'SIMD', nosimd: 'non-SIMD' };

/** The name of the wasm build a module runs, as the pages say it ("relaxed-SIMD"). */
export const buildName = (module) => BUILD_NAMES[module.build] ?? module.build;

/** Names the build the loader picked for this page in the header's badge. */
export function showBuild(module) {
  const badge = document.getElementById('build-badge');
  badge.textContent = `${buildName(module)} build`;
  badge.title = `simd-attention loaded its ${buildName(module)} WebAssembly build; kernels ${module.kernels}`;
  badge.dataset.build = module.build;
  badge.hidden = false;
}

/** Shows an error on the page (and keeps it in the console for developers). */
export function showError(error, where = document.querySelector('main')) {
  const box = el('div', { class: 'error', role: 'alert' },
    el('strong', {}, 'Something went wrong: '), String(error?.message ?? error));
  where?.prepend(box);
  document.body.dataset.state = 'error';
  console.error(error);
}

// ---------------------------------------------------------------------------
// DOM helpers
// ---------------------------------------------------------------------------

/** el('div', { class: 'x', onclick: f }, child, 'text', ...) */
export function el(tag, attrs = {}, ...children) {
  const svg = tag.startsWith('svg:');
  const node = svg
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

export const formatShape = (shape) => `[${shape.join(', ')}]`;

export function formatNumber(x, digits = 3) {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(1);
  return x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : digits);
}

/** Calls fn at most once per animation frame after the last resize settles. */
export function onWidthChange(fn) {
  let width = window.innerWidth;
  let timer = 0;
  window.addEventListener('resize', () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (window.innerWidth !== width) {
        width = window.innerWidth;
        fn();
      }
    }, 150);
  });
}

// ---------------------------------------------------------------------------
// Seeded random numbers
// ---------------------------------------------------------------------------

/** mulberry32: a small seeded generator of uniform numbers in [0, 1). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n normally distributed values (mean 0, standard deviation `scale`). */
export function randn(n, scale, seed) {
  const next = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u = 1 - next();
    const v = next();
    const r = Math.sqrt(-2 * Math.log(u)) * scale;
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < n) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

/** FNV-1a hash of a string (a seed per word). */
export function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

// ---------------------------------------------------------------------------
// Colour scales
// ---------------------------------------------------------------------------

const hex = (s) => [1, 3, 5].map((i) => parseInt(s.slice(i, i + 2), 16));

function ramp(stops) {
  const pts = stops.map(([t, c]) => [t, hex(c)]);
  return (t) => {
    const x = Math.min(1, Math.max(0, t));
    let i = 1;
    while (i < pts.length - 1 && x > pts[i][0]) i++;
    const [t0, c0] = pts[i - 1];
    const [t1, c1] = pts[i];
    const f = t1 === t0 ? 0 : (x - t0) / (t1 - t0);
    return [0, 1, 2].map((k) => Math.round(c0[k] + (c1[k] - c0[k]) * f));
  };
}

/**
 * 'prob': white to deep blue for values in [vmin, vmax] (probabilities);
 * 'signed': blue (negative) - white (0) - red (positive), symmetric.
 */
export const SCALES = {
  prob: ramp([[0, '#f7fbff'], [0.15, '#deebf7'], [0.4, '#9ecae1'], [0.7, '#3182bd'], [1, '#08306b']]),
  signed: ramp([[0, '#2166ac'], [0.25, '#67a9cf'], [0.5, '#f7f7f7'], [0.75, '#ef8a62'], [1, '#b2182b']]),
};

/** Value range of a scale over data: [0, max] for prob, [-m, m] for signed. */
export function scaleRange(kind, values) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (kind === 'prob') return [0, Math.max(hi, 1e-6)];
  const m = Math.max(Math.abs(lo), Math.abs(hi), 1e-6);
  return [-m, m];
}

/** Colour of cells a mask hides (e.g. future keys under a causal mask). */
export const MASKED = [226, 229, 236];

/** A horizontal colour bar with its value range and a title. */
export function legend({ scale, vmin, vmax, title }) {
  const map = SCALES[scale];
  const stops = Array.from({ length: 11 }, (_, i) => {
    const [r, g, b] = map(i / 10);
    return `rgb(${r} ${g} ${b}) ${i * 10}%`;
  });
  const mid = scale === 'signed' ? 0 : (vmin + vmax) / 2;
  return el('div', { class: 'legend', role: 'img',
    'aria-label': `${title}: colour scale from ${formatNumber(vmin)} to ${formatNumber(vmax)}` },
  el('div', { class: 'legend-title' }, title),
  el('div', { class: 'legend-bar', style: `background: linear-gradient(to right, ${stops.join(', ')})` }),
  el('div', { class: 'legend-ticks' },
    el('span', {}, formatNumber(vmin)), el('span', {}, formatNumber(mid)),
    el('span', {}, formatNumber(vmax))));
}

// ---------------------------------------------------------------------------
// Heatmaps
// ---------------------------------------------------------------------------

/**
 * A heatmap of a rows x cols matrix (data[offset + r*cols + c]) drawn on a
 * canvas, one cell per value, with axis titles and optional per-row and
 * per-column labels. Hovering shows the value under the pointer.
 *
 * opts: data, rows, cols, offset = 0, scale ('prob' | 'signed'), vmin, vmax,
 * width (px available), maxCell, minCell, rowLabels, colLabels, xTitle,
 * yTitle, title (shown above), label (for screen readers), hint (the
 * read-out line when the pointer is elsewhere), isMasked(r, c) (drawn grey),
 * describe(r, c, v) -> string for the read-out.
 */
export function heatmap(opts) {
  const { data, rows, cols, offset = 0, scale = 'signed' } = opts;
  const [vmin, vmax] = opts.vmin !== undefined ? [opts.vmin, opts.vmax]
    : scaleRange(scale, data.subarray(offset, offset + rows * cols));
  const labelled = Boolean(opts.rowLabels || opts.colLabels);
  const reserved = opts.rowLabels ? 84 : 40;
  const avail = Math.max(60, (opts.width ?? 320) - reserved);
  const maxCell = opts.maxCell ?? 28;
  const minCell = opts.minCell ?? 1;
  const cw = Math.max(minCell, Math.min(maxCell, Math.floor(avail / cols)));
  const ch = opts.cellHeight ?? Math.max(labelled ? 14 : 3, Math.min(maxCell, cw));

  const canvas = el('canvas', { width: cols, height: rows, class: 'hm-canvas',
    role: 'img', 'aria-label': opts.label ?? opts.title ?? 'heatmap' });
  canvas.style.width = `${cols * cw}px`;
  canvas.style.height = `${rows * ch}px`;
  const ctx = canvas.getContext('2d');
  const img = ctx.createImageData(cols, rows);
  const map = SCALES[scale];
  const span = vmax - vmin || 1;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = data[offset + r * cols + c];
      const [R, G, B] = opts.isMasked?.(r, c) ? MASKED : map((v - vmin) / span);
      const p = (r * cols + c) * 4;
      img.data[p] = R;
      img.data[p + 1] = G;
      img.data[p + 2] = B;
      img.data[p + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);

  const idle = opts.hint ?? '\u00a0';
  const readout = el('div', { class: 'hm-readout' }, idle);
  const describe = opts.describe ?? ((r, c, v) => `row ${r}, col ${c}: ${formatNumber(v, 4)}`);
  const show = (e) => {
    const box = canvas.getBoundingClientRect();
    const c = Math.min(cols - 1, Math.floor(((e.clientX - box.left) / box.width) * cols));
    const r = Math.min(rows - 1, Math.floor(((e.clientY - box.top) / box.height) * rows));
    if (r >= 0 && c >= 0) readout.textContent = describe(r, c, data[offset + r * cols + c]);
  };
  canvas.addEventListener('pointermove', show);
  canvas.addEventListener('pointerdown', show);
  canvas.addEventListener('pointerleave', () => { readout.textContent = idle; });

  // Column labels (tokens, vertical) or the first/last column index.
  const colAxis = opts.colLabels ? columnLabels(opts.colLabels, cw)
    : el('div', { class: 'hm-ticks', style: `width:${Math.max(cols * cw, 40)}px` },
      el('span', {}, '0'), el('span', {}, String(cols - 1)));
  const rowAxis = opts.rowLabels
    ? el('div', { class: 'hm-rowlabels' },
      ...opts.rowLabels.map((t) => el('span', { style: `height:${ch}px;line-height:${ch}px`, title: t }, t)))
    : el('div', { class: 'hm-rowticks', style: `height:${rows * ch}px` },
      el('span', {}, '0'), el('span', {}, String(rows - 1)));

  const grid = el('div', { class: `hm-grid${opts.rowLabels ? ' labelled' : ''}` },
    el('div', { class: 'hm-corner' }),
    el('div', { class: 'hm-corner' }),
    el('div', { class: 'hm-xtitle' }, opts.xTitle ?? 'columns \u2192'),
    el('div', { class: 'hm-corner' }),
    el('div', { class: 'hm-corner' }),
    colAxis,
    el('div', { class: 'hm-ytitle' }, el('span', {}, opts.yTitle ?? 'rows \u2192')),
    rowAxis,
    canvas);
  const fig = el('figure', { class: 'hm' },
    opts.title ? el('figcaption', { class: 'hm-title' }, opts.title) : null,
    grid, readout);
  fig.dataset.rows = rows;
  fig.dataset.cols = cols;
  fig.dataset.vmin = vmin;
  fig.dataset.vmax = vmax;
  return fig;
}

// Vertical column labels take one line of LABEL_LINE px across (style.css:
// 0.75rem at line-height 1) and at most LABEL_MAX px of height (6.5em).
const LABEL_LINE = 12;
const LABEL_MAX = 78;
let measurer = null;

function textWidth(text) {
  measurer ??= document.createElement('canvas').getContext('2d');
  measurer.font = `${LABEL_LINE}px ${getComputedStyle(document.body).fontFamily}`;
  return measurer.measureText(text).width;
}

/**
 * Labels centred over their columns, cw px apart. Columns narrower than a
 * label's line get a label every `step` columns, so that no two overlap; the
 * read-out names every column.
 */
function columnLabels(labels, cw) {
  const step = Math.ceil(LABEL_LINE / cw);
  const height = Math.min(LABEL_MAX, Math.ceil(Math.max(...labels.map(textWidth))) + 2);
  const axis = el('div', { class: 'hm-collabels', style: `width:${labels.length * cw}px;height:${height}px`,
    dataset: { step } });
  labels.forEach((t, c) => {
    if (c % step === 0) axis.append(el('span', { style: `left:${c * cw + (cw - LABEL_LINE) / 2}px`, title: t }, t));
  });
  return axis;
}

/** Per-row argmax of a rows x cols matrix at data[offset..]. */
export function rowArgmax(data, rows, cols, offset = 0) {
  const out = [];
  for (let r = 0; r < rows; r++) {
    let best = 0;
    for (let c = 1; c < cols; c++) {
      if (data[offset + r * cols + c] > data[offset + r * cols + best]) best = c;
    }
    out.push(best);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Bar charts (SVG)
// ---------------------------------------------------------------------------

/** An axis tick label: no trailing zeros (0.5, 1, 2.5, 10). */
export const tickLabel = (t) => String(Number(t.toPrecision(4)));

/** 'Nice' axis ticks from 0 to at least max. */
export function niceTicks(max, count = 5) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const ticks = [];
  for (let v = 0; v <= max + step * 0.999; v += step) ticks.push(Number(v.toPrecision(6)));
  return ticks;
}

/** A hex colour mixed towards white (t > 0) or black (t < 0) by |t|. */
export function mixColour(colour, t) {
  const target = t > 0 ? 255 : 0;
  const [r, g, b] = hex(colour).map((c) => Math.round(c + (target - c) * Math.abs(t)));
  return `rgb(${r} ${g} ${b})`;
}

export const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b',
  '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
