// The package in the apps users build: tests/bundlers/app/ (a page and a
// module worker, each running a forward, and the page's attention pool; a
// page of the attention entry) against the packed tarball, served by Vite's dev server (its dependency
// optimizer taking the package, and kept off it), built by Vite and by
// webpack with no configuration, and as a plain page with an import map,
// each opened in Chromium. Each gives PyTorch's output for the golden case
// cross_basic on the page, in the worker and in the pool, fetches one build
// (its glue and wasm), and a bundle holds each file of the package's dist/
// exactly once, byte for byte, and no other wasm.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { build as viteBuild, createServer, preview } from 'vite';
import webpack from 'webpack';
import { startServer } from '../../web/demo/server.mjs';
import { loadGoldenCase, maxAbsDiff, mhaArguments } from '../js/support/golden.mjs';
import { emittedFiles, makeApp, packageDistFiles } from './support/apps.mjs';
import { launch, openApp } from './support/browser.mjs';

const golden = loadGoldenCase('cross_basic');
const plain = (t) => t && { data: Array.from(t.data), shape: t.shape };
const args = mhaArguments(golden);
const input = {
  config: args.config,
  weights: Object.fromEntries(Object.entries(args.weights).map(([k, v]) => [k, Array.from(v)])),
  query: plain(args.query), key: plain(args.key), value: plain(args.value), options: args.options,
};
const DIST = ['simd_attention_nosimd.js', 'simd_attention_nosimd.wasm',
  'simd_attention_relaxed.js', 'simd_attention_relaxed.wasm',
  'simd_attention_relaxed_threads.js', 'simd_attention_relaxed_threads.wasm',
  'simd_attention_relaxed_threads.worker.js', 'simd_attention_simd.js',
  'simd_attention_simd.wasm', 'simd_attention_simd_threads.js',
  'simd_attention_simd_threads.wasm', 'simd_attention_simd_threads.worker.js',
  'simd_attention_training.js', 'simd_attention_training.wasm'];
// The attention entry's own builds, which only it names: an app of the
// main entry emits none.
const ATTENTION_DIST = ['simd_attention_relaxed_mha.js', 'simd_attention_relaxed_mha.wasm',
  'simd_attention_simd_mha.js', 'simd_attention_simd_mha.wasm'];
// The package's bundles for pages without a bundler (web/package.json's
// "browser" condition): the entries and the files the main one loads on
// demand; bundlers take the modules instead ("module"), so none emits these.
const BUNDLES = ['attention.min.js', 'index.min.js', 'pool-worker.js', 'pool.min.js',
  'pretrained.min.js'];
// What Chromium loads on these pages, which are not cross-origin isolated:
// the single-thread relaxed-SIMD build, and nothing of the others.
const PICKED = ['simd_attention_relaxed.js', 'simd_attention_relaxed.wasm'];

let tmp;
let app;
let distFiles;
let browser;

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'simd-attention-bundlers-'));
  app = makeApp(tmp);
  distFiles = packageDistFiles(app);
  assert.deepEqual([...distFiles.values()].sort(), [...BUNDLES, ...DIST, ...ATTENTION_DIST].sort());
  browser = await launch();
});

after(async () => {
  await browser?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function assertGolden(where, result) {
  assert.equal(result.error, undefined, `${where}: ${result.error}`);
  assert.equal(result.build, 'relaxed-simd', where);
  for (const [name, want] of [['output', golden.tensors.output],
    ['attnWeights', golden.tensors.attn_weights]]) {
    const diff = maxAbsDiff(Float32Array.from(result[name]), want.data);
    assert.ok(diff <= golden.tolerance, `${where}: ${name} differs from PyTorch by ${diff}`);
  }
}

// Opens `url`, runs the forward on the page, in the app's attention pool and
// (unless `worker` is false) in the app's worker; checks each and what was
// fetched of dist/: the picked build, after `entry` (the bundles a page
// without a bundler imports).
// `pool`: whether the page has the pool; `picked`: the build's files it
// fetches.
async function checkApp(label, url,
  { worker = true, pool = true, entry = [], picked = PICKED } = {}) {
  const { page, problems, fetched } = await openApp(browser, url, distFiles);
  try {
    assertGolden(`${label}, page`, await page.evaluate((c) => window.forwardOnPage(c), input));
    if (pool) {
      assertGolden(`${label}, pool`, await page.evaluate((c) => window.forwardInPool(c), input));
    }
    if (worker) {
      assertGolden(`${label}, worker`,
        await page.evaluate((c) => window.forwardInWorker(c), input));
    }
    assert.deepEqual(await fetched(), [...entry, ...picked].sort(), `${label}: package files fetched`);
    assert.deepEqual(problems, [], label);
  } finally {
    await page.close();
  }
}

// Each dist/ file once (the wasm byte for byte, the glue perhaps minified),
// no other wasm; prints the bytes. `inlined`: files the bundler put into the
// code as data: URLs instead.
function checkEmitted(label, outDir, inlined = [], expected = DIST) {
  const files = emittedFiles(outDir, distFiles);
  const copies = files.filter((f) => f.copyOf !== undefined).map((f) => f.copyOf).sort();
  assert.deepEqual(copies, expected.filter((f) => !inlined.includes(f)).sort(),
    `${label}: copies of the package's dist/`);
  const otherWasm = files.filter((f) => f.copyOf === undefined && f.file.endsWith('.wasm'));
  assert.deepEqual(otherWasm, [], `${label}: wasm files that are not the package's`);
  const total = files.reduce((s, f) => s + f.bytes, 0);
  console.log(`${label}: dist/ holds ${total} bytes in ${files.length} files: ` +
    files.map((f) => `${f.file} ${f.bytes}`).join(', '));
  return files;
}

// Serves `root` with the demo server (at /web/) while `fn(base URL)` runs.
async function serve(root, fn) {
  const server = await startServer({ port: 0, root, isolated: false });
  try {
    await fn(new URL('web/', server.url).href);
  } finally {
    await server.close();
  }
}

test('a plain page with an import map', async () => {
  // Import maps do not reach into the app's worker, so the page and its
  // pool; it maps the package to its bundle, which loads the pool's files
  // from beside it.
  await serve(app, (base) => checkApp('import map', `${base}importmap.html`,
    { worker: false, entry: BUNDLES.filter((f) => f === 'index.min.js' || f.startsWith('pool')) }));
});

// The dev server's dependency optimizer moves the package into
// node_modules/.vite/deps/ unless told to leave it alone: both work as they
// are.
for (const [label, optimizeDeps] of [['Vite dev', {}],
  ['Vite dev, the package kept off the optimizer', { exclude: ['simd-attention'] }]]) {
  test(`${label}, no other configuration`, async () => {
    const server = await createServer({ root: app, configFile: false, logLevel: 'silent',
      optimizeDeps, server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false } });
    await server.listen();
    try {
      await checkApp(label, server.resolvedUrls.local[0]);
    } finally {
      await server.close();
    }
  });
}

test('a Vite build, no configuration', async () => {
  const outDir = path.join(tmp, 'vite-dist');
  await viteBuild({ root: app, configFile: false, logLevel: 'silent',
    build: { outDir, emptyOutDir: true } });
  // Vite inlines files below 4 kB as data: URLs: the threaded builds' worker
  // scripts, which the loader then runs from blob: URLs.
  checkEmitted('Vite build', outDir, DIST.filter((f) => f.endsWith('.worker.js')));
  // Its pages name their scripts from the site's root, as Vite's preview serves them.
  const server = await preview({ root: app, configFile: false, logLevel: 'silent',
    build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: false } });
  try {
    await checkApp('Vite build', server.resolvedUrls.local[0]);
  } finally {
    await server.close();
  }
});

// A page of the attention entry: its bundle names the builds that bind
// attention alone and the main builds it falls back to; Chromium fetches
// only the first.
test('a Vite build of a page of the attention entry, no configuration', async () => {
  const outDir = path.join(tmp, 'vite-attention-dist');
  await viteBuild({ root: app, configFile: false, logLevel: 'silent',
    build: { outDir, emptyOutDir: true,
      rollupOptions: { input: path.join(app, 'attention.html') } } });
  checkEmitted('Vite build, attention entry', outDir, DIST.filter((f) => f.endsWith('.worker.js')),
    [...DIST, ...ATTENTION_DIST]);
  const server = await preview({ root: app, configFile: false, logLevel: 'silent',
    build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: false } });
  try {
    await checkApp('Vite build, attention entry', `${server.resolvedUrls.local[0]}attention.html`,
      { worker: false, pool: false,
        picked: ['simd_attention_relaxed_mha.js', 'simd_attention_relaxed_mha.wasm'] });
  } finally {
    await server.close();
  }
});

test('a webpack build, no configuration beyond entry and output', async () => {
  const outDir = path.join(tmp, 'webpack-dist');
  const stats = await new Promise((resolve, reject) => {
    webpack({ mode: 'production', context: app, entry: './main.js',
      output: { path: outDir, clean: true } }, (e, s) => (e ? reject(e) : resolve(s)));
  });
  const { errors, warnings } = stats.toJson({ all: false, errors: true, warnings: true });
  // webpack's performance hint for assets over 244 KiB is the one message
  // let through, and only for .wasm: the SIMD and training builds (250 and
  // 244 KiB) are within the package's own budget of 256 KiB a .wasm
  // (tests/js/package.test.mjs).
  const wasmSizeHint = (m) => m.startsWith('asset size limit:') &&
    [...m.matchAll(/^ {2}(\S+) \(/gm)].every(([, asset]) => asset.endsWith('.wasm'));
  assert.deepEqual([...errors, ...warnings].map((m) => m.message)
    .filter((m) => !wasmSizeHint(m)), []);
  fs.copyFileSync(path.join(app, 'webpack.html'), path.join(outDir, 'index.html'));
  checkEmitted('webpack', outDir);
  await serve(outDir, (base) => checkApp('webpack', `${base}index.html`));
});
