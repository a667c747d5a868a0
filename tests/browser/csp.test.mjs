// The package under a Content-Security-Policy that allows no code made from
// strings (no 'unsafe-eval'), only 'wasm-unsafe-eval', which compiling
// WebAssembly needs: the glue is linked with -sDYNAMIC_EXECUTION=0
// (bindings/CMakeLists.txt), so Embind makes its invokers without new
// Function. On a page that is not cross-origin isolated (the single-thread
// build) and on one that is (a threaded build and its workers), the entry
// loads through an import map, the module starts, a forward runs and a
// refused call throws its message, with no policy violation; the same for
// the attention entry (dist/attention.min.js), which on the plain page
// fetches the build that binds attention alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isolationSession } from './launch.mjs';

const session = isolationSession();

const NONCE = 'simd-attention-csp-test';
const POLICY = `default-src 'self'; script-src 'self' 'nonce-${NONCE}' 'wasm-unsafe-eval'`;
const pageOf = (bundle) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<script type="importmap" nonce="${NONCE}">
{ "imports": { "simd-attention": "/web/dist/${bundle}" } }
</script></head><body><script type="module" nonce="${NONCE}">
const violations = [];
document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective));
try {
  const { createAttentionModule } = await import('simd-attention');
  const sa = await createAttentionModule();
  await sa.threadsReady;
  const mha = new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, bias: false });
  const w = Float32Array.from({ length: 64 }, (_, i) => ((i % 7) - 3) / 8);
  mha.setWeights({ wQ: w, wK: w, wV: w, wO: w });
  const x = { data: Float32Array.from({ length: 24 }, (_, i) => i / 24), shape: [3, 8] };
  const { output } = mha.forward(x);
  let refused;
  try {
    mha.forward({ data: new Float32Array(5), shape: [1, 5] });
  } catch (e) {
    refused = e.message;
  }
  window.result = { build: sa.build, threads: sa.threads, shape: output.shape,
    finite: Array.from(output.data).every(Number.isFinite), refused, violations };
} catch (e) {
  window.result = { failed: String(e), violations };
}
</script></body></html>`;

async function run(server, isolated, bundle) {
  const context = await session.browser.newContext();
  const page = await context.newPage();
  const wasm = [];
  page.on('request', (r) => {
    if (r.url().endsWith('.wasm')) wasm.push(r.url().split('/').pop());
  });
  const url = new URL('/web/csp.html', server.url).href;
  await page.route(url, (route) => route.fulfill({
    contentType: 'text/html; charset=utf-8', body: pageOf(bundle),
    headers: { 'Content-Security-Policy': POLICY, ...(isolated ? {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp' } : {}) },
  }));
  await page.goto(url);
  const result = await page.waitForFunction(() => window.result, null, { timeout: 60_000 })
    .then((h) => h.jsonValue());
  await context.close();
  return { ...result, wasm };
}

for (const [kind, isolated, threads, bundle, wasm] of [
  ['a plain page', false, 1, 'index.min.js', 'simd_attention_relaxed.wasm'],
  ['a cross-origin-isolated page', true, 2, 'index.min.js', 'simd_attention_relaxed_threads.wasm'],
  ['a plain page of the attention entry', false, 1, 'attention.min.js',
    'simd_attention_relaxed_mha.wasm'],
  ['a cross-origin-isolated page of the attention entry', true, 2, 'attention.min.js',
    'simd_attention_relaxed_threads.wasm'],
]) {
  test(`${kind} whose policy allows no eval runs the package`, async () => {
    const result = await run(isolated ? session.isolated : session.notIsolated, isolated, bundle);
    assert.deepEqual(result, {
      build: 'relaxed-simd', threads, shape: [3, 8], finite: true, wasm: [wasm],
      refused: result.refused?.startsWith('MultiHeadAttention.forward: ') ? result.refused : 'a ' +
        `MultiHeadAttention.forward error, got ${JSON.stringify(result.refused)}`,
      violations: [],
    });
  });
}
