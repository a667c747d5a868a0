// Live benchmark page: runs bench-worker.js and shows its numbers.
import { WORKLOADS, workloadFlops } from '../../bench-kit/workloads.js';
import { createAttentionModule } from '../../index.js';
import {
  attentionModule, initPage, el, formatNumber, showError, wasmSimdSupported, wasmRelaxedSimdSupported, niceTicks,
  tickLabel, onWidthChange, showBuild,
} from './common.js';

const SHOWN = ['S1', 'S2', 'S4', 'C1'];
const ui = {};
let lastResult = null;

function describeWorkload(w) {
  const kind = w.cross ? `cross-attention, ${w.tq} queries over ${w.tk} keys` : `self-attention, T = ${w.tq}`;
  return `${w.name}: ${kind}, d_model ${w.d}, ${w.heads} heads${w.causal ? ', causal' : ''}, ` +
    `${formatNumber(workloadFlops(w) / 1e9, 3)} GFLOP per call`;
}

// Whether the page is cross-origin isolated: only then do threads that share
// memory exist; the worker pool needs none, so it runs either way.
function isolation() {
  const isolated = globalThis.crossOriginIsolated === true;
  return el('span', { id: 'isolation', dataset: { isolated: String(isolated) } }, isolated
    ? 'yes (COOP/COEP headers): SharedArrayBuffer is available'
    : 'no (no COOP/COEP headers): no SharedArrayBuffer, so no shared-memory threads; the worker pool needs none');
}

// The thread counts offered for our threaded rows: 1 (none), then 2, 4, 8 ...
// below the logical processors, and the logical processors themselves.
function threadChoices(cores) {
  const out = [1];
  for (let n = 2; n < cores; n *= 2) out.push(n);
  if (cores > 1) out.push(cores);
  return out;
}

// Why our threaded builds cannot run on this page (module.threadsUnavailable
// of a module loaded with the default thread count, which falls back to one
// thread and says why), or undefined where they can. An isolated page loads
// nothing here: the threaded rows start their own modules when run.
async function threadsUnavailable(cores) {
  if (cores < 2) return 'this device has one logical processor';
  if (globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === 'function') return undefined;
  const probe = await createAttentionModule();
  const reason = probe.threadsUnavailable ?? (probe.threads > 1 ? undefined : 'threads did not start');
  probe.dispose();
  return reason;
}

async function setUpThreads(params, cores) {
  ui.threads.append(...threadChoices(cores).map((n) =>
    el('option', { value: n }, n === 1 ? '1 (single-thread builds)' : `${n} threads`)));
  ui.threads.disabled = true;
  const reason = await threadsUnavailable(cores);
  if (reason !== undefined) {
    ui.threads.value = '1';
    ui.threadsNote.dataset.available = 'false';
    ui.threadsNote.textContent = `Threads: unavailable here, our rows run on one thread: ${reason}.`;
    return;
  }
  const asked = Number(params.get('threads') ?? NaN);
  const choices = threadChoices(cores);
  ui.threads.value = String(choices.includes(asked) ? asked : Math.min(2, cores));
  ui.threads.disabled = false;
  ui.threadsNote.dataset.available = 'true';
  ui.threadsNote.textContent = 'Threads: above 1, the relaxed-SIMD and SIMD builds also run threaded ' +
    '(highway backend), each row next to its single-thread one.';
}

function envList(simd, relaxed) {
  const rows = [
    ['WebAssembly SIMD', el('span', { class: `pill ${simd ? 'ok' : 'bad'}` },
      simd ? 'supported: the SIMD build runs' : 'not supported: only the non-SIMD build runs')],
    ['Relaxed SIMD', el('span', { class: `pill ${relaxed ? 'ok' : 'bad'}` },
      relaxed ? 'supported: the relaxed-SIMD build (fused multiply-add) runs too'
        : 'not supported: no relaxed-SIMD rows')],
    ['Cross-origin isolated', isolation()],
    ['Logical processors', String(navigator.hardwareConcurrency ?? 'unknown')],
    ['User agent', navigator.userAgent],
  ];
  ui.env.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
}

function table(result) {
  const best = Math.max(...result.rows.map((r) => r.gflops));
  const plain = result.rows.find((r) => r.name === 'plain JS');
  const head = ['implementation', 'kernels', 'threads', 'median ms', 'p25–p75 ms', 'GFLOP/s', 'vs plain JS', 'calls', 'max |diff|'];
  const optional = new Set([1, 4, 6, 7]); // hidden on narrow screens
  const caption = el('p', { class: 'note', style: 'margin:0.5rem 0 0.8rem' },
    `${describeWorkload(WORKLOADS.find((w) => w.name === result.workload))}; ${result.rounds} interleaved rounds.`);
  const wrap = el('div', { class: 'table-wrap' }, el('table', { id: 'results-table' },
    el('thead', {}, el('tr', {}, ...head.map((h, i) =>
      el('th', { class: `${i >= 2 ? 'num' : ''}${optional.has(i) ? ' opt' : ''}` }, h)))),
    el('tbody', {}, ...result.rows.map((r) => el('tr', {
      class: r.gflops === best ? 'best' : '',
      dataset: { impl: r.name, threads: r.threads, medianMs: r.median, gflops: r.gflops, maxDiff: r.maxDiff, ok: String(r.ok) },
    },
    el('td', {}, r.name),
    el('td', { class: 'mono opt' }, r.kernels),
    el('td', { class: 'num' }, r.threadsAre === 'workers' ? `${r.threads} workers` : String(r.threads)),
    el('td', { class: 'num' }, formatNumber(r.median, 3)),
    el('td', { class: 'num opt' }, `${formatNumber(r.p25, 3)}–${formatNumber(r.p75, 3)}`),
    el('td', { class: 'num' }, formatNumber(r.gflops, 2)),
    el('td', { class: 'num opt' }, plain ? `${formatNumber(plain.median / r.median, 2)}×` : ''),
    el('td', { class: 'num opt' }, String(r.n)),
    el('td', { class: 'num' }, el('span', { class: `pill ${r.ok ? 'ok' : 'bad'}` }, r.maxDiff.toExponential(1))))))));
  return [wrap, caption];
}

const POOL_COLOUR = '#2a9d5c';
const THREADS_COLOUR = '#7b3fb8';
const colourOf = (r) => (r.name === 'plain JS' ? '#8a93a6' : r.name.includes('no-SIMD') ? '#f0a04b'
  : r.name.startsWith('pool') ? POOL_COLOUR : r.threads > 1 ? THREADS_COLOUR : '#2456c8');

function chart(result) {
  const rows = result.rows;
  const width = Math.max(300, ui.chart.clientWidth);
  const above = width < 560; // labels above the bars on narrow screens
  // Room for the longest name left of the bars (13 px text: about 7 px a character).
  const longest = Math.max(...rows.map((r) => r.name.length));
  const margin = { top: 8, right: 70, bottom: 46, left: above ? 18 : Math.min(300, Math.max(215, 7 * longest + 12)) };
  const barH = 22;
  const rowH = above ? 44 : 32;
  const height = margin.top + margin.bottom + rows.length * rowH;
  const plotW = width - margin.left - margin.right;
  const ticks = niceTicks(Math.max(...rows.map((r) => r.gflops)), above ? 3 : 5);
  const top = ticks[ticks.length - 1];
  const x = (v) => margin.left + (plotW * v) / top;
  const svg = el('svg:svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img',
    'aria-label': 'Bar chart: GFLOP/s of each implementation' });
  const plotBottom = margin.top + rows.length * rowH;
  for (const t of ticks) {
    svg.append(el('svg:line', { class: 'grid', x1: x(t), x2: x(t), y1: margin.top, y2: plotBottom }));
    svg.append(el('svg:text', { class: 'tick', x: x(t), y: plotBottom + 16, 'text-anchor': 'middle' }, tickLabel(t)));
  }
  rows.forEach((r, i) => {
    const y0 = margin.top + i * rowH + (above ? 16 : (rowH - barH) / 2);
    const colour = colourOf(r);
    svg.append(el('svg:text', {
      x: above ? margin.left : margin.left - 8, y: above ? y0 - 4 : y0 + barH / 2 + 5,
      'text-anchor': above ? 'start' : 'end', 'font-size': 13,
    }, r.name));
    svg.append(el('svg:rect', { x: margin.left, y: y0, width: Math.max(1, x(r.gflops) - margin.left), height: barH, fill: colour, rx: 3 },
      el('svg:title', {}, `${r.name}: ${formatNumber(r.gflops, 3)} GFLOP/s, median ${formatNumber(r.median, 3)} ms`)));
    svg.append(el('svg:text', { x: x(r.gflops) + 6, y: y0 + barH / 2 + 5, 'font-size': 13 }, formatNumber(r.gflops, 2)));
  });
  svg.append(el('svg:line', { x1: margin.left, x2: margin.left, y1: margin.top, y2: plotBottom, stroke: '#5a6375' }));
  svg.append(el('svg:text', { class: 'axis-title', x: margin.left + plotW / 2, y: height - 6, 'text-anchor': 'middle' },
    'GFLOP/s (higher is faster)'));
  const key = (colour, text) => el('span', {}, el('span', { class: 'swatch', style: `background:${colour}` }), text);
  const threaded = rows.some((r) => r.threads > 1 && !r.name.startsWith('pool'));
  ui.chart.replaceChildren(svg, el('div', { class: 'chart-legend' },
    key('#2456c8', 'wasm SIMD build'), ...(threaded ? [key(THREADS_COLOUR, 'wasm SIMD build, threaded')] : []),
    key('#f0a04b', 'wasm non-SIMD build'), key(POOL_COLOUR, 'worker pool'),
    key('#8a93a6', 'plain JavaScript')));
}

function show(result) {
  lastResult = result;
  ui.results.replaceChildren(...table(result));
  chart(result);
}

async function main() {
  initPage();
  for (const id of ['env', 'workload', 'mode', 'threads', 'pool', 'run', 'progress', 'results', 'chart']) ui[id] = document.getElementById(id);
  ui.note = document.getElementById('workload-note');
  ui.threadsNote = document.getElementById('threads-note');
  envList(wasmSimdSupported(), wasmRelaxedSimdSupported());
  // The worker runs every build; the badge names the one this page's loader picks, as on the other pages.
  attentionModule().then(showBuild, showError);
  const shown = WORKLOADS.filter((w) => SHOWN.includes(w.name));
  for (const w of shown) ui.workload.append(el('option', { value: w.name }, w.name));
  const params = new URLSearchParams(location.search);
  if (shown.some((w) => w.name === params.get('workload'))) ui.workload.value = params.get('workload');
  if (params.get('quick') === '1') ui.mode.value = 'quick';
  // "pool, N workers": N = 1 .. the logical processors, 2 unless there is one.
  const cores = Math.max(1, navigator.hardwareConcurrency || 1);
  const threadsReady = setUpThreads(params, cores);
  ui.pool.append(el('option', { value: 0 }, 'none'), ...Array.from({ length: cores }, (_, i) =>
    el('option', { value: i + 1 }, `pool, ${i + 1} ${i ? 'workers' : 'worker'}`)));
  const poolParam = Number(params.get('pool') ?? NaN);
  ui.pool.value = String(Number.isInteger(poolParam) && poolParam >= 0 && poolParam <= cores ? poolParam : Math.min(2, cores));
  const noteFor = () => { ui.note.textContent = describeWorkload(shown.find((w) => w.name === ui.workload.value)); };
  ui.workload.addEventListener('change', noteFor);
  noteFor();

  const worker = new Worker(new URL('./bench-worker.js', import.meta.url), { type: 'module' });
  const lines = [];
  const log = (text) => {
    lines.push(text);
    ui.progress.textContent = lines.slice(-8).join('\n');
  };
  let started = 0;
  worker.onerror = (e) => {
    showError(new Error(`benchmark worker: ${e.message ?? 'failed to load'}`));
    ui.run.disabled = false;
  };
  worker.onmessage = ({ data: m }) => {
    if (m.type === 'ready') {
      // Ready once the thread choice is known too (an autorun reads it).
      threadsReady.then(() => {
        document.body.dataset.state = 'ready';
        ui.run.disabled = false;
        if (params.get('autorun') === '1') ui.run.click();
      }, showError);
    } else if (m.type === 'progress') {
      log(m.text);
    } else if (m.type === 'result') {
      log(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      show(m);
      ui.run.disabled = false;
      document.body.dataset.state = 'done';
    } else if (m.type === 'error') {
      ui.run.disabled = false;
      showError(new Error(m.message));
    }
  };
  ui.run.disabled = true;
  ui.run.addEventListener('click', () => {
    ui.run.disabled = true;
    lines.length = 0;
    started = performance.now();
    document.body.dataset.state = 'running';
    const threads = ui.threads.disabled ? 1 : Number(ui.threads.value);
    log(`running ${ui.workload.value} (${ui.mode.value}${threads > 1 ? `, ${threads} threads` : ''}) …`);
    worker.postMessage({ workload: ui.workload.value, mode: ui.mode.value, threads, poolWorkers: Number(ui.pool.value) });
  });
  onWidthChange(() => lastResult && chart(lastResult));
}

main().catch((e) => showError(e));
