// The worker pool with each weight storage type: its attention split by heads
// and its layers split by heads and hidden units hold the synchronous
// objects' narrow weights (bits and int8 values sliced by columns or rows
// with their scales), so they give the synchronous results to float32
// rounding (1e-6 of the output's scale, as tests/js/pool.test.mjs); int8
// weights given as float32 are quantized per worker, where W_O's and W2's
// rows are split, so there the pool stays within int8's bound of float32
// (support/weight-types.mjs). Refused weights are judged whole, with the
// synchronous message, before anything is sent. config.cacheType reaches
// the workers' caches.
import { rejection } from './support/errors.mjs';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff, mhaArguments } from './support/golden.mjs';
import { encoderArguments, sliceTokens } from './support/layers.mjs';
import { createAttentionModule, createAttentionPool, loadCheckpoint, parseSafetensors, track }
  from './support/modules.mjs';
import { maxAbs } from './support/scales.mjs';
import { CHAINED_PRODUCTS, encoderSafetensors, exactInt8, expectWithin, NARROW }
  from './support/weight-types.mjs';

const module = await createAttentionModule({ simd: true, relaxedSimd: false, threads: 1 });
const cases = goldenCaseNames('mha').map(loadGoldenCase).filter((c) => c.config.num_heads > 1);
const encoderCase = loadGoldenCase(goldenCaseNames('encoder_layer')[0]);
let pool;
beforeAll(async () => { pool = await createAttentionPool({ workers: 2, build: 'simd' }); });
afterAll(async () => { await pool.dispose(); });

function expectClose(what, got, want) {
  const worst = maxAbsDiff(got, want);
  const scale = Math.max(1, maxAbs(want));
  if (!(worst <= 1e-6 * scale)) throw new Error(`${what}: differs by ${worst}, scale ${scale}`);
}

function syncOutput(c, weights, setWeights = (m, a) => m.setWeights(a.weights)) {
  const a = mhaArguments(c);
  const mha = track(new module.MultiHeadAttention({ ...a.config, weights }));
  setWeights(mha, a);
  return mha.forward(a.query, a.key, a.value, a.options).output.data;
}

async function pooledOutput(c, weights, setWeights = (m, a) => m.setWeights(a.weights)) {
  const a = mhaArguments(c);
  const mha = await pool.MultiHeadAttention({ ...a.config, weights });
  try {
    expect(mha.config.weights).toBe(weights);
    await setWeights(mha, a);
    return (await mha.forward(a.query, a.key, a.value, a.options)).output.data;
  } finally {
    await mha.dispose();
  }
}

test.each(cases.map((c) => [c.name, c]))('%s: float16 and bfloat16 split by heads as the synchronous object', async (_, c) => {
  for (const type of ['f16', 'bf16']) {
    expectClose(`${c.name} ${type}`, await pooledOutput(c, type), syncOutput(c, type));
  }
});

test.each(cases.map((c) => [c.name, c]))('%s: int8 from float32 within int8\'s bound', async (_, c) => {
  expectWithin(c.name, 'int8', await pooledOutput(c, 'int8'), syncOutput(c, 'f32'),
    CHAINED_PRODUCTS.mha);
});

test('int8 values and scales sliced with their columns equal the synchronous object', async () => {
  const c = cases[0];
  const { d_model: d, num_heads: h, kdim, vdim, head_dim: dk, head_dim_v: dv } = c.config;
  const q = [exactInt8(d, h * dk, 1), exactInt8(kdim, h * dk, 2), exactInt8(vdim, h * dv, 3),
    exactInt8(h * dv, d, 4)];
  const set = (m, x) => m.setWeights({ ...x.weights, wQ: q[0].stored, wK: q[1].stored,
    wV: q[2].stored, wO: q[3].stored });
  expectClose('int8 values', await pooledOutput(c, 'int8', set), syncOutput(c, 'int8', set));
});

test('decoding through a pooled KV cache, per type', async () => {
  const c = cases.find((x) => x.config.self_attention);
  const a = mhaArguments(c);
  const [batch, tokens] = a.query.shape;
  for (const type of NARROW) {
    const sync = track(new module.MultiHeadAttention({ ...a.config, weights: type }));
    sync.setWeights(a.weights);
    const syncCache = track(sync.createKVCache({ batch, maxLength: tokens }));
    const pooled = await pool.MultiHeadAttention({ ...a.config, weights: type });
    try {
      await pooled.setWeights(a.weights);
      const cache = await pooled.createKVCache({ batch, maxLength: tokens });
      for (let t = 0; t < tokens; ++t) {
        const x = sliceTokens(a.query, t, t + 1);
        const got = (await pooled.forwardIncremental(x, cache)).output.data;
        const want = sync.forwardIncremental(x, syncCache).output.data;
        if (type === 'int8') {
          expectWithin(`${c.name} token ${t}`, type, got, want, CHAINED_PRODUCTS.mha);
        } else {
          expectClose(`${c.name} ${type} token ${t}`, got, want);
        }
      }
      await cache.dispose();
    } finally {
      await pooled.dispose();
    }
  }
});

test('cacheType reaches the workers: a pooled float16 cache decodes as the synchronous one', async () => {
  const c = cases.find((x) => x.config.self_attention);
  const a = mhaArguments(c);
  const [batch, tokens] = a.query.shape;
  for (const cacheType of ['f16', 'bf16']) {
    const sync = track(new module.MultiHeadAttention({ ...a.config, cacheType }));
    sync.setWeights(a.weights);
    const syncCache = track(sync.createKVCache({ batch, maxLength: tokens }));
    const pooled = await pool.MultiHeadAttention({ ...a.config, cacheType });
    try {
      expect(pooled.config.cacheType).toBe(cacheType);
      await pooled.setWeights(a.weights);
      const cache = await pooled.createKVCache({ batch, maxLength: tokens });
      for (let t = 0; t < tokens; ++t) {
        const x = sliceTokens(a.query, t, t + 1);
        expectClose(`${c.name} ${cacheType} token ${t}`,
          (await pooled.forwardIncremental(x, cache)).output.data,
          sync.forwardIncremental(x, syncCache).output.data);
      }
      await cache.dispose();
    } finally {
      await pooled.dispose();
    }
  }
});

test('refused weights: the synchronous message, the old weights kept', async () => {
  const c = cases[0];
  const a = mhaArguments(c);
  const pooled = await pool.MultiHeadAttention({ ...a.config, weights: 'f16' });
  try {
    await pooled.setWeights(a.weights);
    const before = (await pooled.forward(a.query, a.key, a.value, a.options)).output.data;
    const huge = Float32Array.from(a.weights.wO);
    huge[7] = -70000;
    const e = await rejection(pooled.setWeights({ ...a.weights, wO: huge }));
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toBe('MultiHeadAttention.setWeights: wO: element 7 is -70000, beyond ' +
      "float16's range (magnitudes up to 65504), which config.weights asks for");
    const wrong = await rejection(pooled.setWeights({ ...a.weights,
      wQ: { values: new Int8Array(a.weights.wQ.length), scales: new Float32Array(2) } }));
    expect(wrong.message).toBe('MultiHeadAttention.setWeights: wQ: int8 values given, but ' +
      'config.weights is float16');
    const after = (await pooled.forward(a.query, a.key, a.value, a.options)).output.data;
    expect(Array.from(after)).toEqual(Array.from(before));
  } finally {
    await pooled.dispose();
  }
});

describe('layers split by heads and hidden units', () => {
  const a = encoderArguments(encoderCase);
  const syncLayer = (weights, w = a.weights) => {
    const layer = track(new module.TransformerEncoderLayer({ ...a.config, weights }));
    layer.setWeights(w);
    return layer.forward(a.input).data;
  };
  const pooledLayer = async (weights, load) => {
    const layer = await pool.TransformerEncoderLayer({ ...a.config, weights },
      { placement: 'split' });
    try {
      expect(layer.placement).toBe('split');
      await load(layer);
      return (await layer.forward(a.input)).data;
    } finally {
      await layer.dispose();
    }
  };

  test('float16, bfloat16, and int8 values and scales as the synchronous layer', async () => {
    for (const type of ['f16', 'bf16']) {
      expectClose(type, await pooledLayer(type, (l) => l.setWeights(a.weights)), syncLayer(type));
    }
    const { dModel: d, ffnDim: f } = a.config;
    const q = [1, 2, 3, 4].map((seed) => exactInt8(d, d, seed));
    const w = { ...a.weights, attention: { ...a.weights.attention, wQ: q[0].stored,
      wK: q[1].stored, wV: q[2].stored, wO: q[3].stored },
    ffn: { ...a.weights.ffn, w1: exactInt8(d, f, 5).stored, w2: exactInt8(f, d, 6).stored } };
    expectClose('int8', await pooledLayer('int8', (l) => l.setWeights(w)), syncLayer('int8', w));
  });

  test('int8 from float32 within int8\'s bound', async () => {
    expectWithin(encoderCase.name, 'int8', await pooledLayer('int8', (l) => l.setWeights(a.weights)),
      syncLayer('f32'), CHAINED_PRODUCTS.encoder);
  });

  test('a checkpoint kept 16-bit loads into a pooled layer of its type', async () => {
    const bytes = encoderSafetensors(a.weights, 'F16', { separate: true });
    const file = parseSafetensors(bytes, { keep16Bit: true });
    const sync = track(new module.TransformerEncoderLayer({ ...a.config, weights: 'f16' }));
    loadCheckpoint(sync, file);
    const got = await pooledLayer('f16', (l) => loadCheckpoint(l, file));
    expectClose('F16 checkpoint', got, sync.forward(a.input).data);
  });
});
