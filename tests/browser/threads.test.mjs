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
