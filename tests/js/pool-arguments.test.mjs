// A pool's calls copy their arguments when made: a decoding loop that
// reuses one buffer and queues its steps gets the outputs of awaited steps;
// weights, options, masks and caches' inputs written after the call do not
// reach it. Arguments are read as the synchronous API reads them (a tensor
// class's getters, inherited options). Functions, symbols and objects of a
// class, which a message cannot carry, are judged as synchronously (the
// same TypeError, or ignored), leave nothing pending, and a Node process
// that met them ends on its own, with or without dispose(), with no
// unhandled rejection.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { rejection, thrown } from './support/errors.mjs';
import { webDir } from './support/golden.mjs';
import { randomFloats, randomLayerWeights, sliceTokens } from './support/layers.mjs';
import { track } from './support/modules.mjs';
import { randomTensor as tensor, simdModule, startPools } from './support/pools.mjs';

const module = await simdModule();
const pools = startPools([1, 2]);

const [B, T, S, d, f] = [2, 4, 3, 8, 6];
const x = tensor([B, T, d], 1);
const memory = tensor([B, S, d], 2);

// A result's tensors ({ data, shape }, or an object of them) as plain arrays
// (the pool's arrays come from another realm).
const plain = (r) => (ArrayBuffer.isView(r?.data) ? { shape: r.shape, data: Array.from(r.data) }
  : Object.fromEntries(Object.entries(r).map(([k, t]) => [k, plain(t)])));

// The same tensors, value for value.
function expectIdentical(got, want) {
  expect(plain(got)).toEqual(plain(want));
}

// The same tensors to float32 rounding (a split attention sums its heads'
// parts in another order): values within 1e-6 of each tensor's largest
// magnitude. An argument read after its call would differ by far more.
function expectSame(got, want) {
  const [g, w] = [plain(got), plain(want)];
  const tensors = w.data ? [[g, w]] : Object.keys(w).map((k) => [g[k], w[k]]);
  expect(Object.keys(g).sort()).toEqual(Object.keys(w).sort());
  for (const [a, b] of tensors) {
    expect(a.shape).toEqual(b.shape);
    const scale = Math.max(...b.data.map(Math.abs));
    const worst = Math.max(...a.data.map((v, i) => Math.abs(v - b.data[i])));
    if (!(worst <= 1e-6 * scale)) throw new Error(`differs by ${worst}, scale ${scale}`);
  }
}

// Overwrites every typed array in `v` (nested) with `value`.
function scribble(v, value = 7) {
  if (ArrayBuffer.isView(v)) v.fill(value);
  else if (v !== null && typeof v === 'object') Object.values(v).forEach((e) => scribble(e, value));
}

// [label, kind, placement]
// A synchronous MultiHeadAttention and one of `pool` alike, both given the
// same random weights (from `seed`).
async function attentionPair(pool, seed) {
  const config = { dModel: d, numHeads: 2 };
  const w = randomLayerWeights(d, f, seed).attention;
  const sync = track(new module.MultiHeadAttention(config));
  sync.setWeights(w);
  const mha = await pool.MultiHeadAttention(config);
  await mha.setWeights(w);
  return { config, w, sync, mha };
}

const decoders = [['MultiHeadAttention', 'MultiHeadAttention', undefined],
  ['a TransformerDecoderLayer split', 'TransformerDecoderLayer', 'split'],
  ['a TransformerDecoderLayer whole', 'TransformerDecoderLayer', 'whole']];

describe.each([1, 2])('pool of %i workers', (workers) => {
  test.each(decoders)('a decoding loop reusing one buffer, 4 steps queued, as awaited ones: %s',
    async (_, kind, placement) => {
      const pool = pools[workers];
      const layer = kind !== 'MultiHeadAttention';
      const config = layer ? { dModel: d, numHeads: 2, ffnDim: f } : { dModel: d, numHeads: 2 };
      const w = layer ? randomLayerWeights(d, f, 3, { decoder: true })
        : randomLayerWeights(d, f, 3).attention;
      const extra = layer ? [memory] : [];
      // Two pooled objects alike: steps awaited one by one on the first,
      // queued on the second.
      const [awaited, queued] = await Promise.all([0, 1].map(async () => {
        const pooled = await pool[kind](config, placement && { placement });
        await pooled.setWeights(w);
        return { pooled, cache: await pooled.createKVCache({ batch: B, maxLength: T }) };
      }));
      const wants = [];
      for (let t = 0; t < T; ++t) {
        wants.push(await awaited.pooled.forwardIncremental(sliceTokens(x, t, t + 1),
          awaited.cache, ...extra));
      }
      const buffer = { data: new Float32Array(B * d), shape: [B, 1, d] };
      const steps = [];
      for (let t = 0; t < T; ++t) {
        buffer.data.set(sliceTokens(x, t, t + 1).data);
        steps.push(queued.pooled.forwardIncremental(buffer, queued.cache, ...extra));
      }
      buffer.data.fill(NaN);
      const gots = await Promise.all(steps);
      gots.forEach((got, t) => expectIdentical(got, wants[t]));
      // And as the synchronous object's, to float32 rounding.
      const sync = track(new module[kind](config));
      sync.setWeights(w);
      const syncCache = track(sync.createKVCache({ batch: B, maxLength: T }));
      for (let t = 0; t < T; ++t) {
        const want = sync.forwardIncremental(sliceTokens(x, t, t + 1), syncCache, ...extra);
        expectSame(gots[t], want);
      }
      await Promise.all([awaited.pooled.dispose(), queued.pooled.dispose()]);
    });

  test('weights written after setWeights (and its PyTorch form) are not the weights set',
    async () => {
      const pool = pools[workers];
      const mhaConfig = { dModel: d, numHeads: 2 };
      const layerConfig = { dModel: d, numHeads: 2, ffnDim: f };
      // The last: nn.MultiheadAttention's state_dict.
      const state = { in_proj_weight: randomFloats(3 * d * d, 5), in_proj_bias: randomFloats(3 * d, 6),
        'out_proj.weight': randomFloats(d * d, 7), 'out_proj.bias': randomFloats(d, 8) };
      const targets = [
        ['MultiHeadAttention', mhaConfig, undefined, 'setWeights', randomLayerWeights(d, f, 4).attention],
        ['TransformerEncoderLayer', layerConfig, 'split', 'setWeights', randomLayerWeights(d, f, 4)],
        ['TransformerEncoderLayer', layerConfig, 'whole', 'setWeights', randomLayerWeights(d, f, 4)],
        ['MultiHeadAttention', mhaConfig, undefined, 'setWeightsFromPyTorch', state]];
      for (const [kind, config, placement, method, given] of targets) {
        const sync = track(new module[kind](config));
        sync[method](given);
        const pooled = await pool[kind](config, placement && { placement });
        const w = structuredClone(given);
        const set = pooled[method](w);
        scribble(w);
        await set;
        expectSame(await pooled.forward(x), sync.forward(x));
        await pooled.dispose();
      }
    });

  test('inputs, masks, options and caches\' inputs written after the call do not reach it',
    async () => {
      const pool = pools[workers];
      const { w, sync, mha } = await attentionPair(pool, 9);
      // Each call is made, then everything it was given is overwritten
      // (arrays with zeros, options turned, shapes changed) before it runs.
      const given = () => ({ query: structuredClone(x), memory: structuredClone(memory),
        options: { attnMask: { data: randomFloats(B * 2 * T * S, 10), shape: [B, 2, T, S] },
          keyPaddingMask: new Uint8Array([1, 1, 0, 1, 1, 1]), returnAttnWeights: true,
          window: [2, 2] } });
      const forward = (m, a) => m.forward(a.query, a.memory, a.memory, a.options);
      const mine = given();
      const pending = forward(mha, mine);
      scribble(mine, 0);
      Object.assign(mine.options, { causal: 'bottom-right', returnAttnWeights: false });
      mine.options.window.fill(0);
      mine.query.shape[1] = 1;
      expectSame(await pending, forward(sync, given()));

      const padding = new Uint8Array([1, 1, 0, 1, 1, 1]);
      const syncKv = track(sync.precomputeKeyValue(memory, { keyPaddingMask: padding }));
      const myMemory = structuredClone(memory);
      const precomputed = mha.precomputeKeyValue(myMemory, { keyPaddingMask: padding });
      const cacheOptions = { batch: B, maxLength: T };
      const made = mha.createKVCache(cacheOptions);
      scribble(myMemory);
      myMemory.shape[1] = 1;
      padding.fill(0);
      Object.assign(cacheOptions, { batch: 1, maxLength: 1 });
      const kv = await precomputed;
      expect([kv.batch, kv.tokens]).toEqual([B, S]);
      expectSame(await mha.forward(x, kv), sync.forward(x, syncKv));
      const madeCache = await made;
      expect([madeCache.batch, madeCache.maxLength]).toEqual([B, T]);
      await Promise.all([kv.dispose(), madeCache.dispose()]);

      // A cache's append, and the module functions.
      const syncCache = track(sync.createKVCache({ batch: B, maxLength: T }));
      const cache = await mha.createKVCache({ batch: B, maxLength: T });
      const keys = tensor([B, 2, d], 11);
      const values = tensor([B, 2, d], 12);
      syncCache.append(keys, values);
      const appended = cache.append(keys, values);
      scribble(keys, 0);
      keys.shape[1] = 1;
      await appended;
      expectSame(await cache.keys(), syncCache.keys());
      const q = tensor([B, 2, T, 4], 13);
      const norm = { gamma: randomFloats(d, 14), beta: randomFloats(d, 15), eps: 1e-3 };
      const wantNorm = module.layerNorm(x, norm);
      const wantAttention = module.attention(q, q, q, { causal: 'top-left' });
      const gotNorm = pool.layerNorm(x, norm);
      const options = { causal: 'top-left' };
      const gotAttention = pool.attention(q, q, q, options);
      options.causal = 'none';
      scribble(norm);
      expectSame(await gotNorm, wantNorm);
      expectSame(await gotAttention, wantAttention);
      scribble(q);
      await cache.dispose();
      await mha.dispose();
    });

  test('tensors of a class (getters) and inherited options are read as synchronously', async () => {
    const pool = pools[workers];
    class Tensor {
      #data;
      #shape;
      constructor(t) { this.#data = t.data; this.#shape = t.shape; }
      get data() { return this.#data; }
      get shape() { return this.#shape; }
    }
    const { w, sync, mha } = await attentionPair(pool, 16);
    const options = Object.create({ causal: true, returnAttnWeights: true });
    expectSame(await mha.forward(new Tensor(x), undefined, undefined, options),
      sync.forward(new Tensor(x), undefined, undefined, options));
    const mask = new Tensor({ data: randomFloats(T * T, 17), shape: [T, T] });
    expectSame(await mha.forward(x, undefined, undefined, { attnMask: mask }),
      sync.forward(x, undefined, undefined, { attnMask: mask }));
    await mha.dispose();
  });

  test('functions, symbols and objects of a class: the synchronous TypeError, or ignored as ' +
    'synchronously; the pool stays usable', async () => {
    const pool = pools[workers];
    const { config, w, sync, mha } = await attentionPair(pool, 18);
    const fn = () => {};
    const sym = Symbol('s');
    class Options { constructor() { this.causal = fn; } }
    const refused = [
      (m) => m.forward({ data: x.data, shape: fn }),
      (m) => m.forward({ data: x.data, shape: [B, sym, d] }),
      (m) => m.forward({ data: sym, shape: x.shape }),
      (m) => m.forward(x, undefined, undefined, { causal: fn }),
      (m) => m.forward(x, undefined, undefined, { scale: sym }),
      (m) => m.forward(x, undefined, undefined, { window: [1, fn] }),
      (m) => m.forward(x, undefined, undefined, { onProgress: fn }),
      (m) => m.forward(x, undefined, undefined, new Options()),
      (m) => m.forward(x, undefined, undefined, fn),
      (m) => m.setWeights({ ...w, wQ: fn }),
      (m) => m.setWeights({ ...w, bQ: sym }),
      (m) => m.createKVCache({ batch: fn, maxLength: 2 }),
      (m) => m.precomputeKeyValue(memory, { keyPaddingMask: sym }),
    ];
    for (const call of refused) {
      const want = thrown(() => call(sync));
      const got = await rejection(call(mha));
      expect({ class: got.constructor.name, message: got.message })
        .toEqual({ class: want.constructor.name, message: want.message });
    }
    for (const [label, call] of [['pool.attention', (p) => p.attention(x, x, x, { scale: fn })],
      ['pool.layerNorm', (p) => p.layerNorm(x, { gamma: fn, beta: w.bO })],
      ['pool.MultiHeadAttention', (p) => (p === pool ? p.MultiHeadAttention({ ...config, rope: { style: sym } })
        : new p.MultiHeadAttention({ ...config, rope: { style: sym } }))]]) {
      const want = thrown(() => call(module));
      const got = await rejection(call(pool));
      expect({ label, class: got.constructor.name, message: got.message })
        .toEqual({ label, class: want.constructor.name, message: want.message });
    }
    // Ignored where the synchronous API ignores them: keys of a tensor other
    // than data and shape, symbol keys.
    const decorated = { data: x.data, shape: x.shape, source: fn, [sym]: fn };
    expectSame(await mha.forward(decorated, undefined, undefined, { [sym]: 1 }),
      sync.forward(decorated, undefined, undefined, { [sym]: 1 }));
    expectSame(await mha.forward(x), sync.forward(x));
    expect(pool.dead).toBe(false);
    await mha.dispose();
  });
});

// A script that meets each refused argument on a pool of 2 workers; the
// process must end by itself, with or without dispose(), and raise nothing.
// An array given where options go, holding an array of length 2^32 - 1 with
// one element: refused as the synchronous method refuses it, promptly (the
// worker that remade the synchronous error once walked every index).
test('an options array holding a sparse array of length 2^32 - 1 is refused promptly',
  async () => {
    const w = randomLayerWeights(d, f, 4).attention;
    const sync = track(new module.MultiHeadAttention({ dModel: d, numHeads: 2 }));
    sync.setWeights(w);
    const mha = await pools[2].MultiHeadAttention({ dModel: d, numHeads: 2 });
    try {
      await mha.setWeights(w);
      const options = [Object.assign([], { length: 2 ** 32 - 1, 2: 'none' }), 'x'];
      const want = thrown(() => sync.forward(x, undefined, undefined, options));
      const got = await rejection(mha.forward(x, undefined, undefined, options));
      expect([got.constructor.name, got.message]).toEqual([want.constructor.name, want.message]);
      expectSame(await mha.forward(x), sync.forward(x));
    } finally {
      await mha.dispose();
    }
  });

test.each([['without dispose()', ''], ['with dispose()', 'await pool.dispose();']])(
  'node exits on its own after a pool refused functions and symbols, %s', (_, end) => {
    const index = path.join(webDir, 'index.js');
    const script = `
      const { createAttentionPool } = await import(${JSON.stringify(index)});
      process.on('unhandledRejection', (e) => { console.log('unhandled', e); process.exitCode = 3; });
      const pool = await createAttentionPool({ workers: 2, build: 'simd' });
      const mha = await pool.MultiHeadAttention({ dModel: 8, numHeads: 2, bias: false });
      const w = new Float32Array(64).fill(0.1);
      await mha.setWeights({ wQ: w, wK: w, wV: w, wO: w });
      const x = { data: new Float32Array(40).fill(1), shape: [1, 5, 8] };
      const errors = [];
      for (const call of [
        () => mha.forward({ ...x, shape: () => {} }),
        () => mha.forward(x, undefined, undefined, { causal: Symbol('c') }),
        () => mha.forward(x, undefined, undefined, { attnMask: { data: () => {}, shape: [5, 5] } }),
        () => mha.setWeights({ wQ: w, wK: w, wV: w, wO: () => {} }),
        () => pool.attention(x, x, x, { scale: () => {} }),
      ]) {
        errors.push(await call().then(() => 'resolved', (e) => e.constructor.name));
      }
      const y = await mha.forward({ ...x, note: () => {} });
      ${end}
      console.log(errors.join(' '), y.output.data[0].toFixed(3));`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'simd-attention-pool-exit-'));
    const file = path.join(dir, 'use.mjs');
    fs.writeFileSync(file, script);
    const child = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 30000 });
    fs.rmSync(dir, { recursive: true });
    expect({ status: child.status, signal: child.signal, stdout: child.stdout, stderr: child.stderr })
      .toEqual({ status: 0, signal: null, stderr: '',
        stdout: 'TypeError TypeError TypeError TypeError TypeError 0.640\n' });
  });
