#!/usr/bin/env node
// Start-up and download of the package as a page or a script gets it, each
// measured over cold runs (medians, and every run):
//
//   node scripts/startup.mjs [--runs N] [--only node,chromium,vite] [--modules]
//                            [--entry main|attention]
//
// --entry attention measures the attention entry ('simd-attention/attention':
// web/attention.js, dist/attention.min.js and the builds that bind attention
// alone) instead of the main one.
//
// - node: a fresh `node` process (no flags, as a user runs it) imports
//   web/index.js and awaits createAttentionModule() with default options;
//   the import and the call, each timed.
// - chromium: Debian's chromium (tests/browser/launch.mjs; playwright-core,
//   never a downloaded browser), one new context per run (no HTTP or code
//   cache), pages served by the demo server (web/demo/server.mjs) as a plain
//   page and as a cross-origin-isolated one, alternating. The page maps
//   'simd-attention' to the browser entry (dist/index.min.js) with an import
//   map, imports it, awaits createAttentionModule() and runs one forward:
//   the import, the call, and the time from navigation to the forward's
//   result.
// - vite: the download of a minimal Vite page (`vite build` of a page that
//   imports the installed tarball and runs only MultiHeadAttention; Vite
//   from tests/bundlers/): its JS, and the relaxed-SIMD build's glue and
//   .wasm it loads in Chromium on a page that is not cross-origin isolated,
//   in brotli (quality 11); --modules lists the modules in its JS.
//
// The package must be built (web/dist/, scripts/build.sh package).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import zlib from 'node:zlib';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at === -1 ? fallback : args[at + 1];
};
const RUNS = Number(option('runs', 5));
const ONLY = option('only', 'node,chromium,vite').split(',');
const ENTRIES = {
  main: { source: 'index.js', bundle: 'index.min.js', specifier: 'simd-attention',
    build: 'simd_attention_relaxed' },
  attention: { source: 'attention.js', bundle: 'attention.min.js',
    specifier: 'simd-attention/attention', build: 'simd_attention_relaxed_mha' },
};
const ENTRY = ENTRIES[option('entry', 'main')];
if (ENTRY === undefined) {
  throw new Error(`--entry: expected main or attention, got ${JSON.stringify(option('entry'))}`);
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const ms = (v) => v.toFixed(1);
function report(label, runs) {
  for (const key of Object.keys(runs[0])) {
    const values = runs.map((r) => r[key]);
    if (typeof values[0] !== 'number' || key === 'threads') continue;
    console.log(`${label} ${key}: median ${ms(median(values))} ms (${values.map(ms).join(', ')})`);
  }
}

function nodeStartup() {
  const entry = pathToFileURL(path.join(ROOT, 'web', ENTRY.source)).href;
  const script = `
const t0 = performance.now();
const { createAttentionModule } = await import(${JSON.stringify(entry)});
const t1 = performance.now();
const sa = await createAttentionModule();
const t2 = performance.now();
console.log(JSON.stringify({ import: t1 - t0, createAttentionModule: t2 - t1, build: sa.build,
  threads: sa.threads }));
sa.dispose();`;
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    runs.push(JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script],
      { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } })));
  }
  const { build, threads } = runs[0];
  report(`node ${process.version} (${build}, ${threads} threads)`, runs);
}

// The page: the entry through an import map, one module, one forward.
const PAGE = () => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "simd-attention": "/web/dist/${ENTRY.bundle}" } }</script>
</head><body><script type="module">
const t0 = performance.now();
const { createAttentionModule } = await import('simd-attention');
const t1 = performance.now();
const sa = await createAttentionModule();
const t2 = performance.now();
const d = 64;
const w = Float32Array.from({ length: d * d }, (_, i) => ((i * 7) % 13 - 6) / 64);
const mha = new sa.MultiHeadAttention({ dModel: d, numHeads: 4, bias: false });
mha.setWeights({ wQ: w, wK: w, wV: w, wO: w });
const x = { data: Float32Array.from({ length: 8 * d }, (_, i) => (i % 5) / 5), shape: [8, d] };
const out = mha.forward(x).output;
const t3 = performance.now();
window.startup = { import: t1 - t0, createAttentionModule: t2 - t1, firstForward: t3,
  build: sa.build, threads: sa.threads, finite: out.data.every(Number.isFinite) };
</script></body></html>`;

async function chromiumStartup() {
  const { launchChromium } = await import('../tests/browser/launch.mjs');
  const { startServer } = await import('../web/demo/server.mjs');
  const servers = { plain: await startServer({ port: 0, isolated: false }),
    isolated: await startServer({ port: 0, isolated: true }) };
  const browser = await launchChromium();
  const runs = { plain: [], isolated: [] };
  try {
    for (let i = 0; i < RUNS; i++) {
      for (const kind of Object.keys(servers)) {
        const context = await browser.newContext();
        const page = await context.newPage();
        const problems = [];
        page.on('pageerror', (e) => problems.push(e.message));
        page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
        const url = new URL('/web/startup.html', servers[kind].url).href;
        await page.route(url, (route) => route.fulfill({
          contentType: 'text/html; charset=utf-8', body: PAGE(),
          headers: kind === 'isolated' ? { 'Cross-Origin-Opener-Policy': 'same-origin',
            'Cross-Origin-Embedder-Policy': 'require-corp' } : {},
        }));
        await page.goto(url);
        runs[kind].push(await page.waitForFunction(() => window.startup, null,
          { timeout: 60_000 }).then((h) => h.jsonValue(), (e) => {
          throw new Error(`${kind} page: ${problems.join('; ') || e.message}`);
        }));
        await context.close();
      }
    }
  } finally {
    await browser.close();
    for (const server of Object.values(servers)) await server.close();
  }
  const version = browser.version();
  for (const [kind, list] of Object.entries(runs)) {
    if (!list.every((r) => r.finite)) throw new Error(`${kind}: the forward gave non-finite values`);
    report(`chromium ${version} ${kind} page (${list[0].build}, ${list[0].threads} threads)`, list);
  }
}

// A page that uses only MultiHeadAttention, built by Vite against the
// installed tarball.
const VITE_MAIN = () => `import { createAttentionModule } from '${ENTRY.specifier}';
const sa = await createAttentionModule();
const mha = new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, bias: false });
mha.setWeights({ wQ: new Float32Array(64), wK: new Float32Array(64), wV: new Float32Array(64),
  wO: new Float32Array(64) });
document.body.textContent = String(mha.forward({ data: new Float32Array(24), shape: [3, 8] })
  .output.data[0]);
`;

async function vitePage() {
  const bundlers = path.join(ROOT, 'tests', 'bundlers');
  const { build } = await import(createRequire(path.join(bundlers, 'package.json')).resolve('vite'));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'simd-attention-startup-'));
  try {
    const run = (cmd, argv, cwd) => execFileSync(cmd, argv, { cwd, encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });
    const [packed] = JSON.parse(run('npm', ['pack', path.join(ROOT, 'web'), '--json',
      '--pack-destination', tmp], ROOT));
    const app = path.join(tmp, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true,
      type: 'module' }));
    fs.writeFileSync(path.join(app, 'index.html'), '<!doctype html><html><body>' +
      '<script type="module" src="./main.js"></script></body></html>');
    fs.writeFileSync(path.join(app, 'main.js'), VITE_MAIN());
    run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--no-package-lock',
      path.join(tmp, packed.filename)], app);
    const built = await build({ root: app, logLevel: 'error', build: { outDir: 'out', target: 'es2022' } });
    if (args.includes('--modules')) {
      for (const chunk of built.output.filter((o) => o.type === 'chunk')) {
        const modules = Object.entries(chunk.modules)
          .sort((a, b) => b[1].renderedLength - a[1].renderedLength);
        for (const [id, m] of modules) {
          console.log(`vite page ${chunk.fileName} holds ${id.replace(/.*node_modules\//, '')}: ` +
            `${m.renderedLength} bytes before minifying`);
        }
      }
    }
    // The page's scripts (its entry and the chunks it preloads), and the
    // build it loads.
    const out = path.join(app, 'out');
    const html = fs.readFileSync(path.join(out, 'index.html'), 'utf8');
    const assets = fs.readdirSync(path.join(out, 'assets'));
    const loaded = [...[...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.js)"/g)].map((m) => m[1]),
      ...['js', 'wasm'].map((ext) => `assets/${assets.find((f) =>
        new RegExp(`^${ENTRY.build}-[\\w-]+\\.${ext}$`).test(f))}`)];
    let total = 0;
    for (const f of loaded) {
      const bytes = fs.readFileSync(path.join(out, f));
      const brotli = zlib.brotliCompressSync(bytes).length;
      total += brotli;
      console.log(`vite page ${f}: ${bytes.length} bytes, ${brotli} brotli`);
    }
    console.log(`vite page: ${total} bytes brotli`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

console.log(`${RUNS} cold runs each on ${os.cpus().length} logical processors ` +
  `(${os.cpus()[0]?.model ?? 'unknown CPU'})`);
if (ONLY.includes('node')) nodeStartup();
if (ONLY.includes('chromium')) await chromiumStartup();
if (ONLY.includes('vite')) await vitePage();
