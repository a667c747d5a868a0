// Objects dropped without dispose() are freed when the garbage collector
// takes them: their wasm memory returns (the C++ heap back to its baseline)
// and the package warns once per kind. The test collects explicitly.
import { jest } from '@jest/globals';
import v8 from 'node:v8';
import vm from 'node:vm';
import { loadBuilds } from './support/modules.mjs';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

const builds = await loadBuilds();
const ones = (n) => new Float32Array(n).fill(0.01);
const mhaWeights = (d) => ({ wQ: ones(d * d), wK: ones(d * d), wV: ones(d * d), wO: ones(d * d),
  bQ: ones(d), bK: ones(d), bV: ones(d), bO: ones(d) });
const norm = (d) => ({ gamma: ones(d), beta: ones(d) });
const layerWeights = (d, f) => ({ attention: mhaWeights(d), selfAttention: mhaWeights(d),
  crossAttention: mhaWeights(d), ffn: { w1: ones(d * f), b1: ones(f), w2: ones(f * d), b2: ones(d) },
  norm1: norm(d), norm2: norm(d), norm3: norm(d) });

// Collects until the heap is back at `baseline` (finalizers run in later
// turns of the event loop), at most `rounds` times; returns what is left.
async function collectTo(module, baseline, rounds = 50) {
  let left;
  for (let i = 0; i < rounds; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 0));
    left = module.memoryStats().allocatedBytes - baseline;
    if (left === 0) break;
  }
  return left;
}

describe.each(Object.keys(builds))('%s build', (build) => {
  const module = builds[build];

  test('300 dropped attentions of dModel 256 are freed, with one warning', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      await collectTo(module, 0, 5);
      const baseline = module.memoryStats().allocatedBytes;
      dropAttentions(module, 300, 256);
      expect(module.memoryStats().allocatedBytes - baseline).toBeGreaterThan(300 * 4 * 256 * 256 * 4);
      expect(await collectTo(module, baseline)).toBe(0);
      const warnings = warn.mock.calls.filter(([m]) => String(m).includes('MultiHeadAttention'));
      expect(warnings.length).toBe(1);
      expect(warnings[0][0]).toMatch(/^simd-attention: a MultiHeadAttention was garbage-collected without dispose\(\)/);
    } finally {
      warn.mockRestore();
    }
  });

  test('1,200 dropped objects of every kind are freed', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      await collectTo(module, 0, 5);
      const baseline = module.memoryStats().allocatedBytes;
      dropEveryKind(module, 200);
      expect(await collectTo(module, baseline)).toBe(0);
      // A disposed object is not freed twice when it is collected later.
      new module.MultiHeadAttention({ dModel: 16, numHeads: 2 }).dispose();
      expect(await collectTo(module, baseline)).toBe(0);
    } finally {
      warn.mockRestore();
    }
  });
});

// Objects made and dropped in functions of their own, so that no stack slot
// of the test keeps the last one alive.
function dropAttentions(module, count, d) {
  const w = mhaWeights(d);
  for (let i = 0; i < count; i++) {
    new module.MultiHeadAttention({ dModel: d, numHeads: 8 }).setWeights(w);
  }
}

function dropEveryKind(module, rounds) {
  const d = 16;
  const memory = { data: ones(2 * 3 * d), shape: [2, 3, d] };
  for (let i = 0; i < rounds; i++) {
    const mha = new module.MultiHeadAttention({ dModel: d, numHeads: 2 });
    mha.setWeights(mhaWeights(d));
    mha.createKVCache({ batch: 2, maxLength: 64 });
    mha.precomputeKeyValue(memory);
    new module.TransformerEncoderLayer({ dModel: d, numHeads: 2, ffnDim: 32 })
      .setWeights((({ attention, ffn, norm1, norm2 }) => ({ attention, ffn, norm1, norm2 }))(
        layerWeights(d, 32)));
    const dec = new module.TransformerDecoderLayer({ dModel: d, numHeads: 2, ffnDim: 32 });
    dec.setWeights((({ selfAttention, crossAttention, ffn, norm1, norm2, norm3 }) => (
      { selfAttention, crossAttention, ffn, norm1, norm2, norm3 }))(layerWeights(d, 32)));
    dec.createKVCache({ batch: 1, maxLength: 8 });
  }
}
