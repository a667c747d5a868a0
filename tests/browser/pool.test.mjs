// The worker pool in Chromium, on a page served WITHOUT COOP/COEP (not
// cross-origin isolated, so no SharedArrayBuffer): a pool of 2 module Web
// Workers gives PyTorch's results for a golden case and the page's own
// synchronous ones, while the main thread stays free to run its own tasks
// (counted: wall-clock stalls depend on what else the machine runs).
//
// SA_CHROMIUM overrides the browser binary (default /usr/bin/chromium).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadGoldenCase, maxAbsDiff, mhaArguments } from '../js/support/golden.mjs';
import { demoSession } from './launch.mjs';

const session = demoSession({ isolated: false });

async function openPage() {
  const page = await session.browser.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  const response = await page.goto(new URL('web/demo/pool-check.html', session.server.url).href);
  return { page, problems, headers: response.headers() };
}

test('a pool of 2 workers on a page that is not cross-origin isolated', async () => {
  const { page, problems, headers } = await openPage();
  assert.equal(headers['cross-origin-embedder-policy'], undefined);
  assert.equal(headers['cross-origin-opener-policy'], undefined);
  assert.equal(headers['x-content-type-options'], 'nosniff');

  const c = loadGoldenCase('self_seed_example');
  const a = mhaArguments(c);
  const plain = (t) => t && { data: Array.from(t.data), shape: t.shape };
  const input = {
    config: a.config,
    weights: Object.fromEntries(Object.entries(a.weights).map(([k, v]) => [k, Array.from(v)])),
    query: plain(a.query),
  };
  const result = await page.evaluate(async ({ config, weights, query }) => {
    const { createAttentionModule, createAttentionPool } = await import('../index.js');
    const f32 = (v) => Float32Array.from(v);
    const w = Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, f32(v)]));
    const q = { data: f32(query.data), shape: query.shape };
    const pool = await createAttentionPool({ workers: 2 });
    const mha = await pool.MultiHeadAttention(config);
    await mha.setWeights(w);
    const pooled = await mha.forward(q, undefined, undefined, { returnAttnWeights: true });

    const module = await createAttentionModule();
    const sync = new module.MultiHeadAttention(config);
    sync.setWeights(w);
    const expected = sync.forward(q).output.data;
    let fromSync = 0;
    for (let i = 0; i < expected.length; ++i) {
      fromSync = Math.max(fromSync, Math.abs(expected[i] - pooled.output.data[i]));
    }

    // A longer input (B = 1, T = 512), forwarded 4 times through the pool and
    // once synchronously, while the page plays ping-pong with itself over a
    // MessageChannel (a task each, unclamped, unlike timers): while the pool
    // computes, the main thread is free and the pings run, however fast or
    // loaded the machine; the synchronous forward holds the thread for its
    // whole run, so no ping can fall inside it.
    const long = { data: new Float32Array(512 * config.dModel).map((_, i) => Math.sin(i)),
      shape: [1, 512, config.dModel] };
    let pings = 0;
    let pinging = true;
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      ++pings;
      if (pinging) channel.port2.postMessage(0);
    };
    channel.port2.postMessage(0);
    let start = performance.now();
    for (let i = 0; i < 4; ++i) await mha.forward(long, undefined, undefined, { causal: true });
    const poolPings = pings;
    const poolTook = performance.now() - start;
    const before = pings;
    start = performance.now();
    sync.forward(long, undefined, undefined, { causal: true });
    const syncTook = performance.now() - start;
    const syncPings = pings - before;
    pinging = false;
    sync.dispose();
    await mha.dispose();
    await pool.dispose();
    return {
      isolated: globalThis.crossOriginIsolated,
      sharedMemory: typeof SharedArrayBuffer,
      workers: pool.workers,
      output: Array.from(pooled.output.data),
      outputShape: pooled.output.shape,
      attnShape: pooled.attnWeights.shape,
      fromSync,
      poolPings,
      poolTook,
      syncPings,
      syncTook,
    };
  }, input);

  assert.deepEqual(problems, []);
  assert.equal(result.isolated, false);
  assert.equal(result.sharedMemory, 'undefined');
  assert.equal(result.workers, 2);
  assert.deepEqual(result.outputShape, c.tensors.output.shape);
  assert.deepEqual(result.attnShape, c.tensors.attn_weights.shape);
  const fromTorch = maxAbsDiff(Float32Array.from(result.output), c.tensors.output.data);
  assert.ok(fromTorch <= c.tolerance, `differs from PyTorch by ${fromTorch} > ${c.tolerance}`);
  assert.ok(result.fromSync <= 1e-5, `differs from the synchronous API by ${result.fromSync}`);
  // The page ran its own tasks while the pool computed, never inside the
  // synchronous forward. (A pool that computed on the page's thread would let
  // a ping run only between its 4 calls.)
  const why = `pool: ${result.poolPings} pings in ${result.poolTook.toFixed(1)} ms; ` +
    `synchronous: ${result.syncPings} in ${result.syncTook.toFixed(1)} ms`;
  console.log(why);
  assert.ok(result.poolPings >= 20, why);
  assert.equal(result.syncPings, 0, why);
});
