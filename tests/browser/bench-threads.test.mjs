// The live benchmark's thread-count choice in Chromium: on the demo server
// with COOP/COEP the page offers 1, 2, ... threads, and a quick S1 run on 2
// threads gives real rows of our threaded relaxed-SIMD and SIMD builds (2
// threads, a time, an output check passed; the relaxed one bit-identical to
// its single-thread row, which is the reference); on a server without those
// headers the choice is disabled and the page gives module.threadsUnavailable's
// reason. Screenshots go to build/screenshots/.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../js/support/golden.mjs';
import { isolationSession, NOT_ISOLATED_REASON, openDemoPage } from './launch.mjs';

const session = isolationSession();

const SHOTS = path.join(repoRoot, 'build', 'screenshots');
const TIMEOUT = 120_000;

before(() => fs.mkdirSync(SHOTS, { recursive: true }));

// Opens the benchmark page on `server` and waits for `until`
// (body[data-state]); fails if the page shows an error.
async function open(server, query, until) {
  const p = await openDemoPage(session.browser, server, `bench.html?${query}`, { until });
  const error = p.state === 'error' ? await p.page.locator('main').textContent() : '';
  assert.notEqual(p.state, 'error', `the page shows an error: ${error}`);
  return p;
}

const rowsOf = (page) => page.$$eval('#results-table tbody tr', (trs) => trs.map((t) => ({
  impl: t.dataset.impl, threads: Number(t.dataset.threads), median: Number(t.dataset.medianMs),
  gflops: Number(t.dataset.gflops), maxDiff: Number(t.dataset.maxDiff), ok: t.dataset.ok,
  shownThreads: t.children[2].textContent,
})));

test('benchmark on 2 threads (S1, quick, cross-origin isolated): threaded rows with 2 threads and the output check passed', { timeout: TIMEOUT }, async () => {
  const p = await open(session.isolated, 'workload=S1&quick=1&autorun=1&threads=2&pool=0', ['done']);
  const cores = await p.page.evaluate(() => navigator.hardwareConcurrency);
  assert.ok(cores >= 2, `Chromium reports ${cores} logical processors; the test needs 2`);
  assert.equal(await p.page.evaluate(() => crossOriginIsolated), true);
  const select = p.page.locator('#threads');
  assert.equal(await select.isDisabled(), false);
  assert.equal(await select.inputValue(), '2');
  const offered = await select.locator('option').evaluateAll((os) => os.map((o) => Number(o.value)));
  assert.equal(offered[0], 1);
  assert.equal(offered.at(-1), cores);
  assert.ok(offered.includes(2));
  assert.equal(await p.page.locator('#threads-note').getAttribute('data-available'), 'true');

  const rows = await rowsOf(p.page);
  assert.deepEqual(rows.map((r) => [r.impl, r.threads]), [
    ['ours wasm-relaxed highway', 1], ['ours wasm-relaxed highway, 2 threads', 2],
    ['ours wasm-simd highway', 1], ['ours wasm-simd highway, 2 threads', 2], ['ours wasm-simd xsimd', 1],
    ['ours wasm no-SIMD (highway)', 1], ['ours wasm no-SIMD (scalar)', 1], ['plain JS', 1],
  ]);
  for (const r of rows) {
    assert.ok(r.median > 0 && Number.isFinite(r.median), `${r.impl}: median ${r.median}`);
    assert.ok(r.gflops > 0 && Number.isFinite(r.gflops), `${r.impl}: GFLOP/s ${r.gflops}`);
    assert.equal(r.ok, 'true', `${r.impl}: output differs from the reference by ${r.maxDiff}`);
    assert.equal(r.shownThreads, String(r.threads), `${r.impl}: the threads column`);
  }
  // The reference is the relaxed build on one thread: its 2-thread run gives the same bits.
  assert.equal(rows.find((r) => r.impl === 'ours wasm-relaxed highway, 2 threads').maxDiff, 0);
  assert.equal(await p.page.locator('#chart svg rect').count(), rows.length);
  await p.page.screenshot({ path: path.join(SHOTS, 'bench-S1-2-threads-1280x800.png'), fullPage: true });
  assert.deepEqual(p.problems, []);
  await p.context.close();
});

test('benchmark without COOP/COEP: the thread choice is disabled and says why', { timeout: TIMEOUT }, async () => {
  const p = await open(session.notIsolated, 'workload=S1&threads=2', ['ready']);
  const select = p.page.locator('#threads');
  assert.equal(await select.isDisabled(), true);
  assert.equal(await select.inputValue(), '1');
  const note = p.page.locator('#threads-note');
  assert.equal(await note.getAttribute('data-available'), 'false');
  assert.equal(await note.textContent(), `Threads: unavailable here, our rows run on one thread: ${NOT_ISOLATED_REASON}.`);
  await p.page.screenshot({ path: path.join(SHOTS, 'bench-threads-not-isolated-1280x800.png'), fullPage: true });
  assert.deepEqual(p.problems, []);
  await p.context.close();
});
