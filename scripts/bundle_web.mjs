#!/usr/bin/env node
// The package step's JS half (scripts/build.sh package, after the wasm trees'
// files are copied into web/dist/): minifies the Emscripten glue in place and
// bundles the package's modules into minified ES modules for pages that load
// the package without a bundler (an import map, a CDN):
//
//   dist/index.min.js       web/index.js and the modules of web/src/ it imports,
//                           but for those loaded on demand:
//   dist/pretrained.min.js  web/src/pretrained*.js (sa.fromPretrained,
//                           pool.fromPretrained)
//   dist/pool.min.js        web/src/pool*.js (createAttentionPool)
//   dist/pool-worker.js     web/src/pool-worker.js, the worker of createAttentionPool
//   dist/attention.min.js   web/attention.js, the attention entry, and the
//                           modules of web/src/ it imports
//
// All sit in dist/ because the modules name the files they load relative to
// themselves, and those names resolve the same from dist/: the glue and .wasm
// as '../dist/<file>' (from src/, and from dist/ alike), the pool's worker as
// './pool-worker.js' next to the module that starts it.
//
// The entry is one file: a page waits for no other module before
// createAttentionModule can start. What a page that only runs the module's
// objects never calls is loaded when first called (ON_DEMAND): each name the
// entry imports from such a module becomes an async function that imports
// its file and calls the name there, so that name must be an async function
// in the source too (makeBundles checks). Such a file takes the modules it
// shares with the entry from the entry itself, which exports the names it
// imports of them for it (ENTRY_MODULES): one instance of each, whose state
// (the registries of the module's objects, which the pool checks its
// arguments against) is the page's. esbuild's own code splitting would put
// those shared modules in a third file that the entry imports before it
// runs.
//
// The modules themselves import one another statically: bundlers and Node
// take them (web/package.json's "module" and "import" conditions), and a
// bundler builds a worker that imports the package into one file only where
// the worker's modules hold no import() (Vite's default worker format,
// 'iife', cannot split); bundlers drop what a page does not use instead,
// module by module (sideEffects: false). The pool's worker holds its own
// copy of the entry.
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

// The glue: whitespace, syntax and local names. Embind's invokers are
// closures (DYNAMIC_EXECUTION=0, bindings/CMakeLists.txt), no code made
// from names of the glue's scope, so renaming keeps it working. The glue of
// a build is an ES module (its top-level names are its own); a threaded
// build's .worker.js is a classic script, whose top-level names stay.
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

// The modules loaded on demand, by the file each becomes in dist/.
export const ON_DEMAND = { 'src/pretrained.js': 'pretrained.min.js', 'src/pool.js': 'pool.min.js' };

// The entry's export that hands its modules to the files loaded on demand:
// { 'src/<file>.js': the module's namespace }.
export const ENTRY_MODULES = '__entryModules';

const ENTRY = 'index.min.js';

const common = {
  absWorkingDir: WEB,
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
};

const moduleOf = (file) => path.relative(WEB, file).split(path.sep).join('/');
const namesOf = async (module) => Object.entries(await import(pathToFileURL(path.join(WEB, module))));

// A module of ON_DEMAND, imported by any module but itself: its async
// functions, each importing the module's file when called. Every other
// import() of a file of dist/ stays as it is.
function onDemand(self) {
  return {
    name: 'on-demand',
    setup(build) {
      build.onResolve({ filter: /^\.\/[\w-]+\.min\.js$/ }, (a) => ({ path: a.path, external: true }));
      build.onResolve({ filter: /\.js$/ }, (a) => {
        if (a.namespace !== 'file') return undefined;
        const module = moduleOf(path.resolve(a.resolveDir, a.path));
        if (!(module in ON_DEMAND) || module === self) return undefined;
        return { path: module, namespace: 'on-demand' };
      });
      build.onLoad({ filter: /.*/, namespace: 'on-demand' }, async ({ path: module }) => {
        const file = ON_DEMAND[module];
        const names = (await namesOf(module))
          .filter(([, v]) => v?.constructor?.name === 'AsyncFunction').map(([name]) => name);
        return {
          resolveDir: WEB,
          contents: `const load = () => import('./${file}');\n` + names.map((name) =>
            `export const ${name} = async (...args) => (await load()).${name}(...args);\n`).join(''),
        };
      });
    },
  };
}

// The modules of the entry (`entryModules`) a file loaded on demand imports
// (`module`, a key of ON_DEMAND): resolves to Map { module => Set of the
// names it imports }, from the file bundled with those modules left as
// imports. A namespace or default import takes every name.
async function namesFromEntry(module, entryModules) {
  const result = await esbuild.build({ ...common, minify: false, metafile: false,
    entryPoints: [module],
    plugins: [onDemand(module), {
      name: 'entry-external',
      setup(build) {
        build.onResolve({ filter: /\.js$/ }, (a) => {
          if (a.kind === 'entry-point' || a.namespace !== 'file') return undefined;
          const imported = moduleOf(path.resolve(a.resolveDir, a.path));
          return entryModules.has(imported) ? { path: imported, external: true } : undefined;
        });
      },
    }] });
  const names = new Map();
  for (const [, clause, from] of result.outputFiles[0].text.matchAll(/^import\s+(.*?)\s+from\s+"([^"]+)";$/gm)) {
    if (!entryModules.has(from)) continue;
    if (!names.has(from)) names.set(from, new Set());
    const braces = /^\{([^}]*)\}$/.exec(clause.trim());
    const imported = braces ? braces[1].split(',').map((n) => n.trim().split(/\s+as\s+/)[0])
      : (await namesOf(from)).map(([name]) => name);
    for (const name of imported.filter(Boolean)) names.get(from).add(name);
  }
  return names;
}

// In a file loaded on demand: the modules of the entry, as `used` (Map {
// module => names}, namesFromEntry) says, taken from the entry's
// ENTRY_MODULES, which holds those names alone.
function fromEntry(used) {
  return {
    name: 'from-entry',
    setup(build) {
      build.onResolve({ filter: /\.js$/ }, (a) => {
        if (a.kind === 'entry-point' || a.namespace !== 'file') return undefined;
        const module = moduleOf(path.resolve(a.resolveDir, a.path));
        if (!used.has(module)) return undefined;
        return { path: module, namespace: 'from-entry' };
      });
      build.onResolve({ filter: new RegExp(`^\\./${ENTRY.replace('.', '\\.')}$`) },
        (a) => ({ path: a.path, external: true }));
      build.onLoad({ filter: /.*/, namespace: 'from-entry' }, ({ path: module }) => ({
        resolveDir: WEB,
        contents: `import { ${ENTRY_MODULES} } from './${ENTRY}';\n` +
          `export const { ${[...used.get(module)].join(', ')} } = ` +
          `${ENTRY_MODULES}[${JSON.stringify(module)}];\n`,
      }));
    },
  };
}

const inputsOf = (result) => Object.keys(Object.values(result.metafile.outputs)[0].inputs)
  .filter((input) => fs.existsSync(path.join(WEB, input)));

// Each input's minified bytes in the output: { module: bytes }.
const bytesOf = (result) => Object.fromEntries(Object.entries(
  Object.values(result.metafile.outputs)[0].inputs).map(([m, { bytesInOutput }]) => [m, bytesInOutput]));

/**
 * The bundles of web/'s modules as they are now: resolves to
 * { 'index.min.js': { code, inputs, bytes }, 'pool.min.js': ..., ... },
 * inputs being the modules in each (paths relative to web/), bytes each
 * input's minified bytes in the bundle (scripts/page_profile.mjs).
 */
export async function makeBundles() {
  const bundles = {};
  const add = (file, result) => {
    bundles[file] = { code: Buffer.from(result.outputFiles[0].contents), inputs: inputsOf(result),
      bytes: bytesOf(result) };
  };
  for (const [module, file] of Object.entries(ON_DEMAND)) {
    for (const [name, v] of await namesOf(module)) {
      if (v?.constructor?.name !== 'AsyncFunction') {
        throw new Error(`${module} is loaded on demand, but its export ${name} is not an async function`);
      }
    }
  }
  // The entry's modules, the names of them that the files loaded on demand
  // import, those files, then the entry, which hands over those names alone
  // (whole namespaces would keep every export of those modules in it).
  const entryModules = new Set(inputsOf(await esbuild.build({ ...common,
    entryPoints: [{ in: 'index.js', out: 'index.min' }], plugins: [onDemand()] })));
  const used = new Map();
  for (const module of Object.keys(ON_DEMAND)) {
    for (const [from, names] of await namesFromEntry(module, entryModules)) {
      used.set(from, new Set([...(used.get(from) ?? []), ...names]));
    }
  }
  for (const [module, file] of Object.entries(ON_DEMAND)) {
    add(file, await esbuild.build({ ...common,
      entryPoints: [{ in: module, out: file.replace(/\.js$/, '') }],
      plugins: [onDemand(module), fromEntry(used)] }));
  }
  const shared = [...used.keys()].sort();
  const namesOfShared = (m, i) => [...used.get(m)].sort().map((name, j) => [name, `m${i}_${j}`]);
  add(ENTRY, await esbuild.build({ ...common,
    stdin: {
      resolveDir: WEB,
      sourcefile: 'index.min.js (entry)',
      contents: "export * from './index.js';\nexport { default } from './index.js';\n" +
        shared.map((m, i) => `import { ${namesOfShared(m, i).map(([name, local]) =>
          `${name} as ${local}`).join(', ')} } from './${m}';\n`).join('') +
        `export const ${ENTRY_MODULES} = {\n${shared.map((m, i) => `  ${JSON.stringify(m)}: { ` +
          `${namesOfShared(m, i).map(([name, local]) => `${name}: ${local}`).join(', ')} },\n`).join('')}};\n`,
    },
    outfile: path.join(WEB, 'dist', ENTRY),
    outdir: undefined,
    plugins: [onDemand()] }));
  // The attention entry: a file of its own, sharing nothing with the main
  // entry (a page loads one of them).
  add('attention.min.js', await esbuild.build({ ...common,
    entryPoints: [{ in: 'attention.js', out: 'attention.min' }], plugins: [onDemand()] }));
  add('pool-worker.js', await esbuild.build({ ...common,
    entryPoints: [{ in: 'src/pool-worker.js', out: 'pool-worker' }] }));
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
