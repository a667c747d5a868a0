#!/usr/bin/env node
// The package step's JS half (scripts/build.sh package, after the wasm trees'
// files are copied into web/dist/): minifies the Emscripten glue in place and
// bundles the package's modules into two minified ES modules for pages that
// load the package without a bundler (an import map, a CDN):
//
//   dist/index.min.js    web/index.js and every module of web/src/ it imports
//   dist/pool-worker.js  web/src/pool-worker.js, the worker of createAttentionPool
//
// Both sit in dist/ because the modules name the files they load relative to
// themselves, and those names resolve the same from dist/: the glue and .wasm
// as '../dist/<file>' (from src/, and from dist/ alike), the pool's worker as
// './pool-worker.js' next to the module that starts it. Each bundle holds all
// it needs (a shared chunk would be one more request, made only after the
// entry has arrived); the pool's worker thus holds its own copy of the entry.
//
// Bundlers do not get these files: web/package.json sends them to the
// modules themselves (its "module" condition), which they tree-shake module
// by module (sideEffects: false).
//
//   node scripts/bundle_web.mjs [dist folder, default web/dist]
//
// Prints each file's size raw, gzip (level 9) and brotli (quality 11),
// before and after. makeBundles() is what tests/js/package.test.mjs compares
// the shipped bundles with.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const WEB = path.join(ROOT, 'web');

// The engines every build needs (WebAssembly exception handling, index.js's
// EH probe), so that the minifier writes no syntax they lack.
const TARGET = ['chrome95', 'edge95', 'firefox100', 'safari15.2', 'node20'];

const sizes = (bytes) => [bytes.length, zlib.gzipSync(bytes, { level: 9 }).length,
  zlib.brotliCompressSync(bytes).length];
const rows = [];
const report = (file, before, after) => rows.push([file, ...sizes(before), ...sizes(after)]);

// The glue: whitespace, syntax and local names. Embind builds its invokers
// with new Function from argument names it passes in, never from names of
// the glue's scope, so renaming keeps it working. The glue of a build is an
// ES module (its top-level names are its own); a threaded build's
// .worker.js is a classic script, whose top-level names stay.
async function minifyGlue(dist, file) {
  const at = path.join(dist, file);
  const before = fs.readFileSync(at);
  const classicScript = file.endsWith('.worker.js');
  const { code } = await esbuild.transform(before.toString('utf8'), {
    minify: true, target: TARGET, charset: 'utf8', legalComments: 'inline',
    ...(classicScript ? {} : { format: 'esm' }),
  });
  fs.writeFileSync(at, code);
  report(file, before, Buffer.from(code));
}

/**
 * The two bundles of web/'s modules as they are now: resolves to
 * { 'index.min.js': { code, inputs }, 'pool-worker.js': ... }, inputs being
 * the modules in each (paths relative to web/).
 */
export async function makeBundles() {
  const result = await esbuild.build({
    absWorkingDir: WEB,
    entryPoints: [
      { in: 'index.js', out: 'index.min' },
      { in: 'src/pool-worker.js', out: 'pool-worker' },
    ],
    outdir: path.join(WEB, 'dist'),
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    minify: true,
    target: TARGET,
    charset: 'utf8',
    legalComments: 'inline',
    write: false,
    metafile: true,
    logLevel: 'warning',
  });
  const bundles = {};
  for (const { path: out, contents } of result.outputFiles) {
    const meta = result.metafile.outputs[path.relative(WEB, out)];
    bundles[path.basename(out)] = { code: Buffer.from(contents), inputs: Object.keys(meta.inputs) };
  }
  return bundles;
}

async function main(dist) {
  const glue = fs.readdirSync(dist).filter((f) => /^simd_attention_.*\.js$/.test(f)).sort();
  if (glue.length === 0) {
    throw new Error(`no simd_attention_*.js in ${dist} (run scripts/build.sh package)`);
  }
  for (const f of glue) await minifyGlue(dist, f);
  for (const [file, { code, inputs }] of Object.entries(await makeBundles())) {
    fs.writeFileSync(path.join(dist, file), code);
    const sources = Buffer.concat(inputs.map((f) => fs.readFileSync(path.resolve(WEB, f))));
    report(`${file} (${inputs.length} modules)`, sources, code);
  }
  const width = Math.max(...rows.map((r) => r[0].length));
  console.log(`${'file'.padEnd(width)}  ${'before: raw    gzip  brotli'.padStart(27)}` +
    `  ${'after: raw    gzip  brotli'.padStart(27)}`);
  for (const [file, ...n] of rows) {
    console.log(`${file.padEnd(width)}  ${n.map((v) => String(v).padStart(8)).join(' ')}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(path.resolve(process.argv[2] ?? path.join(WEB, 'dist'))).catch((e) => {
    console.error(`bundle_web: ${e.message}`);
    process.exit(1);
  });
}
