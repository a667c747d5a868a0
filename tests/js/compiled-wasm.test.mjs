// The .wasm compiled once for several contexts: compileForWorkers compiles
// what a worker's createAttentionModule(options) of one thread would load
// (createAttentionPool does so and sends it to its workers), and a context
// handed a compiled .wasm (useCompiledWasm) instantiates it instead of
// reading and compiling the file again.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { compileForWorkers, useCompiledWasm } from '../../web/src/loader.js';
import { expectMatchesGolden, loadGoldenCase, mhaArguments } from './support/golden.mjs';
import { createAttentionModule, track } from './support/modules.mjs';

const isModule = (m) => Object.prototype.toString.call(m) === '[object WebAssembly.Module]';

test.each([
  [{ relaxedSimd: true }, 'simd_attention_relaxed.wasm'],
  [{ simd: true, relaxedSimd: false }, 'simd_attention_simd.wasm'],
  [{ simd: false }, 'simd_attention_nosimd.wasm'],
  [{ backend: 'scalar' }, 'simd_attention_nosimd.wasm'],
])('compileForWorkers(%j) compiles %s', async (options, file) => {
  const compiled = await compileForWorkers({ ...options, threads: 1 });
  expect(compiled.file).toBe(file);
  expect(isModule(compiled.module)).toBe(true);
});

test('compileForWorkers leaves what fails to the workers, which name it', async () => {
  expect(await compileForWorkers({ simd: false, relaxedSimd: true, threads: 1 })).toBeUndefined();
  const missing = path.join(os.tmpdir(), 'simd-attention-no-such-folder');
  expect(await compileForWorkers({ threads: 1, wasmPath: missing })).toBeUndefined();
});

test('a module instantiates a handed-over .wasm without reading its file', async () => {
  const { file, module } = await compileForWorkers({ simd: true, relaxedSimd: false, threads: 1 });
  // A wasmPath without the file: only the handed-over module can load.
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'simd-attention-compiled-'));
  try {
    await expect(createAttentionModule({ simd: true, relaxedSimd: false, threads: 1,
      wasmPath: empty })).rejects.toThrow(/^createAttentionModule: cannot read the wasm file/);
    useCompiledWasm(file, module);
    const sa = await createAttentionModule({ simd: true, relaxedSimd: false, threads: 1,
      wasmPath: empty });
    expect(sa.build).toBe('simd');
    const c = loadGoldenCase('cross_basic');
    const a = mhaArguments(c);
    const mha = track(new sa.MultiHeadAttention(a.config));
    mha.setWeights(a.weights);
    expectMatchesGolden(mha.forward(a.query, a.key, a.value,
      { ...a.options, returnAttnWeights: true }), c);
  } finally {
    fs.rmSync(empty, { recursive: true });
  }
});
