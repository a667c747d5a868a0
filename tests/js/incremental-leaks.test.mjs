// No leaks in the layer and incremental-decoding APIs: malloc'ed bytes, heap
// size and Embind handles stay flat over create/dispose cycles of caches,
// precomputed K/V and layers, over decoding loops, and over failing calls.
// Nothing here relies on garbage collection.
import { loadGoldenCase } from './support/golden.mjs';
import { decoderArguments, encoderArguments, sliceTokens } from './support/layers.mjs';
import { loadBuilds } from './support/modules.mjs';

const builds = await loadBuilds();
const enc = encoderArguments(loadGoldenCase('encoder_layer_small'));
const dec = decoderArguments(loadGoldenCase('decoder_layer_small'));
const N = 1000;

function snapshot(module) {
  const { heapBytes, allocatedBytes, jsHandles } = module.memoryStats();
  return { heapBytes, allocatedBytes, jsHandles };
}

// Runs cycle(i) twice to reach steady state, then N times; the heap must
// not move.
function expectFlat(module, cycle, n = N) {
  cycle(0);
  cycle(1);
  const before = snapshot(module);
  for (let i = 0; i < n; i++) cycle(i);
  expect(snapshot(module)).toEqual(before);
}

describe.each(Object.keys(builds))('%s build', (build) => {
  const module = builds[build];

  test(`${N} cache create / append / keys / truncate / dispose cycles`, () => {
    const mha = new module.MultiHeadAttention({ dModel: 32, numHeads: 4 });
    try {
      mha.setWeights(dec.weights.selfAttention);
      const step = sliceTokens(dec.input, 0, 1);
      expectFlat(module, () => {
        const cache = mha.createKVCache({ batch: 2, maxLength: 8 });
        mha.forwardIncremental(step, cache, { returnAttnWeights: true, returnIntermediates: true });
        mha.forwardIncremental(step, cache);
        const copy = mha.createKVCache({ batch: 2, maxLength: 8 });
        copy.append(cache.keys(), cache.values());
        copy.truncate(1);
        copy.reset();
        copy.dispose();
        cache.dispose();
      });
    } finally {
      mha.dispose();
    }
  });

  test(`${N} precompute / forward / dispose cycles`, () => {
    const mha = new module.MultiHeadAttention({ dModel: 32, numHeads: 4 });
    try {
      mha.setWeights(dec.weights.crossAttention);
      const mask = new Uint8Array(14).fill(1);
      expectFlat(module, () => {
        const kv = mha.precomputeKeyValue(dec.memory, { keyPaddingMask: mask });
        mha.forward(dec.input, kv, undefined, { returnPerHeadOutput: true, returnIntermediates: true });
        kv.dispose();
      });
    } finally {
      mha.dispose();
    }
  });

  test(`${N / 4} encoder and decoder layer create / setWeights / forward / dispose cycles`, () => {
    expectFlat(module, () => {
      const e = new module.TransformerEncoderLayer(enc.config);
      e.setWeights(enc.weights);
      e.forward(enc.input, { causal: true });
      e.dispose();
      const d = new module.TransformerDecoderLayer(dec.config);
      d.setWeights(dec.weights);
      d.forward(dec.input, dec.memory);
      const memory = d.precomputeMemory(dec.memory);
      const cache = d.createKVCache({ batch: 2, maxLength: 5 });
      for (let i = 0; i < 5; i++) {
        d.forwardIncremental(sliceTokens(dec.input, i, i + 1), cache, memory);
      }
      cache.reset();
      // A memory tensor: projected into a temporary, freed by the call.
      d.forwardIncremental(sliceTokens(dec.input, 0, 1), cache, dec.memory);
      cache.dispose();
      memory.dispose();
      d.dispose();
    }, N / 4);
  });

  test(`${N / 2} failing calls of every kind`, () => {
    const d = new module.TransformerDecoderLayer(dec.config);
    const mha = new module.MultiHeadAttention({ dModel: 32, numHeads: 4 });
    try {
      d.setWeights(dec.weights);
      mha.setWeights(dec.weights.selfAttention);
      const memory = d.precomputeMemory(dec.memory);
      const cache = d.createKVCache({ batch: 2, maxLength: 1 });
      d.forwardIncremental(sliceTokens(dec.input, 0, 1), cache, memory);
      const disposed = mha.createKVCache({ batch: 2, maxLength: 1 });
      disposed.dispose();
      const badFfn = { ...dec.weights, ffn: { ...dec.weights.ffn, w2: new Float32Array(3) } };
      const step = sliceTokens(dec.input, 1, 2);
      expectFlat(module, () => {
        expect(() => d.forwardIncremental(step, cache, memory)).toThrow('KV cache full');
        expect(() => d.forwardIncremental(step, cache, dec.memory)).toThrow('KV cache full');
        expect(() => mha.forwardIncremental(step, cache)).toThrow('KV cache full');
        expect(() => cache.append(cache.keys(), cache.values())).toThrow('KV cache full');
        expect(() => mha.forwardIncremental(step, disposed)).toThrow('disposed');
        expect(() => d.setWeights(badFfn)).toThrow('ffn.w2');
        expect(() => mha.createKVCache({ batch: 0, maxLength: 1 })).toThrow('batch');
        expect(() => mha.precomputeKeyValue(dec.memory, { keyPaddingMask: new Uint8Array(1) }))
          .toThrow('keyPaddingMask');
        expect(() => new module.TransformerEncoderLayer({ ...enc.config, numHeads: 5 }))
          .toThrow('numHeads');
      }, N / 2);
      expect(cache.length).toBe(1);
      cache.dispose();
      memory.dispose();
    } finally {
      d.dispose();
      mha.dispose();
    }
  });
});
