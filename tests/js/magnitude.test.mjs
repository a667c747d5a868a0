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
