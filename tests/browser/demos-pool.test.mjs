// The demos on the worker pool, served WITHOUT COOP/COEP (as most sites
// are): the explorer recomputes in its pool of 2 workers while the visitor
// types and switches controls, its page's thread stays free, and the last
// heatmap is the last input's; the live benchmark's "pool, 2 workers" row
// gives a number and the page says it is not cross-origin isolated.
// Screenshots go to build/screenshots/.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../js/support/golden.mjs';
import { demoSession, openDemoPage } from './launch.mjs';

const session = demoSession({ isolated: false });

const SHOTS = path.join(repoRoot, 'build', 'screenshots');
const TIMEOUT = 120_000;

before(() => fs.mkdirSync(SHOTS, { recursive: true }));

// Opens a demo page and waits until it says `until` (body[data-state]);
// fails if the page shows an error.
async function open(pagePath, until = ['ready']) {
  const p = await openDemoPage(session.browser, session.server, pagePath, { until });
  assert.notEqual(p.state, 'error', `${pagePath}: the page shows an error`);
  return { ...p, headers: p.response.headers() };
}

const shoot = (page, name) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

test('explorer: typing and switching recompute in the pool, the page stays free, the last input wins', { timeout: TIMEOUT }, async () => {
  const p = await open('explorer.html');
  assert.equal(p.headers['cross-origin-embedder-policy'], undefined);
  assert.equal(await p.page.evaluate(() => globalThis.crossOriginIsolated), false);
  assert.equal(await p.page.evaluate(() => document.body.dataset.poolWorkers), '2');
  assert.match(await p.page.locator('#token-note').textContent(), /computed in 2 workers\.$/);

  // The page types a sentence into itself (value + input event, so that the
  // gaps measured are the page's own work, not the test driver's key
  // events): slower than its 120 ms pause at first, so that most keys
  // recompute, then faster; then it switches the key/value heads faster
  // than that, so that runs supersede each other, and turns RoPE on.
  // Meanwhile a 4 ms timer notes the longest gap between its ticks: the
  // longest the page's thread was busy at a stretch, drawing included; and
  // every forward of the page's own module is counted: there must be none.
  const sentence = 'every word typed here runs the layer again in two workers while this page keeps drawing';
  const { longest, onPage } = await p.page.evaluate(async (text) => {
    const { attentionModule } = await import('/web/demo/js/common.js');
    const proto = (await attentionModule()).MultiHeadAttention.prototype;
    const forward = proto.forward;
    let onPage = 0;
    proto.forward = function counted(...args) {
      onPage++;
      return forward.apply(this, args);
    };
    const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const set = (id, value, event) => {
      const input = document.getElementById(id);
      if (id === 'rope') input.checked = value;
      else input.value = value;
      input.dispatchEvent(new Event(event, { bubbles: true }));
    };
    let last = performance.now();
    let stall = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - last);
      last = now;
    }, 4);
    for (let n = 0; n <= text.length; n++) {
      set('sentence', text.slice(0, n), 'input');
      await pause(n < 40 ? 130 : 10);
    }
    for (const kv of ['4', '2', '1', '8', '4', '1', '2']) {
      set('kv-heads', kv, 'change');
      await pause(30);
    }
    set('rope', true, 'change');
    await pause(1000); // the last run, and any superseded one that might still come
    clearInterval(timer);
    proto.forward = forward;
    return { longest: Math.max(stall, performance.now() - last), onPage };
  }, sentence);
  console.log(`explorer: the page's longest stall while recomputing: ${longest.toFixed(1)} ms`);
  assert.equal(onPage, 0, 'forwards ran on the page\'s thread');
  // Drawing 8 heatmaps and the chart takes the page about 10 ms a run; the
  // bound leaves room for a test machine whose cores other jobs share (the
  // stalls seen there, up to about 250 ms, come with a load of 9 on 2 cores).
  assert.ok(longest < 500, `the page's thread was busy for ${longest.toFixed(1)} ms at a stretch`);
  const words = sentence.split(' ');
  await p.page.waitForFunction((n) => document.body.dataset.kvHeads === '2' && document.body.dataset.rope === 'true' &&
    document.querySelector('[data-pattern="self"]')?.dataset.rows === String(n), words.length);

  // The heatmaps are the last input's: its tokens, and the weights of the
  // same layer run synchronously here on that input.
  const labels = await p.page.$$eval('[data-pattern="self"] .hm-rowlabels span', (s) => s.map((x) => x.textContent));
  assert.deepEqual(labels, words);
  const check = await p.page.evaluate(async () => {
    const { lastRun } = await import('/web/demo/js/explorer.js');
    const { attentionModule } = await import('/web/demo/js/common.js');
    const { D, H, buildWeights, tokenize, embed } = await import('/web/demo/js/explorer-model.js');
    const run = lastRun();
    const module = await attentionModule();
    const { tokens } = tokenize(document.getElementById('sentence').value);
    const mha = new module.MultiHeadAttention({ dModel: D, numHeads: H, numKvHeads: 2, rope: { style: 'interleaved' } });
    try {
      mha.setWeights(buildWeights(2));
      const r = mha.forward({ data: embed(module, tokens), shape: [1, tokens.length, D] }, undefined, undefined,
        { causal: run.causal, window: run.window, returnAttnWeights: true });
      let diff = 0;
      for (let i = 0; i < r.attnWeights.data.length; i++) diff = Math.max(diff, Math.abs(r.attnWeights.data[i] - run.probs[i]));
      return { diff, length: r.attnWeights.data.length, shown: run.probs.length, kvHeads: run.kvHeads, rope: run.rope, queries: run.queries };
    } finally {
      mha.dispose();
    }
  });
  assert.deepEqual(check.queries, words);
  assert.deepEqual([check.kvHeads, check.rope, check.shown], [2, true, check.length]);
  assert.ok(check.diff < 1e-5, `the heatmaps differ from the last input's weights by ${check.diff}`);
  await shoot(p.page, 'explorer-pool-typed-1280x800');
  assert.deepEqual(p.problems, []);
  await p.context.close();
});

test('benchmark: "pool, 2 workers" on S1 on a page that is not cross-origin isolated', { timeout: TIMEOUT }, async () => {
  const p = await open('bench.html?workload=S1&quick=1&autorun=1&pool=2', ['done']);
  assert.equal(await p.page.locator('#isolation').getAttribute('data-isolated'), 'false');
  assert.match(await p.page.locator('#isolation').textContent(),
    /^no \(no COOP\/COEP headers\): no SharedArrayBuffer, so no shared-memory threads; the worker pool needs none$/);
  assert.equal(await p.page.locator('#pool').inputValue(), '2');
  // No threads here: the choice is off (tests/browser/bench-threads.test.mjs checks its reason).
  assert.equal(await p.page.locator('#threads').isDisabled(), true);
  assert.equal(await p.page.locator('#threads-note').getAttribute('data-available'), 'false');
  const pool = await p.page.$eval('#results-table tr[data-impl="pool, 2 workers"]', (t) => ({
    median: Number(t.dataset.medianMs), gflops: Number(t.dataset.gflops), ok: t.dataset.ok,
    shown: t.children[3].textContent, threads: t.children[2].textContent,
  }));
  assert.ok(pool.median > 0 && Number.isFinite(pool.median), `median ${pool.median}`);
  assert.ok(pool.gflops > 0 && Number.isFinite(pool.gflops), `GFLOP/s ${pool.gflops}`);
  assert.match(pool.shown, /^\d+(\.\d+)?$/);
  assert.equal(pool.threads, '2 workers');
  assert.equal(pool.ok, 'true', 'the pool differs from the reference');
  await shoot(p.page, 'bench-S1-pool-not-isolated-1280x800');
  assert.deepEqual(p.problems, []);
  await p.context.close();
});
