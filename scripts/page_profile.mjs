#!/usr/bin/env node
// What a page of each entry downloads, part by part: the entry's bundle by
// module (its minified bytes in the bundle, and that share of the bundle's
// brotli), then the Emscripten glue and the .wasm of the build a Chromium
// page that is not cross-origin isolated loads (relaxed SIMD, one thread).
// Where the .wasm's bytes go by area of the code: scripts/wasm_sizes.py on
// a --profiling-funcs link (its usage says how).
//
//   node scripts/page_profile.mjs [dist folder, default web/dist] [--top N]
//
// Brotli at quality 11, as tests/js/package.test.mjs measures the pages.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { makeBundles } from './bundle_web.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 12;
const dist = path.resolve(args[0] ?? path.join(ROOT, 'web', 'dist'));

const brotli = (bytes) => zlib.brotliCompressSync(bytes, {
  params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;
const PAGES = [['main entry', 'index.min.js', 'simd_attention_relaxed'],
  ['attention entry', 'attention.min.js', 'simd_attention_relaxed_mha']];

const bundles = await makeBundles();
for (const [page, entry, build] of PAGES) {
  const { code, bytes } = bundles[entry];
  const entryBrotli = brotli(code);
  const glue = fs.readFileSync(path.join(dist, `${build}.js`));
  const wasm = fs.readFileSync(path.join(dist, `${build}.wasm`));
  const [glueBrotli, wasmBrotli] = [brotli(glue), brotli(wasm)];
  console.log(`\n${page}: ${entryBrotli + glueBrotli + wasmBrotli} bytes brotli ` +
    `(${entry} ${entryBrotli}, ${build}.js ${glueBrotli}, ${build}.wasm ${wasmBrotli}; ` +
    `raw ${code.length} / ${glue.length} / ${wasm.length})`);
  const total = Object.values(bytes).reduce((a, b) => a + b, 0);
  const rows = Object.entries(bytes).sort((a, b) => b[1] - a[1]);
  console.log('  module                                 minified  share  ~brotli');
  for (const [module, n] of rows.slice(0, top)) {
    console.log(`  ${module.padEnd(38)} ${String(n).padStart(8)} ${(100 * n / total).toFixed(1)
      .padStart(5)}% ${String(Math.round(entryBrotli * n / total)).padStart(8)}`);
  }
  const rest = rows.slice(top);
  if (rest.length > 0) {
    const n = rest.reduce((a, [, b]) => a + b, 0);
    console.log(`  ${`${rest.length} more modules`.padEnd(38)} ${String(n).padStart(8)} ` +
      `${(100 * n / total).toFixed(1).padStart(5)}% ${String(Math.round(entryBrotli * n / total))
        .padStart(8)}`);
  }
}
