// The loader: which build (relaxed SIMD, SIMD, neither) by feature detection
// and by force, where the .wasm comes from (the package's dist/ by default, a
// folder or URL given as wasmPath, over HTTP as in a browser), and results
// that are copies, not views onto the heap.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  expectMatchesGolden, goldenCaseNames, loadGoldenCase, mhaArguments, webDir,
} from './support/golden.mjs';
import {
  createAttentionModule, wasmRelaxedSimdSupported, wasmSimdSupported, withMha,
} from './support/modules.mjs';

const distDir = path.join(webDir, 'dist');
// Options that force each build, and its file.
// The single-thread builds: threads.test.mjs loads the threaded ones.
const BUILDS = [
  ['relaxed-simd', { relaxedSimd: true, threads: 1 }, 'simd_attention_relaxed.wasm'],
  ['simd', { relaxedSimd: false, threads: 1 }, 'simd_attention_simd.wasm'],
  ['nosimd', { simd: false }, 'simd_attention_nosimd.wasm'],
];

async function expectRejects(promise, Class, message) {
  const error = await promise.then(() => undefined, (e) => e);
  expect(error).toBeInstanceOf(Class);
  expect(error.message).toBe(message);
}
const c = loadGoldenCase(goldenCaseNames('mha').find((n) => !loadGoldenCase(n).config.self_attention));
const a = mhaArguments(c);

function expectGolden(module) {
  withMha(module, a.config, (mha) => {
    mha.setWeights(a.weights);
    expectMatchesGolden(mha.forward(a.query, a.key, a.value,
      { ...a.options, returnAttnWeights: true, returnPerHeadOutput: true }), c);
  });
}

// `npm run test:js` starts node with --experimental-wasm-relaxed-simd where
// the node needs it (scripts/node-wasm.sh), so relaxed SIMD is there.
test('this node has relaxed SIMD, so the relaxed-SIMD build loads by default', async () => {
  expect(wasmSimdSupported()).toBe(true);
  expect(wasmRelaxedSimdSupported()).toBe(true);
  const m = await createAttentionModule();
  expect(m.build).toBe('relaxed-simd');
  expect(m.simd).toBe(true);
  expect(m.backend).toBe('highway');
  expect(m.kernels).toMatch(/^highway:/);
  expect(Object.isFrozen(m.backends)).toBe(true);
  expectGolden(m);
  expect((await createAttentionModule({ simd: true })).build).toBe('relaxed-simd');
});

test('relaxedSimd: false loads the SIMD build, simd: false the non-SIMD build', async () => {
  const simd = await createAttentionModule({ relaxedSimd: false });
  expect([simd.build, simd.simd]).toEqual(['simd', true]);
  expectGolden(simd);
  const nosimd = await createAttentionModule({ simd: false });
  expect([nosimd.build, nosimd.simd]).toEqual(['nosimd', false]);
  expectGolden(nosimd);
});

test('relaxedSimd: true with simd: false is a contradiction', async () => {
  await expectRejects(createAttentionModule({ simd: false, relaxedSimd: true }), RangeError,
    'createAttentionModule: options.relaxedSimd: true asks for the relaxed-SIMD build, which ' +
    'needs WebAssembly SIMD, but options.simd is false; pass only one of them');
});

// An engine that lacks a feature, as the loader sees it: WebAssembly.validate
// refuses the probe modules that use it (relaxed SIMD: the relaxed_madd
// opcode 0xfd 0x85 0x02; SIMD: any 0xfd-prefixed opcode).
describe('engines without relaxed SIMD, or without SIMD', () => {
  const realValidate = WebAssembly.validate;
  const has = (bytes, pattern) => bytes.some((_, i) => pattern.every((b, j) => bytes[i + j] === b));
  function engineWithout(pattern) {
    WebAssembly.validate = (bytes) => !has(new Uint8Array(bytes), pattern) && realValidate(bytes);
  }
  afterEach(() => {
    WebAssembly.validate = realValidate;
  });

  test('without relaxed SIMD: the SIMD build by default, relaxedSimd: true rejects', async () => {
    engineWithout([0xfd, 0x85, 0x02]);
    expect([wasmSimdSupported(), wasmRelaxedSimdSupported()]).toEqual([true, false]);
    const m = await createAttentionModule();
    expect(m.build).toBe('simd');
    expectGolden(m);
    expect((await createAttentionModule({ simd: true })).build).toBe('simd');
    await expectRejects(createAttentionModule({ relaxedSimd: true }), Error,
      'createAttentionModule: options.relaxedSimd: true asks for the relaxed-SIMD build, but ' +
      'this engine does not support WebAssembly relaxed SIMD (Chrome/Edge 114+, Node 22+; ' +
      'Node 20 with --experimental-wasm-relaxed-simd); omit the option or pass false');
  });

  test('without SIMD: the non-SIMD build by default, simd: true rejects', async () => {
    engineWithout([0xfd]);
    expect([wasmSimdSupported(), wasmRelaxedSimdSupported()]).toEqual([false, false]);
    const m = await createAttentionModule();
    expect(m.build).toBe('nosimd');
    expectGolden(m);
    await expectRejects(createAttentionModule({ simd: true }), Error,
      'createAttentionModule: options.simd: true asks for the SIMD build, but this engine ' +
      'does not support WebAssembly SIMD; omit the option or pass false');
    await expectRejects(createAttentionModule({ relaxedSimd: true }), Error,
      'createAttentionModule: options.relaxedSimd: true asks for the relaxed-SIMD build, but ' +
      'this engine does not support WebAssembly relaxed SIMD (Chrome/Edge 114+, Node 22+; ' +
      'Node 20 with --experimental-wasm-relaxed-simd); omit the option or pass false');
  });
});

test('a build file that is not the build it is named after', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'simd-attention-mixed-'));
  try {
    fs.copyFileSync(path.join(distDir, 'simd_attention_simd.wasm'),
      path.join(dir, 'simd_attention_relaxed.wasm'));
    await expectRejects(createAttentionModule({ threads: 1, relaxedSimd: true, wasmPath: dir }), Error,
      'createAttentionModule: simd_attention_relaxed.wasm is the simd build, not the ' +
      'relaxed-simd build; the files in dist/ are mixed up');
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});

test('backend option sets the default backend of new objects', async () => {
  const m = await createAttentionModule({ backend: 'scalar' });
  expect(m.build).toBe('nosimd'); // the one build with the scalar backend
  expect(m.backend).toBe('scalar');
  expect(m.kernels).toBe('scalar');
  withMha(m, { dModel: 8, numHeads: 2 }, (mha) => expect(mha.config.backend).toBe('scalar'));
  withMha(m, { dModel: 8, numHeads: 2, backend: 'highway' },
    (mha) => expect(mha.kernels).toMatch(/^highway:/));
});

// Of the single-thread builds, the non-SIMD one alone has scalar and the
// SIMD one alone xsimd (the relaxed-SIMD build, which an engine with relaxed
// SIMD loads by default, leaves it out for size).
const NOT_COMPILED = 'is not compiled into this build (every wasm build carries the highway ' +
  'backend; only the SIMD build has xsimd, only the non-SIMD build has scalar)';

test('the xsimd backend loads the SIMD build', async () => {
  const m = await createAttentionModule({ backend: 'xsimd' });
  expect([m.build, m.backend, m.backends]).toEqual(['simd', 'xsimd', ['highway', 'xsimd']]);
  withMha(m, { dModel: 8, numHeads: 2 }, (mha) => expect(mha.kernels).toBe('xsimd:wasm'));
  expect((await createAttentionModule({ backend: 'xsimd', simd: true })).build).toBe('simd');
  const relaxed = await createAttentionModule({ relaxedSimd: true, threads: 1 });
  expect([relaxed.build, relaxed.backends]).toEqual(['relaxed-simd', ['highway']]);
  expect(() => new relaxed.MultiHeadAttention({ dModel: 8, numHeads: 2, backend: 'xsimd' }))
    .toThrow(new RangeError(`MultiHeadAttention: backend 'xsimd' ${NOT_COMPILED}`));
});

test('a backend the build asked for lacks is refused, naming the builds', async () => {
  await expectRejects(createAttentionModule({ backend: 'scalar', simd: true, relaxedSimd: false }),
    RangeError, `createAttentionModule: backend 'scalar' ${NOT_COMPILED}`);
  await expectRejects(createAttentionModule({ backend: 'xsimd', relaxedSimd: true }),
    RangeError, `createAttentionModule: backend 'xsimd' ${NOT_COMPILED}`);
  await expectRejects(createAttentionModule({ backend: 'xsimd', simd: false }),
    RangeError, `createAttentionModule: backend 'xsimd' ${NOT_COMPILED}`);
  const m = await createAttentionModule({ backend: 'xsimd' });
  expect(() => new m.MultiHeadAttention({ dModel: 8, numHeads: 2, backend: 'scalar' })).toThrow(
    new RangeError(`MultiHeadAttention: backend 'scalar' ${NOT_COMPILED}`));
});

test('modules are independent instances', async () => {
  const [m1, m2] = await Promise.all([createAttentionModule(), createAttentionModule()]);
  const mha = new m1.MultiHeadAttention(a.config);
  const before = m2.memoryStats().allocatedBytes;
  mha.setWeights(a.weights);
  expect(m2.memoryStats().allocatedBytes).toBe(before);
  mha.dispose();
});

describe('wasmPath', () => {
  test.each([
    ['an absolute folder path', () => distDir],
    ['a folder path with a trailing slash', () => `${distDir}/`],
    ['a path relative to the working directory', () => path.relative(process.cwd(), distDir) || '.'],
    ['a file: URL object', () => pathToFileURL(`${distDir}/`)],
    ['a file: URL string without a trailing slash', () => pathToFileURL(distDir).href],
  ])('%s', async (_, wasmPath) => {
    for (const [build, options] of BUILDS) {
      const m = await createAttentionModule({ ...options, wasmPath: wasmPath() });
      expect(m.build).toBe(build);
      expectGolden(m);
    }
  });

  test('a folder without the files', async () => {
    const missing = path.join(webDir, 'no-such-folder');
    await expectRejects(createAttentionModule({ threads: 1, wasmPath: missing }), Error,
      `createAttentionModule: cannot read the wasm file ${missing}/simd_attention_relaxed.wasm ` +
      '(ENOENT); build the package (npm run build) or set options.wasmPath');
  });

  test('a folder whose build files are not wasm', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'simd-attention-not-wasm-'));
    try {
      // A Git LFS pointer checked out instead of the file, and gzip bytes.
      const pointer = 'version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 189000\n';
      fs.writeFileSync(path.join(dir, 'simd_attention_relaxed.wasm'), pointer);
      fs.writeFileSync(path.join(dir, 'simd_attention_simd.wasm'),
        Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03]));
      await expectRejects(createAttentionModule({ threads: 1, relaxedSimd: true, wasmPath: dir }), Error,
        'createAttentionModule: simd_attention_relaxed.wasm is not WebAssembly: the file ' +
        `${dir}/simd_attention_relaxed.wasm holds ${pointer.length} bytes that start ` +
        '76 65 72 73 69 6f 6e 20 68 74 74 70 73 3a 2f 2f ("version https://"), where a wasm ' +
        'file starts 00 61 73 6d; set options.wasmPath to the folder (or URL prefix) that ' +
        "serves the .wasm files of the package's dist/, or rebuild them (npm run build)");
      await expectRejects(createAttentionModule({ threads: 1, relaxedSimd: false, wasmPath: dir }), Error,
        'createAttentionModule: simd_attention_simd.wasm is not WebAssembly: the file ' +
        `${dir}/simd_attention_simd.wasm holds 10 bytes that start ` +
        '1f 8b 08 00 00 00 00 00 00 03, where a wasm file starts 00 61 73 6d; set ' +
        'options.wasmPath to the folder (or URL prefix) that serves the .wasm files of ' +
        "the package's dist/, or rebuild them (npm run build)");
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  test('a .wasm file instead of a folder', async () => {
    await expectRejects(createAttentionModule({ wasmPath: `${distDir}/simd_attention_simd.wasm` }),
      TypeError, 'createAttentionModule: options.wasmPath: expected the folder (or URL ' +
      'prefix) that holds simd_attention_relaxed.wasm, simd_attention_simd.wasm, ' +
      'simd_attention_nosimd.wasm and simd_attention_training.wasm, got the file ' +
      `"${distDir}/simd_attention_simd.wasm"`);
  });
});

describe('over HTTP, as in a browser (fetch + instantiateStreaming)', () => {
  const INDEX_HTML = '<!DOCTYPE html>\n<html><head><title>App</title></head>' +
    '<body><div id="app"></div><script type="module" src="/main.js"></script></body></html>\n';
  let server;
  let base;
  const served = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url, 'http://x');
      served.push(url.pathname);
      const file = path.join(distDir, path.basename(url.pathname));
      // /app/ is a single-page app's host: every path it has no file for
      // is its index.html, with status 200; /typed/ says that is wasm.
      if (url.pathname.startsWith('/app/') || url.pathname.startsWith('/typed/')) {
        const type = url.pathname.startsWith('/app/')
          ? 'text/html; charset=utf-8' : 'application/wasm';
        res.writeHead(200, { 'Content-Type': type }).end(INDEX_HTML);
        return;
      }
      if (!url.pathname.startsWith('/wasm/') || !fs.existsSync(file)) {
        res.writeHead(404).end();
        return;
      }
      // /wasm/plain/ serves without the wasm MIME type: instantiateStreaming
      // refuses that and the loader falls back to compiling the bytes.
      const type = url.pathname.startsWith('/wasm/plain/')
        ? 'application/octet-stream' : 'application/wasm';
      res.writeHead(200, { 'Content-Type': type }).end(fs.readFileSync(file));
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${server.address().port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  test.each([['application/wasm', '/wasm/'], ['another MIME type', '/wasm/plain/']])(
    'served as %s', async (_, folder) => {
      for (const [build, options, file] of BUILDS) {
        const m = await createAttentionModule({ ...options, wasmPath: `${base}${folder}` });
        expect(m.build).toBe(build);
        expectGolden(m);
        expect(served.at(-1)).toBe(`${folder}${file}`);
      }
    });

  test('HTTP 404', async () => {
    await expectRejects(createAttentionModule({ threads: 1, wasmPath: `${base}/missing` }), Error,
      `createAttentionModule: fetching ${base}/missing/simd_attention_relaxed.wasm ` +
      'failed: HTTP 404; set options.wasmPath to where the .wasm files are served');
  });

  // Where a default load points once Vite's dependency optimizer has moved
  // the package into node_modules/.vite/deps/.
  test("HTTP 404 inside Vite's optimized dependencies", async () => {
    const url = `${base}/node_modules/.vite/dist/simd_attention_relaxed.wasm`;
    await expectRejects(createAttentionModule({ threads: 1, wasmPath: `${base}/node_modules/.vite/dist/` }),
      Error, `createAttentionModule: fetching ${url} failed: HTTP 404; set options.wasmPath ` +
      "to where the .wasm files are served, or with Vite's dev server, keep the package out " +
      "of its dependency optimizer instead: optimizeDeps: { exclude: ['simd-attention'] } in " +
      'vite.config');
  });

  test.each([
    ['as text/html', '/app/assets/', 'text/html; charset=utf-8'],
    ['as application/wasm', '/typed/', 'application/wasm'],
  ])('an HTML page served %s in place of the .wasm', async (_, folder, type) => {
    const url = `${base}${folder}simd_attention_simd.wasm`;
    await expectRejects(createAttentionModule({ threads: 1, relaxedSimd: false, wasmPath: `${base}${folder}` }),
      Error, 'createAttentionModule: simd_attention_simd.wasm is not WebAssembly: ' +
      `${url} answered HTTP 200 with content type ${type} and ${INDEX_HTML.length} bytes ` +
      'that start 3c 21 44 4f 43 54 59 50 45 20 68 74 6d 6c 3e 0a ("<!DOCTYPE html>\\n"), ' +
      'where a wasm file starts 00 61 73 6d; set options.wasmPath to the folder (or URL ' +
      "prefix) that serves the .wasm files of the package's dist/ (a single-page app's host " +
      "answers a file it does not have with its index.html); with Vite's dev server, keep " +
      "the package out of its dependency optimizer instead: optimizeDeps: { exclude: " +
      "['simd-attention'] } in vite.config");
    expect(served.at(-1)).toBe(`${folder}simd_attention_simd.wasm`);
  });
});

describe('results', () => {
  test('are fresh arrays that survive heap growth', async () => {
    const m = await createAttentionModule();
    withMha(m, a.config, (mha) => {
      mha.setWeights(a.weights);
      const first = mha.forward(a.query, a.key, a.value, { returnAttnWeights: true });
      const copy = first.output.data.slice();
      expect(first.output.data.byteOffset).toBe(0);
      expect(first.output.data.buffer.byteLength).toBe(first.output.data.byteLength);
      const heap = m.memoryStats().heapBytes;
      // Grow the heap: attention weights of [1, 2, 4096, 4096] take 128 MiB.
      withMha(m, { dModel: 8, numHeads: 2 }, (big) => {
        const w = new Float32Array(64).fill(0.1);
        big.setWeights({ wQ: w, wK: w, wV: w, wO: w, bQ: w.subarray(0, 8),
          bK: w.subarray(0, 8), bV: w.subarray(0, 8), bO: w.subarray(0, 8) });
        const t = 4096;
        const r = big.forward({ data: new Float32Array(t * 8).fill(1), shape: [t, 8] },
          undefined, undefined, { returnAttnWeights: true });
        expect(r.attnWeights.shape).toEqual([2, t, t]);
      });
      expect(m.memoryStats().heapBytes).toBeGreaterThan(heap);
      expect(first.output.data).toEqual(copy);
      expect(first.output.data.length).toBe(copy.length);
    });
  });

  test('of an unbatched query are unbatched', async () => {
    const m = await createAttentionModule();
    const cfg = { dModel: 8, numHeads: 2 };
    const w = new Float32Array(64).map((_, i) => Math.sin(i));
    const b = w.subarray(0, 8);
    withMha(m, cfg, (mha) => {
      mha.setWeights({ wQ: w, wK: w, wV: w, wO: w, bQ: b, bK: b, bV: b, bO: b });
      const x = new Float32Array(5 * 8).map((_, i) => Math.cos(i));
      const mem = new Float32Array(3 * 8).map((_, i) => Math.sin(3 * i));
      const opts = { returnAttnWeights: true, returnPerHeadOutput: true };
      const flat = mha.forward({ data: x, shape: [5, 8] }, { data: mem, shape: [3, 8] },
        undefined, opts);
      const batched = mha.forward({ data: x, shape: [1, 5, 8] }, { data: mem, shape: [1, 3, 8] },
        undefined, opts);
      expect(flat.output.shape).toEqual([5, 8]);
      expect(flat.attnWeights.shape).toEqual([2, 5, 3]);
      expect(flat.perHeadOutput.shape).toEqual([2, 5, 8]);
      expect(batched.output.shape).toEqual([1, 5, 8]);
      expect(batched.attnWeights.shape).toEqual([1, 2, 5, 3]);
      expect(flat.output.data).toEqual(batched.output.data);
      expect(flat.attnWeights.data).toEqual(batched.attnWeights.data);
    });
  });

  test('inputs are copied, not kept', async () => {
    const m = await createAttentionModule();
    withMha(m, a.config, (mha) => {
      const weights = Object.fromEntries(Object.entries(a.weights).map(([k, v]) => [k, v.slice()]));
      mha.setWeights(weights);
      for (const v of Object.values(weights)) v.fill(NaN);
      expectMatchesGolden(mha.forward(a.query, a.key, a.value, a.options), c);
    });
  });
});
