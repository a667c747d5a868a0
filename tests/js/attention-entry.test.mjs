// The attention entry (web/attention.js, `simd-attention/attention`): its
// module runs the builds that bind attention alone (dist/*_mha.wasm) where
// one fits its options, the main entry's builds elsewhere, and gives the
// same bits as the main entry's module in either case.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createAttentionModule as createAttentionEntryModule } from '../../web/attention.js';
import { expectMatchesGolden, goldenCaseNames, loadGoldenCase, mhaArguments, webDir }
  from './support/golden.mjs';
import { randomFloats } from './support/layers.mjs';
import { createAttentionModule, withMha } from './support/modules.mjs';
import { ggufQ4_0 } from './support/quantized-files.mjs';

const distDir = path.join(webDir, 'dist');
const made = [];
async function entryModule(options) {
  const m = await createAttentionEntryModule(options);
  made.push(m);
  return m;
}
afterAll(() => {
  for (const m of made.splice(0)) m.dispose();
});

// What the attention entry's module has: what every module has.
const MEMBERS = ['backend', 'build', 'threads', 'threadsUnavailable', 'threadsReady', 'simd',
  'backends', 'kernels', 'choices', 'MultiHeadAttention', 'positionalEncoding', 'layerNorm',
  'quantizeInt8', 'attention', 'memoryStats', 'dispose'];

const mhaCases = goldenCaseNames('mha').map(loadGoldenCase);

// Every output of `module` on the MHA golden cases, a decode through a KV
// cache, q4 weights given as blocks, attention() and the module functions: what the two entries'
// modules must agree on bit for bit.
function outputs(module) {
  const out = [];
  for (const c of mhaCases) {
    const a = mhaArguments(c);
    withMha(module, a.config, (mha) => {
      mha.setWeights(a.weights);
      const r = mha.forward(a.query, a.key, a.value,
        { ...a.options, returnAttnWeights: true, returnPerHeadOutput: true });
      expectMatchesGolden(r, c);
      out.push(r.output.data, r.attnWeights.data, r.perHeadOutput.data);
    });
  }
  const d = 32;
  const config = { dModel: d, numHeads: 4, numKvHeads: 2, bias: false, weights: 'int8',
    cacheType: 'f16' };
  const w = (seed, cols = d) => randomFloats(d * cols, seed);
  withMha(module, config, (mha) => {
    mha.setWeights({ wQ: w(1), wK: w(2, d / 2), wV: w(3, d / 2), wO: w(4) });
    const cache = mha.createKVCache({ batch: 1, maxLength: 8 });
    try {
      for (let t = 0; t < 5; t++) {
        const x = { data: randomFloats(d, 10 + t), shape: [1, 1, d] };
        out.push(mha.forwardIncremental(x, cache).output.data);
      }
    } finally {
      cache.dispose();
    }
  });
  // q4 weights given as their GGUF q4_0 blocks.
  withMha(module, { dModel: d, numHeads: 1, bias: false, weights: 'q4' }, (mha) => {
    const q4 = (seed) => ({ q4: ggufQ4_0(w(seed), d, d).bytes });
    mha.setWeights({ wQ: q4(6), wK: q4(7), wV: q4(8), wO: q4(9) });
    out.push(mha.forward({ data: randomFloats(3 * d, 23), shape: [1, 3, d] }).output.data);
  });
  const q = { data: randomFloats(2 * 3 * 5 * 8, 20), shape: [2, 3, 5, 8] };
  const k = { data: randomFloats(2 * 3 * 7 * 8, 21), shape: [2, 3, 7, 8] };
  const v = { data: randomFloats(2 * 3 * 7 * 8, 22), shape: [2, 3, 7, 8] };
  out.push(module.attention(q, k, v, { causal: 'bottom-right', softcap: 5 }).output.data);
  out.push(module.positionalEncoding(6, d).data);
  out.push(module.layerNorm({ data: randomFloats(3 * d, 30), shape: [3, d] },
    { gamma: randomFloats(d, 31), beta: randomFloats(d, 32) }).data);
  const q8 = module.quantizeInt8(w(5), d, d);
  out.push(q8.values, q8.scales);
  return out;
}

// A folder holding only the named files of dist/: a module that loads from
// it has loaded those.
function folderWith(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sa-attention-entry-'));
  for (const f of files) fs.copyFileSync(path.join(distDir, f), path.join(dir, f));
  return dir;
}

describe.each([
  ['relaxed-simd', { relaxedSimd: true }, 'simd_attention_relaxed'],
  ['simd', { relaxedSimd: false }, 'simd_attention_simd'],
])('the %s build', (build, force, file) => {
  test(`one thread loads ${file}_mha, which gives the main entry's bits`, async () => {
    const dir = folderWith([`${file}_mha.js`, `${file}_mha.wasm`]);
    try {
      const lean = await entryModule({ ...force, threads: 1, wasmPath: dir });
      expect([lean.build, lean.threads, lean.backend, lean.backends])
        .toEqual([build, 1, 'highway', ['highway']]);
      expect(Object.keys(lean).sort()).toEqual([...MEMBERS].sort());
      const main = await createAttentionModule({ ...force, threads: 1 });
      expect(outputs(lean)).toEqual(outputs(main));
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  test('its .wasm is a third smaller than the main build', () => {
    const size = (f) => fs.statSync(path.join(distDir, f)).size;
    expect(size(`${file}_mha.wasm`) / size(`${file}.wasm`)).toBeLessThan(0.75);
  });
});

// Where no build binding attention alone fits, the main entry's build runs.
test.each([
  ['no SIMD', { simd: false }, 'nosimd', 'highway'],
  ['the xsimd backend', { relaxedSimd: false, backend: 'xsimd', threads: 1 }, 'simd', 'xsimd'],
  ['the scalar backend', { backend: 'scalar' }, 'nosimd', 'scalar'],
  ['two threads', { threads: 2 }, 'relaxed-simd', 'highway'],
])('%s loads the main build', async (_, options, build, backend) => {
  const lean = await entryModule(options);
  expect([lean.build, lean.backend, lean.threads]).toEqual([build, backend, options.threads ?? 1]);
  expect(Object.keys(lean).sort()).toEqual([...MEMBERS].sort());
  const main = await createAttentionModule(options);
  await Promise.all([lean.threadsReady, main.threadsReady]);
  expect(outputs(lean)).toEqual(outputs(main));
});

test("the entry refuses the main entry's training option, naming the keys it takes", async () => {
  const error = await createAttentionEntryModule({ training: true }).catch((e) => e);
  expect(error).toBeInstanceOf(TypeError);
  expect(error.message).toMatch(/^createAttentionModule: options: unknown key 'training'/);
  expect(error.message).toContain('(expected backend, simd, relaxedSimd, threads, wasmPath)');
});

test('C++ judges the lean build as the main one: the same messages', async () => {
  const lean = await entryModule({ threads: 1 });
  const main = await createAttentionModule({ threads: 1 });
  const message = (m) => {
    try {
      withMha(m, { dModel: 30, numHeads: 4 }, () => {});
    } catch (e) {
      return [e.constructor.name, e.message];
    }
    return undefined;
  };
  expect(message(lean)).toBeDefined();
  expect(message(lean)).toEqual(message(main));
});
