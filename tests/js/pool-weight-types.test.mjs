// The worker pool with each weight storage type: its attention split by heads
// and its layers split by heads and hidden units hold the synchronous
// objects' narrow weights (bits and int8 values sliced by columns or rows
// with their scales), so they give the synchronous results to float32
// rounding (1e-6 of the output's scale, as tests/js/pool.test.mjs). q4
// weights are quantized by each worker in blocks of 32 of its own rows of
// W_O, which need not be the synchronous object's blocks: a pooled q4
// attention is held to q4's bound against float32, as the synchronous one
// (support/weight-types.mjs). int8
// weights given as float32 are quantized whole before W_O's and W2's rows
// are split, so there too the results differ only by sums taken in another
// order, within the bounds derived below. Refused weights are judged whole,
// with the synchronous message, before anything is sent. config.cacheType
// reaches the workers' caches.
import { rejection } from './support/errors.mjs';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff, mhaArguments } from './support/golden.mjs';
import { encoderArguments, sliceTokens } from './support/layers.mjs';
import { loadCheckpoint, parseSafetensors, track } from './support/modules.mjs';
import { simdModule, startPools } from './support/pools.mjs';
import { maxAbs } from './support/scales.mjs';
import { CHAINED_PRODUCTS, encoderSafetensors, exactInt8, expectWithin, inScope, NARROW }
  from './support/weight-types.mjs';

const module = await simdModule();
const cases = goldenCaseNames('mha').map(loadGoldenCase).filter((c) => c.config.num_heads > 1);
const encoderCase = loadGoldenCase(goldenCaseNames('encoder_layer')[0]);
const pools = startPools([2]);

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

// Both objects hold the same int8 weights (the pool's W_O quantized whole,
// as setWeights quantizes it), and every value before W_O is computed alike
// (W_Q, W_K and W_V are split by columns, which keeps each column's
// arithmetic; each head is one kernel call), so an output differs only in
// how z W_O + b_O is summed: per worker over its heads' rows, then the
// workers' partial sums in worker order. A float32 sum of n terms in any
// order lies within gamma_n sum |terms| of the exact one (gamma_n = n u /
// (1 - n u), u = 2^-24), so the two within 2 gamma_(n+2) (sum_k |z_k w_kj|
// + |b_j|), n = numHeads * headDimV products, + 2 for the bias and the
// dequantizing products (w = value * scale, rounded alike in both). The
// integer kernel (src/kernels/int8_gemm.h) sums exactly in int32 but rounds
// each row of z to int16 steps of max |z_k| / 32767, by half a step at
// most: for the whole row synchronously, per worker for its share of the
// row (a step no larger), so the two differ by up to one step times
// sum_k |w_kj| more.
// z: [B, H, T, d_v] (returnIntermediates' headOutput); wO: int8
// { values, scales } [H d_v, d].
function summedAlikeBound(z, [batch, heads, tokens, dv], wO, bO, d) {
  const u = 2 ** -24;
  const n = heads * dv;
  const gamma = ((n + 2) * u) / (1 - (n + 2) * u);
  const w = Float64Array.from(wO.values, (v, i) => Math.abs(v * wO.scales[i % d]));
  const bound = new Float64Array(batch * tokens * d);
  const row = new Float64Array(n);
  for (let b = 0; b < batch; ++b) {
    for (let t = 0; t < tokens; ++t) {
      for (let h = 0; h < heads; ++h) {
        for (let e = 0; e < dv; ++e) row[h * dv + e] = Math.abs(z[((b * heads + h) * tokens + t) * dv + e]);
      }
      const step = Math.max(...row) / 32767;
      for (let j = 0; j < d; ++j) {
        let products = Math.abs(bO?.[j] ?? 0);
        let weights = 0;
        for (let k = 0; k < n; ++k) {
          products += row[k] * w[k * d + j];
          weights += w[k * d + j];
        }
        bound[(b * tokens + t) * d + j] = 2 * gamma * products + step * weights;
      }
    }
  }
  return bound;
}

// got within summedAlikeBound of the synchronous result `want` ({ output,
// headOutput } of a call with returnIntermediates) of an attention of
// config `c` (resolved) with weights `w`: W_O as given in int8, or as
// setWeights quantizes it from float32.
function expectSummedAlike(what, got, want, c, w, module) {
  const { dModel: d, numHeads: heads, headDimV: dv } = c;
  const [batch, tokens] = want.output.shape;
  const wO = w.wO instanceof Float32Array ? module.quantizeInt8(w.wO, heads * dv, d) : w.wO;
  const bound = summedAlikeBound(want.headOutput.data, [batch, heads, tokens, dv], wO, w.bO, d);
  for (let i = 0; i < got.length; ++i) {
    const error = Math.abs(got[i] - want.output.data[i]);
    if (!(error <= bound[i])) {
      throw new Error(`${what}: element ${i} differs by ${error} > ${bound[i]}`);
    }
  }
}

async function pooledOutput(c, weights, setWeights = (m, a) => m.setWeights(a.weights)) {
  const a = mhaArguments(c);
  const mha = await pools[2].MultiHeadAttention({ ...a.config, weights });
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

test.each(cases.map((c) => [c.name, c]))('%s: int8 from float32 as the synchronous object, W_O summed in another order', async (_, c) => {
  const a = mhaArguments(c);
  const mha = track(new module.MultiHeadAttention({ ...a.config, weights: 'int8' }));
  mha.setWeights(a.weights);
  const want = mha.forward(a.query, a.key, a.value, { ...a.options, returnIntermediates: true });
  expectSummedAlike(c.name, await pooledOutput(c, 'int8'), want, mha.config, a.weights, module);
});

test('pool.quantizeInt8 is the module\'s', async () => {
  const { wO } = mhaArguments(cases[0]).weights;
  const { d_model: d } = cases[0].config;
  const got = await pools[2].quantizeInt8(wO, wO.length / d, d);
  const want = module.quantizeInt8(wO, wO.length / d, d);
  expect(Array.from(got.values)).toEqual(Array.from(want.values));
  expect(Array.from(got.scales)).toEqual(Array.from(want.scales));
});

test('int8 values and scales sliced with their columns as the synchronous object, W_O summed in another order', async () => {
  const c = cases[0];
  const { d_model: d, num_heads: h, kdim, vdim, head_dim: dk, head_dim_v: dv } = c.config;
  const q = [exactInt8(d, h * dk, 1), exactInt8(kdim, h * dk, 2), exactInt8(vdim, h * dv, 3),
    exactInt8(h * dv, d, 4)];
  const weights = (x) => ({ ...x.weights, wQ: q[0].stored, wK: q[1].stored, wV: q[2].stored,
    wO: q[3].stored });
  const a = mhaArguments(c);
  const mha = track(new module.MultiHeadAttention({ ...a.config, weights: 'int8' }));
  mha.setWeights(weights(a));
  const want = mha.forward(a.query, a.key, a.value, { ...a.options, returnIntermediates: true });
  expectSummedAlike('int8 values', await pooledOutput(c, 'int8', (m, x) => m.setWeights(weights(x))),
    want, mha.config, weights(a), module);
});

test('decoding through a pooled KV cache, per type', async () => {
  const c = cases.find((x) => x.config.self_attention);
  const a = mhaArguments(c);
  const [batch, tokens] = a.query.shape;
  expect(inScope(c.name, 'q4')).toBe(true);
  for (const type of NARROW) {
    const sync = track(new module.MultiHeadAttention({ ...a.config,
      weights: type === 'q4' ? 'f32' : type }));
    sync.setWeights(a.weights);
    const syncCache = track(sync.createKVCache({ batch, maxLength: tokens }));
    const pooled = await pools[2].MultiHeadAttention({ ...a.config, weights: type });
    try {
      await pooled.setWeights(a.weights);
      const cache = await pooled.createKVCache({ batch, maxLength: tokens });
      for (let t = 0; t < tokens; ++t) {
        const x = sliceTokens(a.query, t, t + 1);
        const got = (await pooled.forwardIncremental(x, cache)).output.data;
        const want = sync.forwardIncremental(x, syncCache, { returnIntermediates: true });
        if (type === 'int8') {
          expectSummedAlike(`${c.name} token ${t}`, got, want, sync.config, a.weights, module);
        } else if (type === 'q4') {
          expectWithin(`${c.name} token ${t}`, type, got, want.output.data,
            CHAINED_PRODUCTS.mha);
        } else {
          expectClose(`${c.name} ${type} token ${t}`, got, want.output.data);
        }
      }
      await cache.dispose();
    } finally {
      await pooled.dispose();
    }
  }
});

test('cacheType reaches the workers: a pooled float16/bfloat16/int8 cache decodes as the synchronous one', async () => {
  const c = cases.find((x) => x.config.self_attention);
  const a = mhaArguments(c);
  const [batch, tokens] = a.query.shape;
  for (const cacheType of module.choices.cacheType.filter((t) => t !== 'f32')) {
    const sync = track(new module.MultiHeadAttention({ ...a.config, cacheType }));
    sync.setWeights(a.weights);
    const syncCache = track(sync.createKVCache({ batch, maxLength: tokens }));
    const pooled = await pools[2].MultiHeadAttention({ ...a.config, cacheType });
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
  const pooled = await pools[2].MultiHeadAttention({ ...a.config, weights: 'f16' });
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
    const layer = await pools[2].TransformerEncoderLayer({ ...a.config, weights },
      { placement: 'split' });
    try {
      expect(layer.placement).toBe('split');
      await load(layer);
      return (await layer.forward(a.input)).data;
    } finally {
      await layer.dispose();
    }
  };

  // As for the attention, the split layer holds the synchronous layer's
  // weights, and its attention's W_O (n = dModel rows) and its FFN's W2
  // (n = ffnDim) are summed in another order, each output within
  // 2 gamma_(n+2) sum_k |a_k w_kj| of the synchronous one. Each worker also
  // rounds its share of a row of z or of the hidden layer to its own int16
  // step (src/kernels/int8_gemm.h), no larger than the whole row's: the two
  // differ by up to one step, max_k |a_k| / 32767, times sum_k |w_kj| more,
  // r 2^-15 sum_k |a_k w_kj| for r = max |a| / mean |a| (about 2 for the
  // hidden layer, 3-4 for z, a mix of value rows; 4 taken). As the type
  // bounds (support/weight-types.mjs) take it, for inputs of mixed signs
  // sum_k |a_k w_kj| stays near the result's scale, and the steps after a
  // product carry its difference as they carry its value (a LayerNorm
  // divides both by the same deviation). The bound is twice the sum over
  // the two products, of the output's scale (max |output|, at least 1).
  const splitBound = (want) => {
    const u = 2 ** -24;
    const gamma = (n) => ((n + 2) * u) / (1 - (n + 2) * u);
    const rounding = 4 * 2 ** -15;
    return 2 * (2 * gamma(a.config.dModel) + 2 * gamma(a.config.ffnDim) + 2 * rounding) *
      Math.max(1, maxAbs(want));
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
    const want = syncLayer('int8', w);
    const error = maxAbsDiff(await pooledLayer('int8', (l) => l.setWeights(w)), want);
    if (!(error <= splitBound(want))) throw new Error(`int8 values: differs by ${error} > ${splitBound(want)}`);
  });

  test('int8 from float32 as the synchronous layer, W_O and W2 summed in another order', async () => {
    const want = syncLayer('int8');
    const error = maxAbsDiff(await pooledLayer('int8', (l) => l.setWeights(a.weights)), want);
    if (!(error <= splitBound(want))) {
      throw new Error(`${encoderCase.name}: differs by ${error} > ${splitBound(want)}`);
    }
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
