// The threaded builds: the golden cases and larger calls (which the cost
// models do split) on 1, 2 and 4 threads, bit-identical to the single-thread
// build of the same kind; the module in use before its workers run and
// threadsReady; the default count; the thread count rules;
// module.dispose(); where threads are impossible, the fallback and its
// reason; the bound on the count; and a Node process that ends on its own,
// whatever its module type.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { expectMatchesGolden, goldenCaseNames, loadGoldenCase, mhaArguments, webDir }
  from './support/golden.mjs';
import { decoderArguments, encoderArguments, randomFloats } from './support/layers.mjs';
import { createAttentionModule, track } from './support/modules.mjs';

// Per kind of build: the single-thread module and threaded ones of 2 and 4
// threads. Objects with threads: 1 on the 4-thread module make the third
// count of the threaded build.
const KINDS = { simd: { relaxedSimd: false }, 'relaxed-simd': { relaxedSimd: true } };
const modules = {};
for (const [build, flags] of Object.entries(KINDS)) {
  // With all their threads running (below: before they do).
  const [one, two, four] = await Promise.all([1, 2, 4].map(async (threads) => {
    const module = await createAttentionModule({ ...flags, threads });
    await module.threadsReady;
    return module;
  }));
  modules[build] = { one, two, four };
}
afterAll(() => {
  for (const m of Object.values(modules)) for (const module of Object.values(m)) module.dispose();
});

// [label, module, object threads] for each threaded run of one kind.
const runs = (m) => [['1 thread', m.four, 1], ['2 threads', m.two, 0], ['4 threads', m.four, 0]];

// Exact equality of every output array: the splits never change the order
// of any sum.
function expectIdentical(got, want) {
  expect(Object.keys(got).sort()).toEqual(Object.keys(want).sort());
  for (const key of Object.keys(want)) {
    expect(got[key].shape).toEqual(want[key].shape);
    const i = got[key].data.findIndex((v, j) => !Object.is(v, want[key].data[j]));
    if (i !== -1) {
      throw new Error(`${key}[${i}]: ${got[key].data[i]}, single-thread build ` +
        `${want[key].data[i]}`);
    }
  }
}

test('the threaded builds load with their threads and the highway backend only', () => {
  for (const [build, m] of Object.entries(modules)) {
    expect([m.one.threads, m.two.threads, m.four.threads]).toEqual([1, 2, 4]);
    for (const module of [m.one, m.two, m.four]) {
      expect(module.build).toBe(build);
      expect(module.threadsUnavailable).toBeUndefined();
    }
    expect(m.two.backends).toEqual(['highway']);
    expect(m.one.backends).toEqual(build === 'simd' ? ['highway', 'xsimd'] : ['highway']);
  }
});

function forwardMha(module, threads, a) {
  const mha = track(new module.MultiHeadAttention({ ...a.config, threads }));
  expect(mha.config.threads).toBe(threads || module.threads);
  mha.setWeights(a.weights);
  return mha.forward(a.query, a.key, a.value, {
    ...a.options, returnAttnWeights: true, returnPerHeadOutput: true,
  });
}

// An S2-sized self-attention (T = 128, d_model = 768, 12 heads), large
// enough for every split to run on several threads.
function largeMha(causal) {
  const d = 768, t = 128, r = (n, seed) => randomFloats(n, seed, 0.05);
  return {
    config: { dModel: d, numHeads: 12 },
    weights: { wQ: r(d * d, 1), wK: r(d * d, 2), wV: r(d * d, 3), wO: r(d * d, 4),
      bQ: r(d, 5), bK: r(d, 6), bV: r(d, 7), bO: r(d, 8) },
    query: { data: randomFloats(t * d, 9), shape: [1, t, d] },
    options: { causal },
  };
}

const mhaCases = goldenCaseNames('mha').map(loadGoldenCase);

describe.each(Object.keys(KINDS))('%s', (build) => {
  const m = modules[build];

  describe.each(runs(m))('%s', (_, module, threads) => {
    test.each(mhaCases.map((c) => [c.name, c]))('golden %s', (__, c) => {
      const a = mhaArguments(c);
      const got = forwardMha(module, threads, a);
      expectIdentical(got, forwardMha(m.one, 0, a));
      expectMatchesGolden(got, c);
    });

    test.each([['causal', true], ['not causal', false]])('S2-sized, %s', (__, causal) => {
      const a = largeMha(causal);
      expectIdentical(forwardMha(module, threads, a), forwardMha(m.one, 0, a));
    });

    test('golden encoder and decoder layers', () => {
      const layer = (mod, Class, args) => {
        const l = track(new mod[Class]({ ...args.config, threads }));
        l.setWeights(args.weights);
        return l;
      };
      for (const c of goldenCaseNames('encoder_layer').map(loadGoldenCase)) {
        const a = encoderArguments(c);
        const got = layer(module, 'TransformerEncoderLayer', a).forward(a.input);
        expectIdentical({ got }, { got: layer(m.one, 'TransformerEncoderLayer', a).forward(a.input) });
      }
      for (const c of goldenCaseNames('decoder_layer').map(loadGoldenCase)) {
        const a = decoderArguments(c);
        const got = layer(module, 'TransformerDecoderLayer', a).forward(a.input, a.memory);
        const want = layer(m.one, 'TransformerDecoderLayer', a).forward(a.input, a.memory);
        expectIdentical({ got }, { got: want });
      }
    });
  });

  test('attention() runs on the module\'s threads', () => {
    const shape = [2, 8, 256, 64], n = shape.reduce((x, y) => x * y);
    const [q, k, v] = [1, 2, 3].map((s) => ({ data: randomFloats(n, s), shape }));
    const options = { causal: 'top-left', returnAttnWeights: true };
    const want = m.one.attention(q, k, v, options);
    for (const module of [m.two, m.four]) expectIdentical(module.attention(q, k, v, options), want);
  });
});

// createAttentionModule resolves once its own instance is ready; its
// workers start and load after, each then running a thread, and
// module.threadsReady resolves once all do. Calls made in the meantime run
// on the threads that run (the caller alone at first), with the same bits.
describe.each(Object.entries(KINDS))('%s, in use before its workers run', (build, flags) => {
  test('forwards before and after threadsReady give the one-thread bits', async () => {
    const module = await createAttentionModule({ ...flags, threads: 4 });
    try {
      let ready = false;
      module.threadsReady.then(() => { ready = true; });
      const a = largeMha(true);
      const want = forwardMha(modules[build].one, 0, a);
      expectIdentical(forwardMha(module, 0, a), want);
      // The workers report only in later tasks of this thread.
      await Promise.resolve();
      await Promise.resolve();
      expect(ready).toBe(false);
      await module.threadsReady;
      expectIdentical(forwardMha(module, 0, a), want);
    } finally {
      module.dispose();
    }
  });

  test('dispose() before any worker has loaded', async () => {
    const module = await createAttentionModule({ ...flags, threads: 4 });
    const mha = new module.MultiHeadAttention({ dModel: 8, numHeads: 2 });
    module.dispose();
    expect(mha.disposed).toBe(true);
    await module.threadsReady; // resolves with the dispose
    // Workers that load after it start no thread: the module runs on one.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(track(new module.MultiHeadAttention({ dModel: 8, numHeads: 2 })).config.threads)
      .toBe(1);
  });
});

test('a module of one thread is ready at once', async () => {
  await expect(modules.simd.one.threadsReady).resolves.toBeUndefined();
});

// The physical cores of this machine, from each logical processor's
// (package, core) pair in sysfs (Linux; else every logical processor).
function physicalCores() {
  const processors = os.availableParallelism();
  const cores = new Set();
  try {
    for (let cpu = 0; cpu < processors; cpu++) {
      const dir = `/sys/devices/system/cpu/cpu${cpu}/topology`;
      cores.add(`${fs.readFileSync(`${dir}/physical_package_id`, 'utf8').trim()}/` +
        fs.readFileSync(`${dir}/core_id`, 'utf8').trim());
    }
  } catch {
    return processors;
  }
  return cores.size;
}

test('the default thread count is the physical cores, at most 16, and 0 means it', async () => {
  const expected = Math.min(16, physicalCores());
  const [byDefault, zero] = await Promise.all([createAttentionModule(),
    createAttentionModule({ threads: 0 })]);
  expect([byDefault.threads, zero.threads]).toEqual([expected, expected]);
  expect(track(new byDefault.MultiHeadAttention({ dModel: 8, numHeads: 2 })).config.threads)
    .toBe(expected);
});

test('an object runs on 1 or the module\'s threads', () => {
  const { four } = modules.simd;
  expect(() => new four.MultiHeadAttention({ dModel: 8, numHeads: 2, threads: 2 })).toThrow(
    new RangeError('MultiHeadAttention: threads: this wasm module runs 4 threads (its workers ' +
      'are started with it), so an object runs on 1 or 4, got 2'));
  expect(() => new four.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8, threads: 8 }))
    .toThrow(/^TransformerEncoderLayer: threads: this wasm module runs 4 threads .* got 8$/);
});

test.each(['xsimd', 'scalar'])('backend %s is refused', (backend) => {
  expect(() => new modules.simd.two.MultiHeadAttention({ dModel: 8, numHeads: 2, backend }))
    .toThrow(new RangeError(`MultiHeadAttention: backend '${backend}' is not compiled into ` +
      'this build (the threaded wasm builds carry only the highway backend)'));
});

test('a module backend only the single-thread builds have picks one thread, or fails with threads', async () => {
  const module = await createAttentionModule({ backend: 'xsimd', relaxedSimd: false });
  expect([module.threads, module.backend, module.threadsUnavailable]).toEqual([1, 'xsimd',
    'the threaded builds carry only the highway backend, and options.backend is "xsimd"']);
  await expect(createAttentionModule({ backend: 'xsimd', relaxedSimd: false, threads: 2 }))
    .rejects.toThrow(new RangeError("createAttentionModule: backend 'xsimd' is not compiled " +
      'into this build (the threaded wasm builds carry only the highway backend)'));
  // scalar is the non-SIMD build's, which has no threaded variant.
  const scalar = await createAttentionModule({ backend: 'scalar' });
  expect([scalar.threads, scalar.build, scalar.threadsUnavailable]).toEqual([1, 'nosimd',
    'the threaded builds carry only the highway backend, and options.backend is "scalar"']);
  await expect(createAttentionModule({ backend: 'scalar', threads: 2 })).rejects.toThrow(
    new Error('createAttentionModule: options.threads: 2 threads need a threaded build, which ' +
      'cannot run here: the threaded builds carry only the highway backend, and ' +
      'options.backend is "scalar"'));
});

test('dispose() disposes the objects and ends the workers; the module then runs on one thread', async () => {
  const module = await createAttentionModule({ relaxedSimd: false, threads: 2 });
  const mha = new module.MultiHeadAttention({ dModel: 8, numHeads: 2 });
  expect(mha.config.threads).toBe(2);
  module.dispose();
  expect(mha.disposed).toBe(true);
  module.dispose(); // twice is fine
  expect(track(new module.MultiHeadAttention({ dModel: 8, numHeads: 2 })).config.threads).toBe(1);
  expect(() => new module.MultiHeadAttention({ dModel: 8, numHeads: 2, threads: 2 })).toThrow(
    /^MultiHeadAttention: threads: this wasm module runs 1 thread .* got 2$/);
});

describe('where threads are impossible', () => {
  const isolated = Object.getOwnPropertyDescriptor(globalThis, 'crossOriginIsolated');
  const reason = 'the page is not cross-origin isolated: serve it with COOP: same-origin and ' +
    'COEP: require-corp (Cross-Origin-Opener-Policy and Cross-Origin-Embedder-Policy ' +
    'headers), which SharedArrayBuffer needs';
  beforeEach(() => { globalThis.crossOriginIsolated = false; });
  afterEach(() => {
    delete globalThis.crossOriginIsolated;
    if (isolated) Object.defineProperty(globalThis, 'crossOriginIsolated', isolated);
  });

  test('the default falls back to the single-thread build and says why', async () => {
    const module = await createAttentionModule();
    expect([module.build, module.threads, module.threadsUnavailable])
      .toEqual(['relaxed-simd', 1, reason]);
    module.dispose();
  });

  test('threads given explicitly reject with the reason', async () => {
    await expect(createAttentionModule({ threads: 2 })).rejects.toThrow(new Error(
      `createAttentionModule: options.threads: 2 threads need a threaded build, which ` +
      `cannot run here: ${reason}`));
  });

  test('threads: 1 is the single-thread build, with nothing to explain', async () => {
    const module = await createAttentionModule({ threads: 1 });
    expect([module.threads, module.threadsUnavailable]).toEqual([1, undefined]);
  });
});

test('the non-SIMD build has no threaded variant', async () => {
  const module = await createAttentionModule({ simd: false });
  expect(module.threads).toBe(1);
  expect(module.threadsUnavailable).toBe('the threaded builds need WebAssembly SIMD, and the ' +
    'non-SIMD build was chosen');
  await expect(createAttentionModule({ simd: false, threads: 2 })).rejects.toThrow(
    /^createAttentionModule: options.threads: 2 threads need a threaded build, which cannot run here: the threaded builds need WebAssembly SIMD/);
});

test('options.threads is a non-negative integer (JS types only)', async () => {
  await expect(createAttentionModule({ threads: '2' })).rejects.toThrow(new TypeError(
    'createAttentionModule: options.threads: expected an integer, got "2"'));
  await expect(createAttentionModule({ threads: 1.5 })).rejects.toThrow(new RangeError(
    'createAttentionModule: options.threads: expected a non-negative integer, got 1.5'));
});

test('options.threads is at most 4 per logical processor: more rejects at once', async () => {
  const processors = globalThis.navigator?.hardwareConcurrency ?? os.availableParallelism();
  const most = 4 * processors;
  // 1e6 threads used to abort Node with a fatal out-of-memory after 42 s,
  // 2000 to grow 550 MB/s: the bound is checked before any worker starts.
  for (const threads of [most + 1, 2000, 1e6]) {
    const started = performance.now();
    await expect(createAttentionModule({ threads, relaxedSimd: false })).rejects.toThrow(
      new RangeError(`createAttentionModule: options.threads: expected an integer from 0 to ` +
        `${most} (4 per logical processor; this machine has ${processors}), got ${threads}`));
    expect(performance.now() - started).toBeLessThan(1000);
  }
  // For every build, the training build's one thread included.
  await expect(createAttentionModule({ threads: 1e6, training: true })).rejects.toThrow(
    /^createAttentionModule: options.threads: expected an integer from 0 to \d+ .* got 1000000$/);
});

test('a threaded module whose .wasm is missing rejects, and its workers end', async () => {
  const missing = path.join(webDir, 'no-such-folder');
  await expect(createAttentionModule({ threads: 2, relaxedSimd: false, wasmPath: missing }))
    .rejects.toThrow(`createAttentionModule: cannot read the wasm file ${missing}/` +
      'simd_attention_simd_threads.wasm (ENOENT)');
});

// A script that loads a threaded module and runs a forward; the process
// must end by itself, with or without dispose(), run from a file or as
// `node --input-type=module -e` (whose type the workers' own code takes).
const exitScript = (end) => `
  const { createAttentionModule } = await import(${JSON.stringify(path.join(webDir, 'index.js'))});
  const sa = await createAttentionModule({ threads: 2, relaxedSimd: false });
  const mha = new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, bias: false });
  const w = new Float32Array(64).fill(0.1);
  mha.setWeights({ wQ: w, wK: w, wV: w, wO: w });
  const y = mha.forward({ data: new Float32Array(40).fill(1), shape: [1, 5, 8] });
  ${end}
  console.log(sa.threads, y.output.data[0].toFixed(3));`;

function expectCleanExit(child) {
  expect({ status: child.status, signal: child.signal, stdout: child.stdout, stderr: child.stderr })
    .toEqual({ status: 0, signal: null, stdout: '2 0.640\n', stderr: '' });
}

test.each([['without dispose()', ''], ['with dispose()', 'sa.dispose();']])(
  'node exits on its own after using a threaded module, %s', (_, end) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'simd-attention-exit-'));
    const file = path.join(dir, 'use.mjs');
    fs.writeFileSync(file, exitScript(end));
    const child = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20000 });
    fs.rmSync(dir, { recursive: true });
    expectCleanExit(child);
  });

test('a threaded module in node --input-type=module -e', () => {
  // Its workers' code used require(), which such a script's workers lack:
  // "worker sent an error! ... require is not defined in ES module scope".
  const child = spawnSync(process.execPath,
    ['--input-type=module', '-e', exitScript('sa.dispose();')],
    { encoding: 'utf8', timeout: 20000 });
  expectCleanExit(child);
});
