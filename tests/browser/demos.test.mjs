// Browser tests of the demos (web/demo/): Debian's chromium, driven by
// playwright-core (which never downloads a browser), against the demo server
// started on a free port. Run with `node --test tests/browser/` (npm test
// does, after the Jest suite). Screenshots go to build/screenshots/.
//
// SA_CHROMIUM overrides the browser binary (default /usr/bin/chromium).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createAttentionModule } from '../../web/index.js';
import { repoRoot, loadGoldenCase, mhaArguments, maxAbsDiff } from '../js/support/golden.mjs';
import { DESKTOP, demoSession, openDemoPage } from './launch.mjs';

const session = demoSession();

const SHOTS = path.join(repoRoot, 'build', 'screenshots');
const PHONE = { width: 390, height: 844 };
const TIMEOUT = 120_000;

before(() => fs.mkdirSync(SHOTS, { recursive: true }));

/**
 * Opens a demo page and waits until it says it is ready (body[data-state]).
 * Every console error, page error, failed request and HTTP error is kept in
 * `problems`.
 */
const open = (pagePath, { viewport = DESKTOP, until = ['ready', 'done'] } = {}) =>
  openDemoPage(session.browser, session.server, pagePath, { viewport, until });

async function shoot(page, name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

function assertClean({ problems, state }, what) {
  assert.deepEqual(problems, [], `${what}: console or page errors`);
  assert.notEqual(state, 'error', `${what}: the page shows an error`);
}

/** Nothing wider than the phone's screen (which would make the page scroll sideways). */
async function assertNoHorizontalOverflow(page, what) {
  const { scroll, client } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
  }));
  assert.ok(scroll <= client, `${what}: page is ${scroll}px wide on a ${client}px screen`);
}

// ---------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------

// A raw GET (no URL normalisation, unlike fetch), so '..' reaches the server.
function rawGet(rawPath) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: session.server.port, path: rawPath, method: 'GET' }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('server: COOP/COEP headers, application/wasm, redirect to the demos, nothing outside web/', async () => {
  const root = await rawGet('/');
  assert.equal(root.status, 302);
  assert.equal(root.headers.location, '/web/demo/');
  const page = await rawGet('/web/demo/');
  assert.equal(page.status, 200);
  assert.match(page.headers['content-type'], /^text\/html/);
  assert.equal(page.headers['cross-origin-opener-policy'], 'same-origin');
  assert.equal(page.headers['cross-origin-embedder-policy'], 'require-corp');
  for (const file of ['simd_attention_relaxed.wasm', 'simd_attention_simd.wasm', 'simd_attention_nosimd.wasm']) {
    const wasm = await rawGet(`/web/dist/${file}`);
    assert.equal(wasm.status, 200, file);
    assert.equal(wasm.headers['content-type'], 'application/wasm');
    assert.equal(wasm.headers['cross-origin-embedder-policy'], 'require-corp');
  }
  assert.equal((await rawGet('/web/index.js')).headers['content-type'], 'text/javascript; charset=utf-8');
  const workloads = await rawGet('/web/bench-kit/workloads.json');
  assert.equal(workloads.status, 200);
  assert.match(workloads.headers['content-type'], /^application\/json/);
  const refused = [
    '/package.json', '/web/../package.json', '/web/%2e%2e/package.json', '/web/..%2fpackage.json',
    '/web/demo/../../package.json', '/web/%2e%2e%2f%2e%2e%2fetc/passwd', '/../../etc/passwd',
    '/bench/js/workloads.js', '/bench/js/../../CMakeLists.txt', '/bench/js/native/', '/bench/node_modules/', '/.git/config',
    '/web/.npmignore', '/web/%00index.js', '/web/..\\package.json', '/src/backend.h',
  ];
  for (const p of refused) {
    const r = await rawGet(p);
    assert.equal(r.status, 404, `${p} gave ${r.status}`);
  }
});

// ---------------------------------------------------------------------------
// Pages
// ---------------------------------------------------------------------------

test('every page names the build the loader picked in the same header badge', { timeout: TIMEOUT }, async () => {
  for (const pagePath of ['index.html', 'shapes.html', 'explorer.html', 'bench.html']) {
    const p = await open(pagePath);
    assertClean(p, pagePath);
    await p.page.waitForFunction(() => !document.getElementById('build-badge')?.hidden);
    const badges = await p.page.$$eval('header .build-badge', (b) => b.map((x) => ({ text: x.textContent, build: x.dataset.build })));
    assert.deepEqual(badges, [{ text: 'relaxed-SIMD build', build: 'relaxed-simd' }], pagePath);
    // The stylesheet and viewport the shared head script adds, once each.
    const head = await p.page.evaluate(() => ({
      sheets: document.querySelectorAll('link[rel="stylesheet"]').length,
      viewport: document.querySelector('meta[name="viewport"]')?.content,
      styled: getComputedStyle(document.querySelector('.site-header')).backgroundColor,
    }));
    assert.deepEqual(head, { sheets: 1, viewport: 'width=device-width, initial-scale=1', styled: 'rgb(20, 32, 58)' }, pagePath);
    await p.context.close();
  }
});

test('home page loads without errors', { timeout: TIMEOUT }, async () => {
  for (const [viewport, tag] of [[DESKTOP, '1280x800'], [PHONE, '390']]) {
    const p = await open('index.html', { viewport });
    assertClean(p, `home ${tag}`);
    const env = await p.page.locator('#env').innerText();
    assert.match(env, /relaxed SIMD: yes/, 'Chromium has relaxed SIMD');
    assert.match(env, /loaded the relaxed-SIMD build, backends highway\b(?!, xsimd)/);
    await assertNoHorizontalOverflow(p.page, `home ${tag}`);
    await shoot(p.page, `home-${tag}`);
    await p.context.close();
  }
});

// The index's cards (the four demos and "This browser") keep a gap between
// each other, side by side and stacked.
test('home page: no two cards touch', { timeout: TIMEOUT }, async () => {
  for (const [viewport, tag] of [[DESKTOP, '1280x800'], [PHONE, '390']]) {
    const p = await open('index.html', { viewport });
    const boxes = await p.page.$$eval('.card', (nodes) => nodes.map((n) => {
      const r = n.getBoundingClientRect();
      return { name: n.querySelector('h2').textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom };
    }));
    assert.equal(boxes.length, 5, `home ${tag}: cards`);
    for (const [i, a] of boxes.entries()) {
      for (const b of boxes.slice(i + 1)) {
        const gap = Math.max(b.left - a.right, a.left - b.right, b.top - a.bottom, a.top - b.bottom);
        assert.ok(gap >= 8, `home ${tag}: "${a.name}" and "${b.name}" are ${gap}px apart`);
      }
    }
    await p.context.close();
  }
});

async function shapesShown(page) {
  return page.$$eval('[data-tensor]', (nodes) => Object.fromEntries(nodes.map((n) => [n.dataset.tensor, {
    shape: n.querySelector('.shape').textContent, changed: n.dataset.changed === 'true',
    source: n.dataset.source,
  }])));
}

// Where each walk-through tensor comes from: the library's own result
// (returnIntermediates and the others), the library's heads merged back on
// the page (a reshape), or the page's loops (only the scores).
const SHAPES_SOURCES = {
  X: 'input', M: 'input', Q: 'library-merged', K: 'library-merged', V: 'library-merged',
  Qh: 'library', Kh: 'library', Vh: 'library', scores: 'page', probs: 'library', z: 'library',
  concat: 'library-merged', output: 'library', perHead: 'library', Y: 'library',
};

// The walk-through shows these shapes, outlines the `changing` ones and says
// where each tensor comes from.
async function assertShapes(page, want, changing, what) {
  const shown = await shapesShown(page);
  assert.deepEqual(Object.fromEntries(Object.entries(shown).map(([k, v]) => [k, v.shape])), want, what);
  for (const [id, { changed, source }] of Object.entries(shown)) {
    assert.equal(changed, changing.includes(id), `${what}: ${id} marked changed=${changed}`);
    assert.equal(source, SHAPES_SOURCES[id], `${what}: ${id} comes from ${source}`);
  }
}

// The read-out line of a heatmap (figure.hm) at cell (row, col), by pointing at it.
async function pointAt(page, fig, row, col) {
  const { rows, cols } = await fig.evaluate((f) => ({ rows: Number(f.dataset.rows), cols: Number(f.dataset.cols) }));
  const canvas = fig.locator('canvas');
  const box = await canvas.boundingBox();
  await canvas.hover({ position: { x: ((col + 0.5) * box.width) / cols, y: ((row + 0.5) * box.height) / rows } });
  const text = await fig.locator('.hm-readout').textContent();
  await page.mouse.move(0, 0);
  return text;
}

// The value of cell (row, col) of a walk-through tensor's heatmap.
async function readCell(page, tensor, row, col) {
  const text = await pointAt(page, page.locator(`[data-tensor="${tensor}"] figure.hm`), row, col);
  return text.slice(text.lastIndexOf(': ') + 2);
}

// The walk-through's blocks against a library call of this test: for the
// batch and head shown, cells of the tensors the page takes from the
// library, formatted as the page formats them; scores from q and k.
async function expectedCells(page, mode, kv, b, h, cells) {
  return page.evaluate(async ({ mode: m, kv: kvHeads, b: bi, h: hi, cells: wanted }) => {
    const { INPUTS } = await import('/web/demo/js/shapes.js');
    const { attentionModule, withMha, formatNumber } = await import('/web/demo/js/common.js');
    const { X, MEMORY, weights, config: configs } = INPUTS;
    const [WEIGHTS, config] = [weights[kvHeads], configs[kvHeads]];
    const module = await attentionModule();
    const batch = 2;
    const t = X.length / batch / config.dModel;
    const memory = m === 'cross'
      ? { data: MEMORY, shape: [batch, MEMORY.length / batch / config.dModel, config.dModel] } : undefined;
    const r = withMha(module, config, WEIGHTS, (mha) => mha.forward({ data: X, shape: [batch, t, config.dModel] },
      memory, undefined, { returnIntermediates: true, returnAttnWeights: true }));
    // Query head hi, or the key/value head it reads.
    const at = (x, row, col) => {
      const [, heads, rows, width] = x.shape;
      const head = Math.floor(hi / (config.numHeads / heads));
      return x.data[((bi * heads + head) * rows + row) * width + col];
    };
    const dk = r.q.shape[3];
    const score = (i, j) => {
      let acc = 0;
      for (let c = 0; c < dk; c++) acc += at(r.q, i, c) * at(r.k, j, c);
      return Math.fround(acc / Math.sqrt(dk)); // as the page stores it
    };
    const tensors = { Qh: r.q, Kh: r.k, Vh: r.v, z: r.headOutput, probs: r.attnWeights };
    return wanted.map(([id, row, col]) =>
      formatNumber(id === 'scores' ? score(row, col) : at(tensors[id], row, col), 4));
  }, { mode, kv, b, h, cells });
}

async function checkCells(page, mode, kv = 8, h = 3) {
  const b = 1;
  await page.selectOption('#batch', String(b));
  await page.selectOption('#head', String(h));
  const last = mode === 'cross' ? 15 : 9;
  const cells = [['Qh', 2, 5], ['Kh', last, 60], ['Vh', last, 1], ['scores', 7, last],
    ['probs', 4, last], ['z', 9, 33]];
  const want = await expectedCells(page, mode, kv, b, h, cells);
  for (const [i, [id, row, col]] of cells.entries()) {
    assert.equal(await readCell(page, id, row, col), want[i],
      `${mode}, ${kv} kv heads: ${id}[b=${b}, h=${h}, ${row}, ${col}] is not the library's value`);
  }
  await page.selectOption('#batch', '0');
  await page.selectOption('#head', '0');
}

test('shapes walk-through prints the right shapes: self, cross and grouped-query heads, on a structured example', { timeout: TIMEOUT }, async () => {
  const p = await open('shapes.html');
  assertClean(p, 'shapes');
  const self = {
    X: '[2, 10, 512]', Q: '[2, 10, 512]', K: '[2, 10, 512]', V: '[2, 10, 512]',
    Qh: '[2, 8, 10, 64]', Kh: '[2, 8, 10, 64]', Vh: '[2, 8, 10, 64]',
    scores: '[2, 8, 10, 10]', probs: '[2, 8, 10, 10]', z: '[2, 8, 10, 64]',
    concat: '[2, 10, 512]', output: '[2, 10, 512]', perHead: '[2, 8, 10, 512]', Y: '[2, 10, 512]',
  };
  const cross = {
    ...self, M: '[2, 16, 512]', K: '[2, 16, 512]', V: '[2, 16, 512]',
    Kh: '[2, 8, 16, 64]', Vh: '[2, 8, 16, 64]', scores: '[2, 8, 10, 16]', probs: '[2, 8, 10, 16]',
  };
  const changing = ['M', 'K', 'V', 'Kh', 'Vh', 'scores', 'probs'];
  await assertShapes(p.page, self, changing, 'self');
  await checkCells(p.page, 'self');
  // Each heatmap says where its numbers come from; so does the scores stage.
  const hints = await p.page.$$eval('[data-tensor]', (nodes) => Object.fromEntries(nodes.map((n) =>
    [n.dataset.tensor, n.querySelector('.hm-readout').textContent])));
  for (const [id, source] of Object.entries(SHAPES_SOURCES)) {
    if (!hints[id]) continue;
    const said = { input: null, library: 'from the library', 'library-merged': 'from the library, heads merged',
      page: 'computed on this page' }[source];
    if (said) assert.ok(hints[id].endsWith(` · ${said}`), `${id}: hint "${hints[id]}"`);
    else assert.ok(!hints[id].includes(' · '), `${id}: hint "${hints[id]}"`);
  }
  assert.match(await p.page.locator('[data-stage="scores"] .explain').textContent(),
    /Computed on this page from the library's Q and K heads/);
  // The stage order of the issue.
  const stages = await p.page.$$eval('[data-stage]', (n) => n.map((s) => s.dataset.stage));
  assert.deepEqual(stages, ['input', 'project', 'split', 'scores', 'softmax', 'heads', 'concat', 'wo', 'norm']);
  // Every check the page makes (softmax of its scores vs the library's
  // weights, output vs concat W_O + b_O and vs the heads' sum, LayerNorm
  // mean/std) agrees.
  assert.equal(await p.page.locator('.check .pill.bad').count(), 0);
  assert.equal(await p.page.locator('.check .pill.ok').count(), 3);
  await shoot(p.page, 'shapes-self-1280x800');

  await p.page.click('#mode-cross');
  await p.page.waitForFunction(() => document.body.dataset.mode === 'cross');
  await assertShapes(p.page, cross, changing, 'cross');
  await checkCells(p.page, 'cross');
  assert.equal(await p.page.locator('.check .pill.bad').count(), 0);
  await shoot(p.page, 'shapes-cross-1280x800');

  // Grouped-query heads: 2 key/value heads, K and V [B, 2, T_k, 64]; query
  // head h reads kv head h / 4. Outlined: what differs from 8 kv heads.
  await p.page.click('#kv-2');
  await p.page.waitForFunction(() => document.body.dataset.kvHeads === '2');
  const groupedChanges = ['K', 'V', 'Kh', 'Vh'];
  const groupedCross = { ...cross, K: '[2, 16, 128]', V: '[2, 16, 128]', Kh: '[2, 2, 16, 64]', Vh: '[2, 2, 16, 64]' };
  await assertShapes(p.page, groupedCross, groupedChanges, 'cross, 2 kv heads');
  await checkCells(p.page, 'cross', 2, 5);
  await p.page.selectOption('#head', '5');
  assert.match(await p.page.locator('[data-tensor="Kh"] .hm-readout').textContent(), /^batch 0, kv head 1 \(read by query head 5\)/);
  await p.page.selectOption('#head', '0');
  assert.match(await p.page.locator('[data-stage="split"] .explain').textContent(), /query head h reads key\/value head ⌊h \/ 4⌋/);
  await shoot(p.page, 'shapes-cross-gqa-1280x800');
  await p.page.click('#mode-self');
  await p.page.waitForFunction(() => document.body.dataset.mode === 'self');
  await assertShapes(p.page, { ...self, K: '[2, 10, 128]', V: '[2, 10, 128]', Kh: '[2, 2, 10, 64]', Vh: '[2, 2, 10, 64]' },
    groupedChanges, 'self, 2 kv heads');
  await checkCells(p.page, 'self', 2, 6);
  assert.equal(await p.page.locator('.check .pill.bad').count(), 0);

  // The example is structured: head 0 takes the previous token ("on" -> "sat"),
  // head 1 the same word ("the" at 4 -> the three "the"s), read off the page.
  await p.page.click('#kv-8');
  await p.page.waitForFunction(() => document.body.dataset.kvHeads === '8');
  assert.match(await p.page.locator('.lead').nth(1).textContent(), /A structured example, not noise/);
  const weight = async (row, col) => Number(await readCell(p.page, 'probs', row, col));
  assert.ok(await weight(3, 2) > 0.99, 'previous-token head: "on" -> "sat"');
  await p.page.selectOption('#head', '1');
  const same = (await weight(4, 0)) + (await weight(4, 4)) + (await weight(4, 7));
  assert.ok(same > 0.95, `same-word head: "the" -> the "the"s: ${same}`);
  assert.match(await p.page.locator('[data-tensor="probs"] .hm-readout').textContent(), /head 1 \(same word\)/);
  await p.page.selectOption('#head', '0');
  assert.deepEqual(p.problems, []);
  await p.context.close();

  for (const [query, name] of [['mode=cross', 'shapes-cross-390'], ['mode=cross&kv=2', 'shapes-cross-gqa-390']]) {
    const phone = await open(`shapes.html?${query}`, { viewport: PHONE });
    assertClean(phone, name);
    await assertNoHorizontalOverflow(phone.page, name);
    assert.deepEqual(await labelOverlaps(phone.page), [], name);
    await shoot(phone.page, name);
    await phone.context.close();
  }
});

// Share of a heatmap's cells drawn near-white (every channel >= 240): what
// zeros look like on the signed scale.
async function blankShare(page, tensor) {
  return page.locator(`[data-tensor="${tensor}"] canvas`).evaluate((canvas) => {
    const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
    let blank = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i] >= 240 && data[i + 1] >= 240 && data[i + 2] >= 240) blank++;
    }
    return blank / (data.length / 4);
  });
}

// The hand-built heads' queries hold a few features (head 0: the 8 position
// features of 64); the features they leave at 0 are drawn grey and counted
// in a note, so that no Q heatmap is a blank panel.
test('shapes walk-through: no Q heatmap looks empty', { timeout: TIMEOUT }, async () => {
  const p = await open('shapes.html');
  assertClean(p, 'shapes');
  assert.match(await p.page.locator('[data-tensor="Q"] .unused-note').textContent(),
    /^Grey: 56 of these 64 features are 0 in every token\. Head 0 \(previous token\) is built by hand, and its query uses only the other 8\.$/);
  for (let head = 0; head < 8; head++) {
    await p.page.selectOption('#head', String(head));
    for (const tensor of ['Q', 'Qh']) {
      const share = await blankShare(p.page, tensor);
      assert.ok(share < 0.5, `head ${head}, ${tensor}: ${Math.round(share * 100)}% of the cells blank`);
    }
    const notes = await p.page.locator('[data-tensor="Qh"] .unused-note').count();
    assert.equal(notes, head === 0 || head === 1 || head === 2 ? 1 : 0, `head ${head}: notes under Q heads`);
  }
  await shoot(p.page, 'shapes-q-head7-1280x800');
  await p.context.close();
});

async function headCards(page) {
  return page.$$eval('[data-head][data-pattern]', (nodes) => nodes.map((n) => ({
    head: Number(n.dataset.head), pattern: n.dataset.pattern,
    rows: Number(n.dataset.rows), cols: Number(n.dataset.cols),
    argmax: n.dataset.argmax.split(',').map(Number), rowmax: n.dataset.rowmax.split(',').map(Number),
  })));
}

// What the hand-built heads must do: key index per query row (null = no claim).
function expected(pattern, tq, tk) {
  return Array.from({ length: tq }, (_, i) => {
    if (pattern === 'first') return 0;
    if (pattern === 'self') return i < tk ? i : null;
    if (pattern === 'previous') return i - 1 < tk ? Math.max(0, i - 1) : null;
    throw new Error(pattern);
  });
}

function checkBuiltHeads(cards, tq, tk, what) {
  const built = cards.filter((c) => c.pattern !== 'random');
  assert.deepEqual(built.map((c) => c.pattern).sort(), ['first', 'previous', 'self'], what);
  for (const c of built) {
    assert.equal(c.rows, tq, `${what}: head ${c.head} rows`);
    assert.equal(c.cols, tk, `${what}: head ${c.head} cols`);
    const want = expected(c.pattern, tq, tk);
    want.forEach((j, i) => {
      if (j === null) return;
      assert.equal(c.argmax[i], j, `${what}: head ${c.head} (${c.pattern}) row ${i}: argmax ${c.argmax[i]}, want ${j}`);
      assert.ok(c.rowmax[i] > 0.99, `${what}: head ${c.head} (${c.pattern}) row ${i}: top weight ${c.rowmax[i]} is not crisp`);
    });
  }
  assert.equal(cards.length, 8, `${what}: 8 heads shown`);
}

test('explorer: the hand-built heads show their pattern (self, causal, cross)', { timeout: TIMEOUT }, async () => {
  const text = 'the quick brown fox jumps over the lazy dog near the river bank';
  const tq = text.split(' ').length;
  const p = await open(`explorer.html?text=${encodeURIComponent(text)}`);
  assertClean(p, 'explorer');
  checkBuiltHeads(await headCards(p.page), tq, tq, 'self-attention');
  // Token labels on the axes.
  const labels = await p.page.$$eval('[data-pattern="self"] .hm-rowlabels span', (s) => s.map((x) => x.textContent));
  assert.deepEqual(labels, text.split(' '));
  // Contribution bars: one per token and selected head, all finite and positive.
  const bars = await p.page.$$eval('#chart rect[data-head]', (r) => r.map((x) => Number(x.dataset.value)));
  assert.equal(bars.length, tq * 8);
  assert.ok(bars.every((v) => Number.isFinite(v) && v > 0));
  await shoot(p.page, 'explorer-self-1280x800');

  await p.page.selectOption('#causal', 'bottom-right');
  await p.page.waitForFunction(() => document.body.dataset.causal === 'bottom-right');
  const causal = await headCards(p.page);
  checkBuiltHeads(causal, tq, tq, 'causal');
  // Causal: nothing above the diagonal wins, in any head.
  for (const c of causal) c.argmax.forEach((j, i) => assert.ok(j <= i, `causal head ${c.head} row ${i} -> ${j}`));

  // Cross-attention: a shorter second sentence.
  const text2 = 'one small cat slept on my rug';
  const tk = text2.split(' ').length;
  await p.page.selectOption('#causal', 'none');
  await p.page.check('#cross');
  await p.page.fill('#sentence2', text2);
  await p.page.waitForFunction((n) => document.body.dataset.mode === 'cross' &&
    document.querySelector('[data-pattern="self"]')?.dataset.cols === String(n), tk);
  checkBuiltHeads(await headCards(p.page), tq, tk, 'cross-attention');
  await shoot(p.page, 'explorer-cross-1280x800');

  // Deselecting a head removes its heatmap and its bars.
  await p.page.uncheck('#heads input[data-head="5"]');
  assert.equal(await p.page.locator('[data-head="5"][data-pattern]').count(), 0);
  assert.equal(await p.page.locator('#chart rect[data-head="5"]').count(), 0);
  assert.deepEqual(p.problems, []);
  await p.context.close();

  const phone = await open(`explorer.html?text=${encodeURIComponent(text)}&causal=1`, { viewport: PHONE });
  assertClean(phone, 'explorer 390');
  checkBuiltHeads(await headCards(phone.page), tq, tq, 'phone, causal');
  await assertNoHorizontalOverflow(phone.page, 'explorer 390');
  await shoot(phone.page, 'explorer-causal-390');
  await phone.context.close();
});

// The explorer's last run as the page shows it (lastRun() of explorer.js),
// with -Infinity scores (masked keys) as null.
async function explorerRun(page) {
  return page.evaluate(async () => {
    const { lastRun } = await import('/web/demo/js/explorer.js');
    const r = lastRun();
    return {
      tq: r.tq, tk: r.tk, kvHeads: r.kvHeads, kvShape: r.kvShape, causal: r.causal, window: r.window,
      probs: Array.from(r.probs), scores: Array.from(r.scores, (s) => (s === -Infinity ? null : s)),
    };
  });
}

// Sets explorer controls and waits until the page has run with them.
async function setExplorer(page, { causal, window, kv, rope }) {
  if (causal) await page.selectOption('#causal', causal);
  if (window) {
    await page.fill('#window-left', String(window[0]));
    await page.fill('#window-right', String(window[1]));
  }
  if (kv) await page.selectOption('#kv-heads', String(kv));
  if (rope !== undefined) await page.setChecked('#rope', rope);
  await page.waitForFunction((want) => Object.entries(want).every(([k, v]) => document.body.dataset[k] === v), {
    ...(causal ? { causal } : {}), ...(window ? { window: window.join(',') } : {}),
    ...(kv ? { kvHeads: String(kv) } : {}), ...(rope !== undefined ? { rope: String(rope) } : {}),
  });
}

// Every head hides exactly the keys `hidden(i, j)` names: their score is
// -Infinity and their weight 0, and each row's visible weights sum to 1.
function assertMask(run, hidden, what) {
  const { tq, tk } = run;
  for (let h = 0; h < 8; h++) {
    for (let i = 0; i < tq; i++) {
      let sum = 0;
      for (let j = 0; j < tk; j++) {
        const at = (h * tq + i) * tk + j;
        assert.equal(run.scores[at] === null, hidden(i, j), `${what}: head ${h}, query ${i}, key ${j}: score ${run.scores[at]}`);
        if (hidden(i, j)) assert.equal(run.probs[at], 0, `${what}: head ${h} (${i}, ${j}) is masked but weighs ${run.probs[at]}`);
        sum += run.probs[at];
      }
      assert.ok(Math.abs(sum - 1) < 1e-5, `${what}: head ${h} row ${i} sums to ${sum}`);
    }
  }
}

// The read-out of an explorer head's heatmap at cell (row, col).
const explorerCell = (page, head, row, col) => pointAt(page, page.locator(`[data-head="${head}"][data-pattern] figure.hm`), row, col);

test('explorer: causal alignment, window, key/value heads and RoPE change the heatmaps as the math says', { timeout: TIMEOUT }, async () => {
  const text = 'the quick brown fox jumps over the lazy dog';
  const text2 = 'a small cat slept on a warm rug by the door of the old house today';
  const [tq, tk] = [text.split(' ').length, text2.split(' ').length];
  const p = await open(`explorer.html?text=${encodeURIComponent(text)}&text2=${encodeURIComponent(text2)}&cross=1`);
  assertClean(p, 'explorer controls');
  assert.ok(tq < tk);

  // Fewer queries than keys: top-left shows the triangle from the first key,
  // bottom-right shifts it right by tk - tq so that the last query sees every key.
  await setExplorer(p.page, { causal: 'top-left' });
  const topLeft = await explorerRun(p.page);
  assert.deepEqual([topLeft.tq, topLeft.tk], [tq, tk]);
  assertMask(topLeft, (i, j) => j > i, 'top-left');
  assert.equal(await explorerCell(p.page, 1, 0, 1), '"the" \u2192 "small": masked');
  await shoot(p.page, 'explorer-cross-top-left-1280x800');
  await setExplorer(p.page, { causal: 'bottom-right' });
  const bottomRight = await explorerRun(p.page);
  assertMask(bottomRight, (i, j) => j > i + tk - tq, 'bottom-right');
  assert.match(await explorerCell(p.page, 1, 0, 1), /^"the" → "small": [\d.e-]+ \(score -?[\d.]+\)$/);
  // A window around the bottom-right diagonal i' = i + tk - tq.
  await setExplorer(p.page, { window: [2, -1] });
  assertMask(await explorerRun(p.page), (i, j) => j > i + tk - tq || j < i + tk - tq - 2, 'bottom-right, window [2, -1]');

  // Self-attention, no causal mask, window [1, 1]: keys i-1, i, i+1 only. The
  // previous-token head keeps its key; the first-token head loses key 0 past query 1.
  await p.page.uncheck('#cross');
  await setExplorer(p.page, { causal: 'none', window: [1, 1] });
  await p.page.waitForFunction(() => document.body.dataset.mode === 'self');
  const windowed = await explorerRun(p.page);
  assertMask(windowed, (i, j) => j < i - 1 || j > i + 1, 'window [1, 1]');
  const cards = await headCards(p.page);
  const previous = cards.find((c) => c.pattern === 'previous');
  previous.argmax.forEach((j, i) => assert.equal(j, Math.max(0, i - 1), `windowed previous-token head, row ${i}`));
  for (let i = 2; i < tq; i++) assert.equal(windowed.probs[(2 * tq + i) * tq], 0, `first-token head, row ${i}, key 0`);
  assert.equal(await p.page.locator('#masked-key').isVisible(), true);

  // Grouped-query heads: 2 key/value heads for 8 query heads. Query head h
  // reads kv head h / 4; the built heads key on the shared position features
  // and keep their weights; a random head reading another head's keys changes.
  await setExplorer(p.page, { window: [-1, -1] });
  const full = await explorerRun(p.page);
  await setExplorer(p.page, { kv: 2 });
  const grouped = await explorerRun(p.page);
  assert.deepEqual(grouped.kvShape, [1, 2, tq, 8]);
  assert.deepEqual(await p.page.$$eval('[data-head][data-pattern]', (n) => n.map((c) => Number(c.dataset.kvHead))),
    [0, 0, 0, 0, 1, 1, 1, 1]);
  assert.deepEqual(await p.page.$$eval('#kv-legend > span', (n) => n.map((s) => s.textContent)),
    ['kv head 0: heads 0, 1, 2, 3', 'kv head 1: heads 4, 5, 6, 7']);
  const slice = (run, h) => run.probs.slice(h * tq * tq, (h + 1) * tq * tq);
  for (const h of [0, 1, 2]) assert.ok(maxAbsDiff(slice(full, h), slice(grouped, h)) < 1e-6, `built head ${h} with 2 kv heads`);
  for (const h of [5, 6, 7]) assert.ok(maxAbsDiff(slice(full, h), slice(grouped, h)) > 1e-3, `head ${h} reads head 4's keys now`);
  // Heads of one kv head share a colour family: one hue, lighter down the group.
  const colours = await p.page.$$eval('[data-head][data-pattern] h3 .swatch', (n) => n.map((s) => getComputedStyle(s).backgroundColor));
  assert.equal(new Set(colours).size, 8, 'each head its own shade');

  // RoPE turns query i and key i by the same angle: the diagonal's scores stay,
  // the rest change; the current-token head keeps its diagonal.
  await setExplorer(p.page, { rope: true });
  const rotated = await explorerRun(p.page);
  let changed = 0;
  for (let h = 0; h < 8; h++) {
    for (let i = 0; i < tq; i++) {
      for (let j = 0; j < tq; j++) {
        const at = (h * tq + i) * tq + j;
        const diff = Math.abs(rotated.scores[at] - grouped.scores[at]);
        if (i === j) assert.ok(diff <= 1e-4 * Math.max(1, Math.abs(grouped.scores[at])), `RoPE: head ${h} diagonal ${i}: ${diff}`);
        else if (diff > 1e-3) changed++;
      }
    }
  }
  assert.ok(changed > 8 * tq * (tq - 1) * 0.5, `RoPE changed ${changed} off-diagonal scores`);
  const roped = await headCards(p.page);
  roped.find((c) => c.pattern === 'self').argmax.forEach((j, i) => assert.equal(j, i, `RoPE current-token head row ${i}`));
  roped.find((c) => c.pattern === 'previous').argmax.forEach((j, i) => assert.equal(j, Math.max(0, i - 1), `RoPE previous-token head row ${i}`));
  // The first-token head's query, the same for every token, is turned the
  // further the later the token: it finds key 0 early on and loses it by token 24.
  const words = Array.from({ length: 32 }, (_, i) => `w${i % 7}`);
  await p.page.fill('#sentence', words.join(' '));
  await p.page.waitForFunction(() => document.querySelector('[data-pattern="first"]')?.dataset.rows === '32');
  const first = (await headCards(p.page)).find((c) => c.pattern === 'first').argmax;
  assert.deepEqual(first.slice(0, 16), Array(16).fill(0), 'RoPE: first-token head, queries 0-15');
  assert.ok(first.slice(24).every((j) => j !== 0), `RoPE: first-token head, queries 24-31: ${first.slice(24)}`);
  await shoot(p.page, 'explorer-gqa-rope-1280x800');
  assert.deepEqual(p.problems, []);
  await p.context.close();
});

// Every pair of neighbouring label boxes of every heatmap, along its axis.
async function labelOverlaps(page) {
  return page.$$eval('figure.hm', (figs) => figs.flatMap((fig, f) => {
    const boxes = (sel) => [...fig.querySelectorAll(sel)].map((s) => s.getBoundingClientRect());
    const overlaps = [];
    const cols = boxes('.hm-collabels span').sort((a, b) => a.left - b.left);
    for (let i = 1; i < cols.length; i++) {
      if (cols[i].left < cols[i - 1].right - 0.5) overlaps.push(`figure ${f}: column labels ${i - 1} and ${i}`);
    }
    const rows = boxes('.hm-rowlabels span').sort((a, b) => a.top - b.top);
    for (let i = 1; i < rows.length; i++) {
      if (rows[i].top < rows[i - 1].bottom - 0.5) overlaps.push(`figure ${f}: row labels ${i - 1} and ${i}`);
    }
    return overlaps;
  }));
}

test('explorer: 32 tokens keep their labels apart and fit a 390 px screen', { timeout: TIMEOUT }, async () => {
  const words = Array.from({ length: 32 }, (_, i) => (i % 3 ? `w${i}` : `token${i}`));
  for (const [viewport, tag] of [[DESKTOP, '1280x800'], [PHONE, '390']]) {
    const p = await open(`explorer.html?text=${words.join('%20')}`, { viewport });
    assertClean(p, `explorer 32 tokens ${tag}`);
    assert.deepEqual(await labelOverlaps(p.page), [], tag);
    // Thinned, not dropped: at least every second key is named, the first one included.
    const shown = await p.page.$$eval('[data-pattern="self"] .hm-collabels span', (s) => s.map((x) => x.textContent));
    assert.ok(shown.length >= 16 && shown[0] === 'token0', `${tag}: ${shown.length} key labels`);
    assert.equal((await p.page.$$eval('[data-pattern="self"] .hm-rowlabels span', (s) => s.length)), 32);
    await assertNoHorizontalOverflow(p.page, `explorer 32 tokens ${tag}`);
    // The contribution chart fits, or says that it scrolls sideways.
    const chart = await p.page.$eval('#chart', (c) => ({ scroll: c.scrollWidth, client: c.clientWidth }));
    if (chart.scroll > chart.client) assert.equal(await p.page.locator('#chart-hint').isVisible(), true, `${tag}: no swipe hint`);
    await shoot(p.page, `explorer-32-tokens-${tag}`);
    await p.context.close();
  }
});

test('benchmark: numbers for every backend of every build, 2 threads, a pool of 2 workers and plain JS (S1, quick)', { timeout: TIMEOUT }, async () => {
  const p = await open('bench.html?workload=S1&quick=1&autorun=1', { until: ['done'] });
  assertClean(p, 'bench');
  const { simd, relaxed } = await p.page.evaluate(async () => {
    const m = await import('/web/index.js');
    return { simd: m.wasmSimdSupported(), relaxed: m.wasmRelaxedSimdSupported() };
  });
  assert.equal(simd, true, 'Chromium has wasm SIMD');
  assert.equal(relaxed, true, 'Chromium has relaxed SIMD');
  const rows = await p.page.$$eval('#results-table tbody tr', (trs) => trs.map((t) => ({
    impl: t.dataset.impl, median: Number(t.dataset.medianMs), gflops: Number(t.dataset.gflops), ok: t.dataset.ok,
  })));
  // Cross-origin isolated on 2 or more logical processors: 2 threads by default
  // (tests/browser/bench-threads.test.mjs checks the choice).
  assert.deepEqual(rows.map((r) => r.impl), [
    'ours wasm-relaxed highway', 'ours wasm-relaxed highway, 2 threads',
    'ours wasm-simd highway', 'ours wasm-simd highway, 2 threads', 'ours wasm-simd xsimd',
    'ours wasm no-SIMD (highway)', 'ours wasm no-SIMD (scalar)', 'pool, 2 workers', 'plain JS',
  ]);
  // Served with COOP/COEP (the demo server's default): isolated, and it says so.
  assert.equal(await p.page.locator('#isolation').getAttribute('data-isolated'), 'true');
  assert.match(await p.page.locator('#isolation').textContent(), /^yes \(COOP\/COEP headers\)/);
  for (const r of rows) {
    assert.ok(r.median > 0 && Number.isFinite(r.median), `${r.impl}: median ${r.median}`);
    assert.ok(r.gflops > 0 && Number.isFinite(r.gflops), `${r.impl}: GFLOP/s ${r.gflops}`);
    assert.equal(r.ok, 'true', `${r.impl}: output differs from the reference`);
  }
  assert.equal(await p.page.locator('#chart svg rect').count(), rows.length);
  await shoot(p.page, 'bench-S1-1280x800');
  await p.context.close();

  const phone = await open('bench.html?workload=S1&quick=1&autorun=1', { viewport: PHONE, until: ['done'] });
  assertClean(phone, 'bench 390');
  await assertNoHorizontalOverflow(phone.page, 'bench 390');
  await shoot(phone.page, 'bench-S1-390');
  await phone.context.close();
});

// ---------------------------------------------------------------------------
// The library in the browser = the library in Node
// ---------------------------------------------------------------------------

test('Chromium loads the relaxed-SIMD build by default', { timeout: TIMEOUT }, async () => {
  const p = await open('index.html');
  const loaded = await p.page.evaluate(async () => {
    const sa = await import('/web/index.js');
    const m = await sa.createAttentionModule();
    return { build: m.build, simd: sa.wasmSimdSupported(), relaxed: sa.wasmRelaxedSimdSupported() };
  });
  assert.deepEqual(loaded, { build: 'relaxed-simd', simd: true, relaxed: true });
  assertClean(p, 'default build');
  await p.context.close();
});

// Options that force each build (run under scripts/node-wasm.sh, Node has
// relaxed SIMD too).
const BUILDS = [
  ['relaxed-simd', { relaxedSimd: true }],
  ['simd', { relaxedSimd: false }],
  ['nosimd', { simd: false }],
];

test('golden cases: the library in Chromium equals Node (every build) and PyTorch', { timeout: TIMEOUT }, async () => {
  const p = await open('index.html');
  for (const name of ['self_tiny', 'cross_basic']) {
    const c = loadGoldenCase(name);
    const a = mhaArguments(c);
    const plain = (x) => (x ? Array.from(x) : undefined);
    const args = {
      config: a.config,
      weights: Object.fromEntries(Object.entries(a.weights).map(([k, v]) => [k, plain(v)])),
      query: { data: plain(a.query.data), shape: a.query.shape },
      key: a.key && { data: plain(a.key.data), shape: a.key.shape },
      value: a.value && { data: plain(a.value.data), shape: a.value.shape },
      causal: a.options.causal,
    };
    for (const [build, options] of BUILDS) {
      const inBrowser = await p.page.evaluate(async ({ args: x, options: o }) => {
        const { createAttentionModule: create } = await import('/web/index.js');
        const m = await create(o);
        const f32 = (t) => t && { data: Float32Array.from(t.data), shape: t.shape };
        const mha = new m.MultiHeadAttention(x.config);
        try {
          mha.setWeights(Object.fromEntries(Object.entries(x.weights).map(([k, v]) => [k, Float32Array.from(v)])));
          const r = mha.forward(f32(x.query), f32(x.key), f32(x.value),
            { causal: x.causal, returnAttnWeights: true, returnPerHeadOutput: true });
          return {
            build: m.build,
            output: Array.from(r.output.data), attnWeights: Array.from(r.attnWeights.data),
            perHeadOutput: Array.from(r.perHeadOutput.data), shape: r.output.shape,
          };
        } finally {
          mha.dispose();
        }
      }, { args, options });
      assert.equal(inBrowser.build, build);
      const node = await createAttentionModule(options);
      assert.equal(node.build, build);
      const mha = new node.MultiHeadAttention(a.config);
      mha.setWeights(a.weights);
      const r = mha.forward(a.query, a.key, a.value,
        { ...a.options, returnAttnWeights: true, returnPerHeadOutput: true });
      mha.dispose();
      assert.deepEqual(inBrowser.shape, r.output.shape);
      for (const [key, golden] of [['output', 'output'], ['attnWeights', 'attn_weights'], ['perHeadOutput', 'per_head_output']]) {
        const vsNode = maxAbsDiff(Float32Array.from(inBrowser[key]), r[key].data);
        assert.ok(vsNode <= 1e-6, `${name} ${build} ${key}: browser vs Node ${vsNode}`);
        const vsTorch = maxAbsDiff(Float32Array.from(inBrowser[key]), c.tensors[golden].data);
        assert.ok(vsTorch <= c.tolerance, `${name} ${build} ${key}: browser vs PyTorch ${vsTorch}`);
      }
    }
  }
  assertClean(p, 'golden');
  await p.context.close();
});
