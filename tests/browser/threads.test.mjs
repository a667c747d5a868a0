// The threaded builds in Chromium: on the demo server with COOP/COEP (the
// page is cross-origin isolated) a module of 2 threads loads, runs its
// workers and gives PyTorch's result for a golden case, bit-identical to the
// single-thread build; on a server without those headers the module falls
// back to one thread and says why, and threads: 2 rejects with that reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadGoldenCase, maxAbsDiff, mhaArguments } from '../js/support/golden.mjs';
import { isolationSession, NOT_ISOLATED_REASON as REASON } from './launch.mjs';

const session = isolationSession();

async function openPage(server) {
  const page = await session.browser.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto(new URL('web/demo/threads-check.html', server.url).href);
  return { page, problems };
}

test('a module of 2 threads on the cross-origin isolated demo server', async () => {
  const { page, problems } = await openPage(session.isolated);
  const c = loadGoldenCase('self_seed_example');
  const a = mhaArguments(c);
  const plain = (t) => ({ data: Array.from(t.data), shape: t.shape });
  const input = {
    config: a.config,
    weights: Object.fromEntries(Object.entries(a.weights).map(([k, v]) => [k, Array.from(v)])),
    query: plain(a.query),
    options: a.options,
  };
  const result = await page.evaluate(async ({ config, weights, query, options }) => {
    const { createAttentionModule } = await import('../index.js');
    const f32 = (v) => Float32Array.from(v);
    const w = Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, f32(v)]));
    const q = { data: f32(query.data), shape: query.shape };
    const run = async (threads) => {
      const sa = await createAttentionModule({ threads });
      const mha = new sa.MultiHeadAttention(config);
      mha.setWeights(w);
      const { output } = mha.forward(q, undefined, undefined, options);
      const facts = { threads: sa.threads, unavailable: sa.threadsUnavailable ?? null,
        build: sa.build, backends: sa.backends, objectThreads: mha.config.threads };
      sa.dispose();
      return { ...facts, output: Array.from(output.data), shape: output.shape };
    };
    return { isolated: crossOriginIsolated, two: await run(2), one: await run(1) };
  }, input);

  assert.equal(result.isolated, true);
  assert.deepEqual(
    { threads: result.two.threads, objectThreads: result.two.objectThreads,
      unavailable: result.two.unavailable, backends: result.two.backends },
    { threads: 2, objectThreads: 2, unavailable: null, backends: ['highway'] });
  assert.equal(result.two.build, result.one.build);
  assert.equal(result.one.threads, 1);
  assert.deepEqual(result.two.shape, c.tensors.output.shape);
  const diff = maxAbsDiff(Float32Array.from(result.two.output), c.tensors.output.data);
  assert.ok(diff <= c.tolerance, `differs from PyTorch by ${diff} > ${c.tolerance}`);
  assert.deepEqual(result.two.output, result.one.output, 'the 2-thread result is not the 1-thread one');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a page without COOP/COEP falls back to one thread and says why', async () => {
  const { page, problems } = await openPage(session.notIsolated);
  const result = await page.evaluate(async () => {
    const { createAttentionModule } = await import('../index.js');
    const sa = await createAttentionModule();
    let rejected;
    try {
      await createAttentionModule({ threads: 2 });
    } catch (e) {
      rejected = `${e.constructor.name}: ${e.message}`;
    }
    return { isolated: crossOriginIsolated, threads: sa.threads,
      unavailable: sa.threadsUnavailable, rejected };
  });
  assert.deepEqual(result, {
    isolated: false, threads: 1, unavailable: REASON,
    rejected: `Error: createAttentionModule: options.threads: 2 threads need a threaded ` +
      `build, which cannot run here: ${REASON}`,
  });
  assert.deepEqual(problems, []);
  await page.close();
});

// createAttentionModule resolves once its own instance is ready and does not
// wait for its workers: with their script held back for 3 s it resolves at
// once and threadsReady after, and forwards give the one-thread bits before
// any worker runs a thread and after they all do; dispose() may come before
// any has loaded.
test('a module of 4 threads is in use before its workers have loaded', async () => {
  const HELD_MS = 3000;
  const page = await session.browser.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.route(/_threads\.worker\.js$/, async (route) => {
    await new Promise((resolve) => setTimeout(resolve, HELD_MS));
    await route.continue();
  });
  await page.goto(new URL('web/demo/threads-check.html', session.isolated.url).href);
  const result = await page.evaluate(async () => {
    const { createAttentionModule } = await import('../index.js');
    const d = 256, t = 64;
    const random = (n, seed) => Float32Array.from({ length: n },
      (_, i) => Math.sin(seed * 1000 + i * 12.9898) * 0.05);
    const weights = { wQ: random(d * d, 1), wK: random(d * d, 2), wV: random(d * d, 3),
      wO: random(d * d, 4) };
    const x = { data: random(t * d, 5), shape: [1, t, d] };
    const forward = (sa) => {
      const mha = new sa.MultiHeadAttention({ dModel: d, numHeads: 8, bias: false });
      mha.setWeights(weights);
      const out = Array.from(mha.forward(x, undefined, undefined, { causal: true }).output.data);
      mha.dispose();
      return out;
    };
    const one = await createAttentionModule({ threads: 1 });
    const want = forward(one);
    const started = performance.now();
    const sa = await createAttentionModule({ threads: 4 });
    const resolvedMs = performance.now() - started;
    const before = forward(sa);
    await sa.threadsReady;
    const readyMs = performance.now() - started;
    const after = forward(sa);
    sa.dispose();
    const early = await createAttentionModule({ threads: 4 });
    early.dispose();
    return { resolvedMs, readyMs, threads: sa.threads, same: [before, after].map((o) =>
      o.length === want.length && o.every((v, i) => Object.is(v, want[i]))) };
  });
  assert.ok(result.resolvedMs < HELD_MS / 2, `resolved after ${result.resolvedMs} ms`);
  assert.ok(result.readyMs >= HELD_MS, `threadsReady after ${result.readyMs} ms`);
  assert.deepEqual({ threads: result.threads, same: result.same },
    { threads: 4, same: [true, true] });
  assert.deepEqual(problems, []);
  await page.close();
});
