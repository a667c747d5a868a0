// Sizes whose products wrap wasm32's 32-bit size_t or exceed its 2 GiB: each
// entry point refuses them with a RangeError naming the buffer, its factors
// and the bytes, before anything is allocated; nothing leaks, the heap does
// not grow for a request it cannot satisfy, and the module keeps working.
import { thrown } from './support/errors.mjs';
import { disposing, loadBuilds, withMha } from './support/modules.mjs';

const builds = await loadBuilds();

const rand = (n, seed = 1) => {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648 - 0.5;
  });
};
const tensor = (shape, seed) => ({ data: rand(shape.reduce((a, b) => a * b, 1), seed), shape });
function weights(dModel, { kDim = dModel, vDim = dModel } = {}) {
  const d = dModel;
  return { wQ: rand(d * d, 2), wK: rand(kDim * d, 3), wV: rand(vDim * d, 4), wO: rand(d * d, 5),
    bQ: rand(d, 6), bK: rand(d, 7), bV: rand(d, 8), bO: rand(d, 9) };
}

// fn() throws a RangeError whose message matches `pattern`; nothing is left
// allocated and the heap has not grown.
function expectRefused(module, fn, pattern) {
  const before = module.memoryStats();
  const error = thrown(fn);
  expect(error).toBeInstanceOf(RangeError);
  expect(error.message).toMatch(pattern);
  const after = module.memoryStats();
  expect(after.allocatedBytes).toBe(before.allocatedBytes);
  expect(after.jsHandles).toBe(before.jsHandles);
  expect(after.heapBytes).toBe(before.heapBytes);
  return error;
}

const WASM32 = 'exceeds the 2 GiB a wasm32 module can hold';

describe.each(Object.keys(builds))('%s build', (build) => {
  const module = builds[build];
  let mha;
  let x;
  let expected;
  beforeAll(() => {
    mha = new module.MultiHeadAttention({ dModel: 8, numHeads: 2 });
    mha.setWeights(weights(8));
    x = tensor([2, 5, 8], 10);
    expected = mha.forward(x).output.data;
  });
  afterAll(() => mha.dispose());
  // fn(attention): a MultiHeadAttention of `config` with weights for its
  // widths, disposed after.
  const withWeights = (config, fn) => withMha(module, config, (attention) => {
    attention.setWeights(weights(config.dModel, config));
    return fn(attention);
  });
  // The module and the object give the same answer as before.
  afterEach(() => {
    expect(mha.forward(x).output.data).toEqual(expected);
  });

  test.each([2 ** 29, 2 ** 29 + 1, 2 ** 32 - 1])('a KV cache of maxLength %d', (maxLength) => {
    expectRefused(module, () => mha.createKVCache({ batch: 1, maxLength }), new RegExp(
      '^MultiHeadAttention\\.createKVCache: KV cache keys: batch \\* maxLength \\* padded key ' +
      `row = 1 \\* ${maxLength} \\* \\d+ = \\d+ floats \\(\\d+(\\.\\d)? GiB\\) ${WASM32}$`));
    // A cache that fits still decodes.
    disposing(mha.createKVCache({ batch: 2, maxLength: 5 }), (cache) => {
      const step = mha.forwardIncremental(x, cache).output.data;
      expect(step.length).toBe(expected.length);
    });
  });

  test('a decoder layer KV cache of 16 GiB', () => {
    const layer = new module.TransformerDecoderLayer({ dModel: 512, numHeads: 8, ffnDim: 8 });
    disposing(layer, () => expectRefused(module,
      () => layer.createKVCache({ batch: 128, maxLength: 65536 }),
      new RegExp('^TransformerDecoderLayer\\.createKVCache: KV cache keys: batch \\* ' +
        'maxLength \\* padded key row = 128 \\* 65536 \\* 512 = 4294967296 floats ' +
        `\\(16 GiB\\) ${WASM32}$`)));
  });

  test.each([[65536, '4294967296', '16 GiB'], [1e9, '1000000000000000000', '3.46945 EiB']])(
    'dModel %d: weights that cannot exist', (dModel, floats, bytes) => {
      expectRefused(module, () => new module.MultiHeadAttention({ dModel, numHeads: 1 }),
        `MultiHeadAttention: wQ: dModel * (numHeads * headDim) = ${dModel} * ${dModel} = ${floats} floats ` +
        `(${bytes}) ${WASM32}`);
    });

  test('a stack of 10^9 layers', () => {
    const block = { dModel: 32, numHeads: 2, ffnDim: 64, sublayers: [{ mixer: 'self_attention' }] };
    expectRefused(module, () => new module.TransformerStack({ ...block, numLayers: 1e9 }),
      new RegExp('^TransformerStack: layers: numLayers = 1000000000 elements ' +
        `\\(\\d+(\\.\\d+)? GiB\\) ${WASM32}$`));
  });

  test('positionalEncoding(2, 2 ** 31)', () => {
    expectRefused(module, () => module.positionalEncoding(2, 2 ** 31),
      `positionalEncoding: output: t * dModel = 2 * 2147483648 = 4294967296 floats (16 GiB) ${WASM32}`);
  });

  test('keys of a cross-attention projected from 2^20 narrow tokens', () => {
    withWeights({ dModel: 2048, numHeads: 8, kDim: 1, vDim: 1 }, (wide) => {
      const memory = tensor([1, 2 ** 20, 1], 11);
      const query = tensor([1, 1, 2048], 12);
      expectRefused(module, () => wide.forward(query, memory), new RegExp(
        '^MultiHeadAttention\\.forward: projected keys and values: key\\.batch \\* key\\.tokens ' +
        '\\* padded key and value row = 1048576 \\* 4096 = 4294967296 floats \\(16 GiB\\) ' +
        `${WASM32}$`));
      expectRefused(module, () => wide.precomputeKeyValue(memory), new RegExp(
        '^MultiHeadAttention\\.precomputeKeyValue: precomputed keys: memory\\.batch \\* ' +
        'memory\\.tokens \\* padded key row = 1048576 \\* 2048 = 2147483648 floats \\(8 GiB\\) ' +
        `${WASM32}$`));
      const small = tensor([1, 3, 1], 13);
      expect(wide.forward(query, small).output.shape).toEqual([1, 1, 2048]);
    });
  });

  test('attention weights at T = 16384 with 16 heads, repeatedly', () => {
    withWeights({ dModel: 16, numHeads: 16 }, (m) => {
      const long = tensor([1, 16384, 16], 14);
      for (let i = 0; i < 3; i++) {
        expectRefused(module, () => m.forward(long, undefined, undefined,
          { returnAttnWeights: true }),
        'MultiHeadAttention.forward: attention weights: batch * numHeads * query tokens * key ' +
        'tokens = 1 * 16 * 16384 * 16384 = 4294967296 floats (16 GiB) ' + WASM32);
      }
      expect(m.forward(long).output.shape).toEqual([1, 16384, 16]);
    });
  });

  test('a request under 2 GiB that the heap cannot hold fails before the heap grows', () => {
    withWeights({ dModel: 1, numHeads: 1 }, (m) => {
      // [1, 1, 23170, 23170] floats: 88 KB below the 2 GiB maximum, more than is free.
      const t = 23170;
      const error = expectRefused(module, () => m.forward(tensor([1, t, 1], 15), undefined,
        undefined, { returnAttnWeights: true }), /^MultiHeadAttention\.forward: attention weights: .* = 536848900 floats \(1\.99992 GiB\) exceeds the 1\.99\d* GiB this module can still allocate \([\d.]+ [KM]iB of its 2 GiB are in use\)$/);
      expect(error.message).toContain('1 * 1 * 23170 * 23170');
    });
  });
});
