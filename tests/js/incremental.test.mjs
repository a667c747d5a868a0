// Incremental decoding: the KV cache of MultiHeadAttention and of the
// decoder layer, precomputed cross-attention keys/values. Token by token
// equals the full causal forward (golden self_causal and
// decoder_layer_small), on every backend of every build; prefix + truncate
// + continue equals the straight run; a cache exported with keys()/values()
// and appended to a new one continues identically; precomputed K/V equals
// direct cross-attention.
import { goldenCaseNames, loadGoldenCase, maxAbsDiff, mhaArguments } from './support/golden.mjs';
import { concatTokens, decoderArguments, randomFloats, sliceTokens } from './support/layers.mjs';
import { backendMatrix, loadBuilds, track } from './support/modules.mjs';

const builds = await loadBuilds();
const causalCase = loadGoldenCase('self_causal');
const decoderCase = loadGoldenCase('decoder_layer_small');
const crossCases = goldenCaseNames('mha').map(loadGoldenCase)
  .filter((c) => !c.config.self_attention && c.config.kdim === c.config.vdim);

const matrix = backendMatrix(builds);

function expectClose(name, actual, expected, tolerance) {
  const diff = maxAbsDiff(actual, expected);
  if (!(diff <= tolerance)) throw new Error(`${name}: differs by ${diff} > ${tolerance}`);
}

// self_causal's attention on `module`, ready to run.
function causalAttention(module, backend) {
  const a = mhaArguments(causalCase);
  const mha = track(new module.MultiHeadAttention({ ...a.config, backend }));
  mha.setWeights(a.weights);
  return { mha, x: a.query };
}

// The golden decoder layer on `module`, and a standalone MultiHeadAttention
// with the weights of one of its attentions (`part`: 'selfAttention' or
// 'crossAttention'), both ready to run.
function decoderAndAttention(module, part) {
  const a = decoderArguments(decoderCase);
  const layer = track(new module.TransformerDecoderLayer(a.config));
  layer.setWeights(a.weights);
  const attention = track(new module.MultiHeadAttention({ dModel: a.config.dModel,
    numHeads: a.config.numHeads }));
  attention.setWeights(a.weights[part]);
  return { a, layer, attention };
}

// Feeds x's tokens [start, end) in chunks of `step`; returns the outputs
// joined along the tokens.
function feed(mha, cache, x, start, end, step = 1, options) {
  const parts = [];
  for (let i = start; i < end; i += step) {
    const r = mha.forwardIncremental(sliceTokens(x, i, Math.min(end, i + step)), cache, options);
    parts.push(r.output);
  }
  return concatTokens(parts);
}

test('the golden folder has the cases this file needs', () => {
  expect(causalCase.config.causal).toBe(true);
  expect(decoderCase.kind).toBe('decoder_layer');
  expect(crossCases.length).toBeGreaterThanOrEqual(1);
});

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  test('self_causal token by token equals the golden causal forward, weights included', () => {
    const { mha, x } = causalAttention(module, backend);
    const t = x.shape[1];
    const cache = track(mha.createKVCache({ batch: 1, maxLength: t }));
    expect([cache.batch, cache.maxLength, cache.length]).toEqual([1, t, 0]);
    const heads = causalCase.config.num_heads;
    const golden = causalCase.tensors;
    for (let i = 0; i < t; i++) {
      const r = mha.forwardIncremental(sliceTokens(x, i, i + 1), cache,
        { returnAttnWeights: true, returnPerHeadOutput: true });
      expect(cache.length).toBe(i + 1);
      expect(r.output.shape).toEqual([1, 1, 64]);
      expect(r.attnWeights.shape).toEqual([1, heads, 1, i + 1]);
      expectClose(`output of token ${i}`, r.output.data,
        golden.output.data.subarray(i * 64, (i + 1) * 64), causalCase.tolerance);
      for (let h = 0; h < heads; h++) {
        const row = golden.attn_weights.data.subarray((h * t + i) * t, (h * t + i) * t + i + 1);
        expectClose(`weights of token ${i}, head ${h}`,
          r.attnWeights.data.subarray(h * (i + 1), (h + 1) * (i + 1)), row, causalCase.tolerance);
        expectClose(`per-head output of token ${i}, head ${h}`,
          r.perHeadOutput.data.subarray(h * 64, (h + 1) * 64),
          golden.per_head_output.data.subarray((h * t + i) * 64, (h * t + i + 1) * 64),
          causalCase.tolerance);
      }
    }
  });

  test('chunks of several tokens (a prompt, then steps) equal the golden forward', () => {
    const { mha, x } = causalAttention(module, backend);
    const cache = track(mha.createKVCache({ batch: 1, maxLength: 20 }));
    const prompt = feed(mha, cache, x, 0, 7, 7);
    const rest = feed(mha, cache, x, 7, 16, 3);
    expect(cache.length).toBe(16);
    expectClose('chunked', concatTokens([prompt, rest]).data, causalCase.tensors.output.data,
      causalCase.tolerance);
  });

  test('decoder_layer_small token by token equals the full forward and the golden output', () => {
    const a = decoderArguments(decoderCase);
    const layer = track(new module.TransformerDecoderLayer({ ...a.config, backend }));
    layer.setWeights(a.weights);
    const [batch, t] = a.input.shape;
    const full = layer.forward(a.input, a.memory);
    const memory = track(layer.precomputeMemory(a.memory));
    for (const [name, mem] of [['precomputed memory', memory], ['memory tensor', a.memory]]) {
      const cache = track(layer.createKVCache({ batch, maxLength: t }));
      const parts = [];
      for (let i = 0; i < t; i++) {
        const y = layer.forwardIncremental(sliceTokens(a.input, i, i + 1), cache, mem);
        expect(y.shape).toEqual([batch, 1, a.config.dModel]);
        parts.push(y);
      }
      expect(cache.length).toBe(t);
      const steps = concatTokens(parts).data;
      expectClose(`${name} vs golden`, steps, a.output.data, decoderCase.tolerance);
      expectClose(`${name} vs full forward`, steps, full.data, decoderCase.tolerance);
    }
  });
});

describe.each(Object.keys(builds))('%s build', (build) => {
  const module = builds[build];

  test('prefix + truncate + continue equals the straight run', () => {
    const { mha, x } = causalAttention(module, undefined);
    const straightCache = track(mha.createKVCache({ batch: 1, maxLength: 16 }));
    const straight = feed(mha, straightCache, x, 0, 16);
    const cache = track(mha.createKVCache({ batch: 1, maxLength: 16 }));
    feed(mha, cache, x, 0, 10);
    // A rejected draft: the last 4 tokens were different.
    const draft = { data: randomFloats(4 * 64, 3), shape: [1, 4, 64] };
    cache.truncate(6);
    mha.forwardIncremental(draft, cache);
    expect(cache.length).toBe(10);
    cache.truncate(6);
    expect(cache.length).toBe(6);
    const continued = feed(mha, cache, x, 6, 16);
    expect(continued.data).toEqual(straight.data.subarray(6 * 64));
    expect(cache.keys().data).toEqual(straightCache.keys().data);
    cache.reset();
    expect(cache.length).toBe(0);
    expect(feed(mha, cache, x, 0, 16).data).toEqual(straight.data);
  });

  test('a cache exported with keys()/values() and appended to a new one continues identically', () => {
    const { mha, x } = causalAttention(module, undefined);
    const original = track(mha.createKVCache({ batch: 1, maxLength: 16 }));
    feed(mha, original, x, 0, 9);
    const keys = original.keys();
    const values = original.values();
    expect(keys.shape).toEqual([1, 9, 64]);
    expect(values.shape).toEqual([1, 9, 64]);
    // Saved as plain numbers (e.g. JSON) and restored.
    const restoredKeys = { data: Float32Array.from([...keys.data]), shape: keys.shape };
    const restored = track(mha.createKVCache({ batch: 1, maxLength: 16 }));
    restored.append(restoredKeys, values);
    expect(restored.length).toBe(9);
    expect(restored.keys()).toEqual(keys);
    expect(restored.values()).toEqual(values);
    const a = feed(mha, original, x, 9, 16);
    const b = feed(mha, restored, x, 9, 16);
    expect(b.data).toEqual(a.data);
    expect(restored.values()).toEqual(original.values());
    // Appending in two parts, 2-D tensors (batch 1), equals one append.
    const parts = track(mha.createKVCache({ batch: 1, maxLength: 16 }));
    const two = (t, s, e) => ({ data: t.data.subarray(s * 64, e * 64), shape: [e - s, 64] });
    parts.append(two(keys, 0, 4), two(values, 0, 4));
    parts.append(two(keys, 4, 9), two(values, 4, 9));
    expect(parts.keys()).toEqual(keys);
  });

  test('keys()/values() hold the projections: K = x W_K + b_K, per token, heads side by side', () => {
    const a = mhaArguments(causalCase);
    const { mha, x } = causalAttention(module, undefined);
    const cache = track(mha.createKVCache({ batch: 1, maxLength: 4 }));
    mha.forwardIncremental(sliceTokens(x, 0, 2), cache);
    const k = cache.keys().data;
    for (let t = 0; t < 2; t++) {
      for (let o = 0; o < 64; o += 9) {
        let want = a.weights.bK[o];
        for (let i = 0; i < 64; i++) want += x.data[t * 64 + i] * a.weights.wK[i * 64 + o];
        expect(Math.abs(k[t * 64 + o] - want)).toBeLessThan(1e-4);
      }
    }
  });

  test('batched decoding with a key padding mask equals the masked causal forward', () => {
    const d = 24;
    const mha = track(new module.MultiHeadAttention({ dModel: d, numHeads: 3, headDimV: 5 }));
    const r = (n, s) => randomFloats(n, s, 0.4);
    mha.setWeights({ wQ: r(d * d, 1), wK: r(d * d, 2), wV: r(d * 15, 3), wO: r(15 * d, 4),
      bQ: r(d, 5), bK: r(d, 6), bV: r(15, 7), bO: r(d, 8) });
    const x = { data: r(3 * 6 * d, 9), shape: [3, 6, d] };
    const mask = new Uint8Array(18).fill(1);
    mask[1] = 0; // batch 0, token 1
    mask[6 + 4] = 0; // batch 1, token 4
    const full = mha.forward(x, undefined, undefined, { causal: true, keyPaddingMask: mask,
      returnAttnWeights: true });
    const cache = track(mha.createKVCache({ batch: 3, maxLength: 6 }));
    expect(cache.values().shape).toEqual([3, 0, 15]);
    const parts = [];
    for (let i = 0; i < 6; i++) {
      const m = new Uint8Array(3 * (i + 1));
      for (let b = 0; b < 3; b++) m.set(mask.subarray(b * 6, b * 6 + i + 1), b * (i + 1));
      parts.push(mha.forwardIncremental(sliceTokens(x, i, i + 1), cache,
        { keyPaddingMask: m }).output);
    }
    expectClose('masked', concatTokens(parts).data, full.output.data, 1e-5);
  });

  test.each(crossCases.map((c) => [c.name, c]))('precomputed K/V of %s equal direct cross-attention', (_, c) => {
    const a = mhaArguments(c);
    const mha = track(new module.MultiHeadAttention(a.config));
    mha.setWeights(a.weights);
    const memory = a.key; // keys and values of one memory
    const direct = mha.forward(a.query, memory, undefined,
      { returnAttnWeights: true, returnPerHeadOutput: true });
    const kv = track(mha.precomputeKeyValue(memory));
    expect([kv.batch, kv.tokens]).toEqual(memory.shape.slice(0, 2));
    const options = { returnAttnWeights: true, returnPerHeadOutput: true };
    for (let i = 0; i < 2; i++) { // reused
      const pre = mha.forward(a.query, kv, undefined, options);
      expect(pre.output.shape).toEqual(direct.output.shape);
      expect(pre.attnWeights.shape).toEqual(direct.attnWeights.shape);
      expectClose('output', pre.output.data, direct.output.data, 1e-6);
      expectClose('attnWeights', pre.attnWeights.data, direct.attnWeights.data, 1e-6);
      expectClose('perHeadOutput', pre.perHeadOutput.data, direct.perHeadOutput.data, 1e-6);
    }
    // With a padding mask: given at precompute time, or at forward time.
    const [b, s] = memory.shape;
    const mask = new Uint8Array(b * s).fill(1);
    mask[s - 1] = 0;
    mask[s] = 0;
    const masked = mha.forward(a.query, memory, undefined, { keyPaddingMask: mask });
    const kvMasked = track(mha.precomputeKeyValue(memory, { keyPaddingMask: mask }));
    expectClose('mask at precompute', mha.forward(a.query, kvMasked).output.data,
      masked.output.data, 1e-6);
    expectClose('mask at forward', mha.forward(a.query, kv, undefined, { keyPaddingMask: mask })
      .output.data, masked.output.data, 1e-6);
    // A 2-D query (batch 1) against a batch-1 memory.
    if (b === 1) {
      const q2 = { data: a.query.data, shape: a.query.shape.slice(1) };
      expect(mha.forward(q2, kv).output.shape).toEqual(a.query.shape.slice(1));
    }
  });

  test('the decoder layer accepts precomputed K/V of a standalone attention with its cross weights', () => {
    const { a, layer, attention: cross } = decoderAndAttention(module, 'crossAttention');
    const kv = track(cross.precomputeKeyValue(a.memory));
    expectClose('decoder with attention-made K/V', layer.forward(a.input, kv).data,
      a.output.data, decoderCase.tolerance);
  });

  test('a KV cache of the decoder layer and of a MultiHeadAttention of the same layout are interchangeable', () => {
    const { a, layer, attention: self } = decoderAndAttention(module, 'selfAttention');
    const cache = track(self.createKVCache({ batch: 2, maxLength: 5 }));
    const memory = track(layer.precomputeMemory(a.memory));
    const parts = [];
    for (let i = 0; i < 5; i++) {
      parts.push(layer.forwardIncremental(sliceTokens(a.input, i, i + 1), cache, memory));
    }
    expectClose('steps', concatTokens(parts).data, a.output.data, decoderCase.tolerance);
  });
});
