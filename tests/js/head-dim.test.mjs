// config.headDim: an attention may hold some heads of a wider model. The
// output is sum_h z_h W_O^h + b_O, so two attentions holding heads {0, 1}
// and {2, 3} of a 4-head model, each given its slices of the weights and no
// output bias, add up to the whole model's output.
import { loadBuilds, track } from './support/modules.mjs';
import { expectError } from './support/errors.mjs';

const builds = await loadBuilds();
const D = 12, H = 4, DK = 3, DV = 2, B = 2, T = 5;

function random(n, seed) {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648 - 0.5;
  });
}

// Columns [from, to) of a row-major [rows, cols] matrix.
function columns(m, rows, cols, from, to) {
  const out = new Float32Array(rows * (to - from));
  for (let r = 0; r < rows; ++r) out.set(m.subarray(r * cols + from, r * cols + to), r * (to - from));
  return out;
}

const w = {
  wQ: random(D * H * DK, 1), wK: random(D * H * DK, 2), wV: random(D * H * DV, 3),
  wO: random(H * DV * D, 4), bQ: random(H * DK, 5), bK: random(H * DK, 6),
  bV: random(H * DV, 7), bO: random(D, 8),
};
const x = { data: random(B * T * D, 9), shape: [B, T, D] };

// Heads [h0, h1) of the model above, without the output bias.
function shard(h0, h1) {
  return {
    wQ: columns(w.wQ, D, H * DK, h0 * DK, h1 * DK), wK: columns(w.wK, D, H * DK, h0 * DK, h1 * DK),
    wV: columns(w.wV, D, H * DV, h0 * DV, h1 * DV), wO: w.wO.slice(h0 * DV * D, h1 * DV * D),
    bQ: w.bQ.slice(h0 * DK, h1 * DK), bK: w.bK.slice(h0 * DK, h1 * DK),
    bV: w.bV.slice(h0 * DV, h1 * DV), bO: new Float32Array(D),
  };
}

describe.each(Object.keys(builds))('%s build', (build) => {
  const module = builds[build];

  test('heads held apart add up to the whole attention', () => {
    const whole = track(new module.MultiHeadAttention({ dModel: D, numHeads: H, headDim: DK,
      headDimV: DV }));
    expect(whole.config.headDim).toBe(DK);
    whole.setWeights(w);
    const expected = whole.forward(x, undefined, undefined, { causal: true }).output.data;
    const sum = new Float32Array(expected.length);
    for (let i = 0; i < sum.length; ++i) sum[i] = w.bO[i % D];
    for (const [h0, h1] of [[0, 1], [1, 4]]) {
      const part = track(new module.MultiHeadAttention({ dModel: D, numHeads: h1 - h0,
        headDim: DK, headDimV: DV }));
      part.setWeights(shard(h0, h1));
      const out = part.forward(x, undefined, undefined, { causal: true }).output.data;
      for (let i = 0; i < sum.length; ++i) sum[i] += out[i];
    }
    for (let i = 0; i < sum.length; ++i) expect(sum[i]).toBeCloseTo(expected[i], 5);
  });

  test('headDim defaults to dModel / numHeads and is checked', () => {
    expect(track(new module.MultiHeadAttention({ dModel: D, numHeads: H })).config.headDimV)
      .toBe(D / H);
    expectError(() => new module.MultiHeadAttention({ dModel: 10, numHeads: 4 }), RangeError,
      'MultiHeadAttention: config.dModel: must be divisible by numHeads (4), got 10');
    const odd = track(new module.MultiHeadAttention({ dModel: 10, numHeads: 4, headDim: 3 }));
    expect(odd.config.headDimV).toBe(3);
    const oddBiases = { bQ: new Float32Array(12), bK: new Float32Array(12), bV: new Float32Array(12),
      bO: new Float32Array(10) };
    expectError(() => odd.setWeights({ ...shard(0, 4), ...oddBiases,
      wQ: new Float32Array(10 * 12 - 1) }),
      RangeError, 'MultiHeadAttention.setWeights: wQ: expected 120 values for shape [10, 12], ' +
      'got 119');
  });
});
