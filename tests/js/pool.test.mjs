// createAttentionPool: the attention split by heads over 1, 2 and 3 workers
// gives the synchronous API's results (within 1e-6 of the output's scale,
// identical from run to run), through caches and precomputed K/V too, with
// its errors (partial outputs whose sum overflows float32 included),
// disposal, a killed worker and concurrent callers; layers, each
// whole in one worker, give the synchronous layers' results exactly.
import os from 'node:os';

import { rejection, thrown } from './support/errors.mjs';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff, mhaArguments } from './support/golden.mjs';
import { randomLayerWeights } from './support/layers.mjs';
import { createAttentionPool, track } from './support/modules.mjs';
import { simdModule, startPools } from './support/pools.mjs';
import { maxAbs, outputScale } from './support/scales.mjs';

const module = await simdModule();
const cases = goldenCaseNames('mha').map(loadGoldenCase);
const sizes = [1, 2, 3];
const pools = startPools(sizes);

function random(n, seed) {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648 - 0.5;
  });
}

function randomWeights({ dModel: d, numHeads: h, numKvHeads: kv = h }, seed) {
  const dk = d / h;
  return {
    wQ: random(d * h * dk, seed), wK: random(d * kv * dk, seed + 1),
    wV: random(d * kv * dk, seed + 2), wO: random(h * dk * d, seed + 3),
    bQ: random(h * dk, seed + 4), bK: random(kv * dk, seed + 5), bV: random(kv * dk, seed + 6),
    bO: random(d, seed + 7),
  };
}

// Every tensor of `actual` has the shape of `expected`'s and its values within
// 1e-6 of that tensor's scale.
function expectClose(actual, expected) {
  expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
  for (const [key, want] of Object.entries(expected)) {
    const got = actual[key];
    expect({ key, shape: got.shape }).toEqual({ key, shape: want.shape });
    const scale = key === 'output' ? outputScale(expected) : maxAbs(want.data);
    const worst = maxAbsDiff(got.data, want.data);
    if (!(worst <= 1e-6 * scale)) throw new Error(`${key}: differs by ${worst}, scale ${scale}`);
  }
}

// The same tensor, value for value (the pool's arrays come from another realm).
function expectSame(actual, expected) {
  expect(actual.shape).toEqual(expected.shape);
  expect(Array.from(actual.data)).toEqual(Array.from(expected.data));
}

async function expectRejects(promise, Class, message) {
  const error = await rejection(promise);
  expect(error.constructor).toBe(Class);
  expect(error.message).toBe(message);
}

test('the golden folder has mha cases', () => {
  expect(cases.length).toBeGreaterThanOrEqual(5);
});

describe.each(sizes)('pool of %i workers', (workers) => {
  test('reports its workers and build', () => {
    const pool = pools[workers];
    expect(pool.workers).toBe(workers);
    expect(pool.dead).toBe(false);
    expect(pool.build).toBe('simd');
    expect(pool.backends).toEqual(module.backends);
  });

  test.each(cases.map((c) => [c.name, c]))('%s: as the synchronous API, run to run', async (_, c) => {
    const a = mhaArguments(c);
    const options = { ...a.options, returnAttnWeights: true, returnPerHeadOutput: true,
      returnIntermediates: true };
    const sync = track(new module.MultiHeadAttention(a.config));
    sync.setWeights(a.weights);
    const expected = sync.forward(a.query, a.key, a.value, options);
    const mha = await pools[workers].MultiHeadAttention(a.config);
    try {
      expect(mha.config).toEqual(sync.config);
      await mha.setWeights(a.weights);
      const first = await mha.forward(a.query, a.key, a.value, options);
      expectClose(first, expected);
      const second = await mha.forward(a.query, a.key, a.value, options);
      for (const key of Object.keys(first)) expect(second[key].data).toEqual(first[key].data);
    } finally {
      await mha.dispose();
    }
  });

  test('5 heads, grouped-query heads and per-head masks', async () => {
    for (const config of [{ dModel: 10, numHeads: 5 }, { dModel: 12, numHeads: 6, numKvHeads: 3 }]) {
      const w = randomWeights(config, 11);
      const [B, T] = [2, 3];
      const x = { data: random(B * T * config.dModel, 3), shape: [B, T, config.dModel] };
      const options = { attnMask: random(B * config.numHeads * T * T, 5), returnAttnWeights: true,
        returnIntermediates: true };
      // A per-head mask narrower than the keys, query offsets, the scores
      // before the masks.
      const narrow = { attnMask: { data: random(B * config.numHeads * T * 2, 6),
        shape: [B, config.numHeads, T, 2] }, causal: true, queryOffset: [1, -1],
      returnScores: 'scaled' };
      const sync = track(new module.MultiHeadAttention(config));
      sync.setWeights(w);
      const mha = await pools[workers].MultiHeadAttention(config);
      await mha.setWeights(w);
      expectClose(await mha.forward(x, x, x, options), sync.forward(x, x, x, options));
      expectClose(await mha.forward(x, x, x, narrow), sync.forward(x, x, x, narrow));
      await mha.dispose();
    }
  });

  test('token by token through a sharded KV cache, and over precomputed K/V', async () => {
    const config = { dModel: 12, numHeads: 4 };
    const w = randomWeights(config, 21);
    const [B, T] = [2, 5];
    const sync = track(new module.MultiHeadAttention(config));
    sync.setWeights(w);
    const syncCache = track(sync.createKVCache({ batch: B, maxLength: T }));
    const mha = await pools[workers].MultiHeadAttention(config);
    await mha.setWeights(w);
    const cache = await mha.createKVCache({ batch: B, maxLength: T });
    expect([cache.batch, cache.maxLength, cache.length]).toEqual([B, T, 0]);
    for (let t = 0; t < T; ++t) {
      const x = { data: random(B * config.dModel, 100 + t), shape: [B, 1, config.dModel] };
      const options = { returnAttnWeights: true };
      expectClose(await mha.forwardIncremental(x, cache, options),
        sync.forwardIncremental(x, syncCache, options));
      expect(cache.length).toBe(t + 1);
    }
    expectClose({ k: await cache.keys(), v: await cache.values() },
      { k: syncCache.keys(), v: syncCache.values() });
    await cache.truncate(2);
    expect(cache.length).toBe(2);
    await cache.reset();
    expect(cache.length).toBe(0);

    const memory = { data: random(B * 7 * config.dModel, 31), shape: [B, 7, config.dModel] };
    const query = { data: random(B * 3 * config.dModel, 32), shape: [B, 3, config.dModel] };
    const kv = await mha.precomputeKeyValue(memory);
    expect([kv.batch, kv.tokens]).toEqual([B, 7]);
    expectClose(await mha.forward(query, kv), sync.forward(query, memory, memory));
    await kv.dispose();
    await cache.dispose();
    expect(cache.disposed).toBe(true);
    expect(() => cache.length).toThrow('KVCache.length: this KVCache was disposed; create a new one');
    const x = { data: random(B * config.dModel, 1), shape: [B, 1, config.dModel] };
    await expectRejects(mha.forwardIncremental(x, cache), Error,
      'MultiHeadAttention.forwardIncremental: cache: the KVCache was disposed; create a new one');
    await mha.dispose();
  });

  test('errors have the synchronous class and message; the pool stays usable', async () => {
    const config = { dModel: 8, numHeads: 2 };
    const w = randomWeights(config, 41);
    const sync = track(new module.MultiHeadAttention(config));
    const mha = await pools[workers].MultiHeadAttention(config);
    const x = { data: random(16, 1), shape: [2, 8] };

    let want = thrown(() => sync.forward(x));
    await expectRejects(mha.forward(x), want.constructor, want.message);
    sync.setWeights(w);
    await mha.setWeights(w);
    const bad = { data: random(6, 1), shape: [2, 3] };
    for (const call of [
      (m) => m.forward(bad),
      (m) => m.forward(x, undefined, undefined, { causal: 3 }),
      (m) => m.forward(x, undefined, undefined, { bogus: true }),
      (m) => m.forward('x'),
      (m) => m.setWeights({ ...w, wQ: new Float32Array(3) }),
      (m) => m.setWeights({ ...w, bO: undefined }),
      (m) => m.createKVCache({ batch: 0, maxLength: 4 }),
    ]) {
      want = thrown(() => call(sync));
      await expectRejects(call(mha), want.constructor, want.message);
    }
    await expectRejects(pools[workers].MultiHeadAttention({ dModel: 10, numHeads: 4 }), RangeError,
      'MultiHeadAttention: config.dModel: must be divisible by numHeads (4), got 10');
    expectClose(await mha.forward(x), sync.forward(x));

    await mha.dispose();
    expect(mha.disposed).toBe(true);
    await expectRejects(mha.forward(x), Error,
      'MultiHeadAttention.forward: this MultiHeadAttention was disposed; create a new one');
  });

  test('concurrent callers get their own results, in order', async () => {
    const config = { dModel: 8, numHeads: 4 };
    const w = randomWeights(config, 51);
    const sync = track(new module.MultiHeadAttention(config));
    sync.setWeights(w);
    const mha = await pools[workers].MultiHeadAttention(config);
    const loaded = mha.setWeights(w);
    const inputs = Array.from({ length: 6 }, (_, i) => ({ data: random(3 * 8, 60 + i), shape: [3, 8] }));
    const results = await Promise.all(inputs.map((x) => mha.forward(x)));
    await loaded;
    results.forEach((r, i) => expectClose(r, sync.forward(inputs[i])));
    await mha.dispose();
  });
});

describe.each([2, 3])('pool of %i workers: partial outputs whose sum overflows float32', (workers) => {
  // Three heads of d_k 2 whose values are all 1, and column 4 of W_O 7e37:
  // each head adds 1.4e38 to column 4 of every output row, so every
  // worker's partial output (one or two heads) is finite and their sum,
  // 4.2e38, is not.
  const config = { dModel: 6, numHeads: 3 };
  const [B, T, d] = [2, 3, 6];
  const w = { ...randomWeights(config, 101), wV: new Float32Array(d * d),
    bV: new Float32Array(d).fill(1), wO: new Float32Array(d * d) };
  for (let r = 0; r < d; ++r) w.wO[r * d + 4] = 7e37;
  const x = { data: random(B * T * d, 102), shape: [B, T, d] };

  test('are refused with the synchronous class and message; the pool stays usable', async () => {
    const sync = track(new module.MultiHeadAttention(config));
    sync.setWeights(w);
    const mha = await pools[workers].MultiHeadAttention(config);
    await mha.setWeights(w);
    const want = thrown(() => sync.forward(x));
    expect(want.message).toBe('MultiHeadAttention.forward: the output projection z W_o + b_o ' +
      'overflowed float32 (element 4 is +Infinity); the inputs or weights are too large in magnitude');
    await expectRejects(mha.forward(x), want.constructor, want.message);

    // A decoding step that overflows leaves the cache as it was.
    const syncCache = track(sync.createKVCache({ batch: B, maxLength: 4 }));
    const cache = await mha.createKVCache({ batch: B, maxLength: 4 });
    const step = { data: random(B * d, 103), shape: [B, 1, d] };
    const stepError = thrown(() => sync.forwardIncremental(step, syncCache));
    expect(stepError.message).toMatch(/^MultiHeadAttention.forwardIncremental: the output projection/);
    await expectRejects(mha.forwardIncremental(step, cache), stepError.constructor,
      stepError.message);
    expect([cache.length, syncCache.length]).toEqual([0, 0]);

    const fine = randomWeights(config, 104);
    sync.setWeights(fine);
    await mha.setWeights(fine);
    expectClose(await mha.forward(x), sync.forward(x));
    expectClose(await mha.forwardIncremental(step, cache), sync.forwardIncremental(step, syncCache));
    await cache.dispose();
    await mha.dispose();
  });
});

test('layers run whole in the worker holding the fewest, as the synchronous ones', async () => {
  const pool = pools[2];
  const config = { dModel: 8, numHeads: 2, ffnDim: 16 };
  const [B, T, S] = [2, 4, 3];
  const x = { data: random(B * T * 8, 81), shape: [B, T, 8] };
  const memory = { data: random(B * S * 8, 82), shape: [B, S, 8] };

  const syncEncoder = track(new module.TransformerEncoderLayer(config));
  const encoder = await pool.TransformerEncoderLayer(config);
  expect(encoder.config).toEqual(syncEncoder.config);
  let want = thrown(() => syncEncoder.forward(x));
  await expectRejects(encoder.forward(x), want.constructor, want.message);
  const ew = randomLayerWeights(8, 16, 3);
  syncEncoder.setWeights(ew);
  await encoder.setWeights(ew);
  expectSame(await encoder.forward(x, { causal: true }), syncEncoder.forward(x, { causal: true }));

  const syncDecoder = track(new module.TransformerDecoderLayer(config));
  const decoder = await pool.TransformerDecoderLayer(config);
  const dw = randomLayerWeights(8, 16, 4, { decoder: true });
  syncDecoder.setWeights(dw);
  await decoder.setWeights(dw);
  expectSame(await decoder.forward(x, memory), syncDecoder.forward(x, memory));
  const syncCache = track(syncDecoder.createKVCache({ batch: B, maxLength: T }));
  const syncMemory = track(syncDecoder.precomputeMemory(memory));
  const cache = await decoder.createKVCache({ batch: B, maxLength: T });
  const precomputed = await decoder.precomputeMemory(memory);
  for (let t = 0; t < T; ++t) {
    const step = { data: random(B * 8, 90 + t), shape: [B, 1, 8] };
    expectSame(await decoder.forwardIncremental(step, cache, precomputed),
      syncDecoder.forwardIncremental(step, syncCache, syncMemory));
    expect(cache.length).toBe(t + 1);
  }
  want = thrown(() => syncDecoder.forwardIncremental(x, syncCache, syncMemory));
  await expectRejects(decoder.forwardIncremental(x, cache, precomputed), want.constructor,
    want.message);
  expect(cache.length).toBe(T);

  const mha = await pool.MultiHeadAttention({ dModel: 8, numHeads: 2 });
  await mha.setWeights(randomWeights({ dModel: 8, numHeads: 2 }, 91));
  await expectRejects(mha.forwardIncremental(x, cache), Error, 'MultiHeadAttention.' +
    "forwardIncremental: cache: this KVCache is held by the pool's workers in another way " +
    'than this object (it was made by an object of another head layout or in another ' +
    'worker); use one made by an object like this one');
  await mha.dispose();
  await Promise.all([cache.dispose(), precomputed.dispose(), encoder.dispose()]);
  await decoder.dispose();
  await expectRejects(decoder.forward(x, memory), Error,
    'TransformerDecoderLayer.forward: this TransformerDecoderLayer was disposed; create a new one');
});

test('positionalEncoding, layerNorm and attention run in the workers, as the synchronous ones', async () => {
  const pool = pools[2];
  // Tensors (or results of tensors) equal value for value: arrays that came
  // back in a message belong to another realm than Jest's, so compare plainly.
  const plain = (r) => Object.fromEntries(Object.entries(r.data ? { r } : r)
    .map(([k, t]) => [k, { data: Array.from(t.data), shape: t.shape }]));
  const expectSame = (got, want) => expect(plain(got)).toEqual(plain(want));
  expectSame(await pool.positionalEncoding(7, 10), module.positionalEncoding(7, 10));
  const x = { data: random(2 * 3 * 8, 50), shape: [2, 3, 8] };
  const norm = { gamma: random(8, 51), beta: random(8, 52), eps: 1e-3 };
  expectSame(await pool.layerNorm(x, norm), module.layerNorm(x, norm));
  const q = { data: random(2 * 4 * 5 * 8, 53), shape: [2, 4, 5, 8] };
  const kv = { data: random(2 * 2 * 6 * 8, 54), shape: [2, 2, 6, 8] };
  const options = { causal: 'bottom-right', window: [3, 0], returnAttnWeights: true,
    returnScores: true };
  // Two calls, one per worker in turn.
  for (let i = 0; i < 2; ++i) {
    expectSame(await pool.attention(q, kv, kv, options), module.attention(q, kv, kv, options));
  }
  await expectRejects(pool.attention(q, kv, kv, { scale: NaN }), RangeError,
    'attention: options.scale: expected a finite number float32 holds, got NaN');
  await expect(pool.positionalEncoding(0, 4)).rejects.toThrow(RangeError);
  expectSame(await pool.positionalEncoding(1, 2), module.positionalEncoding(1, 2));
});

test('a killed worker rejects every pending call and marks the pool dead', async () => {
  const pool = await createAttentionPool({ workers: 2, build: 'simd' });
  const config = { dModel: 8, numHeads: 2 };
  const mha = await pool.MultiHeadAttention(config);
  await mha.setWeights(randomWeights(config, 71));
  const x = { data: random(64 * 8, 1), shape: [64, 8] };
  const pending = [mha.forward(x), mha.forward(x)];
  pool[Symbol.for('simd-attention.pool.terminateWorker')](1);
  for (const call of pending) {
    const error = await rejection(call);
    expect(error.constructor).toBe(Error);
    expect(error.message).toMatch(/worker 1 of the attention pool was terminated; the pool is dead/);
  }
  expect(pool.dead).toBe(true);
  const later = await rejection(mha.forward(x));
  expect(later.message).toMatch(/^MultiHeadAttention.forward: worker 1 .* the pool is dead/);
  await expectRejects(pool.MultiHeadAttention(config), Error, later.message
    .replace('MultiHeadAttention.forward', 'MultiHeadAttention'));
  await pool.dispose();
});

test('a disposed pool rejects its calls; its options are checked', async () => {
  const pool = await createAttentionPool({ workers: 1 });
  const mha = await pool.MultiHeadAttention({ dModel: 4, numHeads: 1 });
  await pool.dispose();
  expect(pool.dead).toBe(false);
  await expectRejects(mha.forward({ data: new Float32Array(4), shape: [1, 4] }), Error,
    'MultiHeadAttention.forward: this attention pool was disposed; create a new one');
  await expectRejects(createAttentionPool({ workers: 0 }), RangeError,
    'createAttentionPool: options.workers: expected a positive integer, got 0');
  // At most 4 per logical processor, checked before any worker starts.
  const processors = globalThis.navigator?.hardwareConcurrency ?? os.availableParallelism();
  for (const count of [4 * processors + 1, 1e6]) {
    await expectRejects(createAttentionPool({ workers: count }), RangeError,
      `createAttentionPool: options.workers: expected an integer from 1 to ${4 * processors} ` +
      `(4 per logical processor; this machine has ${processors}), got ${count}`);
  }
  await expectRejects(createAttentionPool({ workers: 1, threads: 2 }), TypeError,
    "createAttentionPool: options: unknown key 'threads' (expected workers, build, backend, wasmPath)");
  await expectRejects(createAttentionPool({ workers: 1, build: 'fast' }), TypeError,
    "createAttentionPool: options.build: expected 'relaxed-simd', 'simd', 'nosimd', got \"fast\"");
});
