// Large finite inputs on every build and backend: the answer is either the
// float64 reference's (within float32 error at the output's own scale) or a
// RangeError naming the computation that would overflow float32; never NaN,
// and never an error that blames an argument the caller did not pass.
import { thrown } from './support/errors.mjs';
import { loadBuilds, track } from './support/modules.mjs';

const builds = await loadBuilds();
const D = 8;
const H = 2;

function random(n, seed, scale) {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 2147483648 - 0.5) * 2 * scale;
  });
}
const w = D ** -0.5;
const weights = { wQ: random(D * D, 1, w), wK: random(D * D, 2, w), wV: random(D * D, 3, w),
  wO: random(D * D, 4, w), bQ: random(D, 5, w), bK: random(D, 6, w), bV: random(D, 7, w),
  bO: random(D, 8, w) };

// Self-attention of x [T, D] in float64, straight from the definition.
function reference(x, T) {
  const project = (W, b) => Array.from({ length: T }, (_, t) => Array.from({ length: D },
    (_, j) => b[j] + x.slice(t * D, t * D + D).reduce((acc, v, i) => acc + v * W[i * D + j], 0)));
  const q = project(weights.wQ, weights.bQ);
  const k = project(weights.wK, weights.bK);
  const v = project(weights.wV, weights.bV);
  const dk = D / H;
  const z = Array.from({ length: T }, () => new Array(D).fill(0));
  for (let h = 0; h < H; h++) {
    for (let i = 0; i < T; i++) {
      const s = k.map((kj) => q[i].slice(h * dk, h * dk + dk)
        .reduce((acc, qv, c) => acc + qv * kj[h * dk + c], 0) / Math.sqrt(dk));
      const m = Math.max(...s);
      const e = s.map((sv) => Math.exp(sv - m));
      const sum = e.reduce((a, b) => a + b, 0);
      for (let j = 0; j < T; j++) {
        for (let c = 0; c < dk; c++) z[i][h * dk + c] += (e[j] / sum) * v[j][h * dk + c];
      }
    }
  }
  return z.flatMap((zi) => Array.from({ length: D },
    (_, j) => weights.bO[j] + zi.reduce((acc, zv, c) => acc + zv * weights.wO[c * D + j], 0)));
}

const cases = Object.entries(builds).flatMap(([build, module]) =>
  module.backends.map((backend) => [build, backend]));

describe.each(cases)('%s build, %s', (build, backend) => {
  const module = builds[build];
  const mha = () => {
    const m = track(new module.MultiHeadAttention({ dModel: D, numHeads: H, backend }));
    m.setWeights(weights);
    return m;
  };

  test.each([1e3, 1e6, 1e9])('inputs of magnitude %g: the float64 result', (scale) => {
    const T = 5;
    const x = random(T * D, 11, scale);
    const got = mha().forward({ data: x, shape: [T, D] }).output.data;
    const want = reference(x, T);
    const tolerance = 1e-4 * Math.max(1, ...want.map(Math.abs));
    want.forEach((value, i) => expect(Math.abs(got[i] - value)).toBeLessThanOrEqual(tolerance));
  });

  test.each([1e20, 1e25, 1e30])('inputs of magnitude %g: refused, not NaN', (scale) => {
    const m = mha();
    const e = thrown(() => m.forward({ data: random(4 * D, 12, scale), shape: [4, D] }));
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toMatch(/^MultiHeadAttention\.forward: attention scores may overflow float32: .* exceeds 3\.40282e\+38; the query and key inputs or weights are too large in magnitude: scale them down$/);
    // The same object still computes.
    expect(m.forward({ data: random(4 * D, 12, 1), shape: [4, D] }).output.data.every(Number.isFinite))
      .toBe(true);
  });

  test('a KV cache never takes a non-finite value and its contents go back in', () => {
    const m = mha();
    const cache = track(m.createKVCache({ batch: 1, maxLength: 8 }));
    m.forwardIncremental({ data: random(2 * D, 13, 1), shape: [2, D] }, cache);
    const e = thrown(() => m.forwardIncremental({ data: random(D, 14, 3e38), shape: [1, D] }, cache));
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toMatch(/^MultiHeadAttention\.forwardIncremental: (the (key|value) projection x W_[kv] \+ b_[kv] overflowed float32|attention scores may overflow float32)/);
    expect(cache.length).toBe(2);
    cache.append(cache.keys(), cache.values());
    expect(cache.length).toBe(4);
  });

  // The output is a weighted mean of the values; the kernel's sum over the
  // keys before the division is up to (keys) x max|v|: 64 equal keys with
  // values 1e37 sum to 6.4e38, past float32. 1 query and 40 (two query
  // blocks); heads of 5 values are padded in the SIMD builds.
  test.each([1, 40])('attention(): values whose sum overflows give their mean (%i queries)',
    (Tq) => {
      const Tk = 64;
      const q = { data: new Float32Array(H * Tq * 8), shape: [1, H, Tq, 8] };
      const k = { data: new Float32Array(H * Tk * 8), shape: [1, H, Tk, 8] };
      const v = { data: new Float32Array(H * Tk * 5).fill(1e37), shape: [1, H, Tk, 5] };
      const out = module.attention(q, k, v, { backend }).output;
      expect(out.shape).toEqual([1, H, Tq, 5]);
      for (const z of out.data) expect(Math.abs(z - 1e37)).toBeLessThanOrEqual(1e31);
    });

  test('attention(): a mean that rounds past float32 is refused by name, never Infinity', () => {
    const Tk = 64;
    const q = { data: new Float32Array(8), shape: [1, 1, 1, 8] };
    const k = { data: new Float32Array(Tk * 8), shape: [1, 1, Tk, 8] };
    const v = { data: new Float32Array(Tk * 8).fill(3.4028234663852886e38), shape: [1, 1, Tk, 8] };
    let out;
    try {
      out = module.attention(q, k, v, { backend }).output.data;
    } catch (e) {
      expect(e).toBeInstanceOf(RangeError);
      expect(e.message).toMatch(/^attention: the attention softmax\(q k\^T\) v overflowed float32 \(element \d+ is \+Infinity\); v is too large in magnitude$/);
      return;
    }
    for (const z of out) expect(Math.abs(z / 3.4028234663852886e38 - 1)).toBeLessThanOrEqual(1e-6);
  });

  test('MultiHeadAttention over values whose sum overflows: the mean, not an error', () => {
    // V = x W_v = 1e37 for every token, equal scores (W_q = W_k = 0), W_o the
    // identity: the output is 1e37.
    const T = 64;
    const wO = new Float32Array(D * D);
    for (let i = 0; i < D; i++) wO[i * D + i] = 1;
    const m = track(new module.MultiHeadAttention({ dModel: D, numHeads: H, backend }));
    m.setWeights({ wQ: new Float32Array(D * D), wK: new Float32Array(D * D),
      wV: new Float32Array(D * D).fill(1.25e36), wO, bQ: new Float32Array(D),
      bK: new Float32Array(D), bV: new Float32Array(D), bO: new Float32Array(D) });
    const y = m.forward({ data: new Float32Array(T * D).fill(1), shape: [T, D] }).output.data;
    for (const z of y) expect(Math.abs(z - 1e37)).toBeLessThanOrEqual(1e31);
  });

  test.each([false, true])('layers with 1e30 inputs (normFirst %s): RangeError, no blamed argument',
    (normFirst) => {
      const norm = { gamma: random(D, 20, 1), beta: random(D, 21, 1) };
      const ffn = { w1: random(D * 16, 22, 0.3), b1: random(16, 23, 0.3),
        w2: random(16 * D, 24, 0.25), b2: random(D, 25, 0.25) };
      const config = { dModel: D, numHeads: H, ffnDim: 16, normFirst, backend };
      const encoder = track(new module.TransformerEncoderLayer(config));
      encoder.setWeights({ attention: weights, ffn, norm1: norm, norm2: norm });
      const decoder = track(new module.TransformerDecoderLayer(config));
      decoder.setWeights({ selfAttention: weights, crossAttention: weights, ffn, norm1: norm,
        norm2: norm, norm3: norm });
      const x = { data: random(3 * D, 26, 1e30), shape: [3, D] };
      const memory = { data: random(4 * D, 27, 1), shape: [4, D] };
      for (const e of [thrown(() => encoder.forward(x)), thrown(() => decoder.forward(x, memory))]) {
        expect(e).toBeInstanceOf(RangeError);
        expect(e.message).toMatch(/float32/);
        expect(e.message).not.toMatch(/query:|element \d+ is NaN/);
      }
    });
});
