// MultiHeadAttention.forward and forwardIncremental with the masks
// attention() takes (boolean masks, masks broadcast from a shape, valid key
// lengths) and returnScores, through every backend of every wasm build: each
// against the form it must equal, the scores against attention() on the
// projected heads, and the worker pool against the synchronous API.
import { expectError } from './support/errors.mjs';
import { maxAbsDiff } from './support/golden.mjs';
import { backendMatrix, createAttentionPool, loadBuilds, track } from './support/modules.mjs';

const builds = await loadBuilds();
const B = 2, H = 4, TQ = 5, TK = 11, D = 16;

function random(n, seed) {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648 - 0.5;
  });
}
const bits = (n, seed) => Uint8Array.from(random(n, seed), (x) => (x > -0.2 ? 1 : 0));
const weights = {
  wQ: random(D * D, 1), wK: random(D * D, 2), wV: random(D * D, 3), wO: random(D * D, 4),
  bQ: random(D, 5), bK: random(D, 6), bV: random(D, 7), bO: random(D, 8),
};
const query = { data: random(B * TQ * D, 9), shape: [B, TQ, D] };
const memory = { data: random(B * TK * D, 10), shape: [B, TK, D] };

// [b, h, TQ, TK] values broadcast to [B, H, TQ, TK].
function expand(mask, b, h) {
  const out = new mask.constructor(B * H * TQ * TK);
  for (let bi = 0; bi < B; bi++) {
    for (let hi = 0; hi < H; hi++) {
      const from = ((b > 1 ? bi : 0) * h + (h > 1 ? hi : 0)) * TQ * TK;
      out.set(mask.subarray(from, from + TQ * TK), (bi * H + hi) * TQ * TK);
    }
  }
  return out;
}

// Scores equal: -Infinity at the same places, the rest within 1e-5.
function expectScores(got, want) {
  expect(got.shape).toEqual(want.shape);
  got.data.forEach((g, i) => {
    const w = want.data[i];
    if (g !== w && !(Number.isFinite(w) && Math.abs(g - w) < 1e-5)) {
      throw new Error(`scores[${i}]: ${g}, expected ${w}`);
    }
  });
}

// Outputs, probabilities and scores equal.
function expectSame(got, want) {
  expect(maxAbsDiff(got.output.data, want.output.data)).toBeLessThan(1e-5);
  expect(maxAbsDiff(got.attnWeights.data, want.attnWeights.data)).toBeLessThan(1e-5);
  expectScores(got.scores, want.scores);
}

const everything = { returnAttnWeights: true, returnScores: true };
const matrix = backendMatrix(builds);

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  const mha = () => {
    const m = track(new module.MultiHeadAttention({ dModel: D, numHeads: H, backend }));
    m.setWeights(weights);
    return m;
  };

  test('a boolean mask equals its additive twin', () => {
    const allowed = bits(B * H * TQ * TK, 11);
    const additive = Float32Array.from(allowed, (a) => (a ? 0 : -Infinity));
    const m = mha();
    expectSame(m.forward(query, memory, memory, { ...everything, boolMask: allowed }),
      m.forward(query, memory, memory, { ...everything, attnMask: additive }));
  });

  test.each([[1, 1], [B, 1], [1, H], [B, H]])('masks shaped [%i, %i, Tq, Tk] broadcast', (b, h) => {
    const additive = Float32Array.from(random(b * h * TQ * TK, 12), (x) => (x > 0.35 ? -Infinity : x));
    const allowed = bits(b * h * TQ * TK, 13);
    const shape = [b, h, TQ, TK];
    const m = mha();
    expectSame(m.forward(query, memory, memory, { ...everything,
      attnMask: { data: additive, shape }, boolMask: { data: allowed, shape } }),
    m.forward(query, memory, memory, { ...everything,
      attnMask: expand(additive, b, h), boolMask: expand(allowed, b, h) }));
  });

  test('valid lengths equal their key padding mask', () => {
    const lengths = [7, 1];
    const padding = Uint8Array.from({ length: B * TK }, (_, i) => (i % TK < lengths[Math.floor(i / TK)] ? 1 : 0));
    const m = mha();
    expectSame(m.forward(query, memory, memory, { ...everything, kvLengths: lengths }),
      m.forward(query, memory, memory, { ...everything, keyPaddingMask: padding }));
  });

  test('scores equal attention() on the projected heads', () => {
    const m = mha();
    const options = { causal: 'top-left', window: [6, -1], softcap: 2, scale: 0.6,
      boolMask: { data: bits(H * TQ * TK, 14), shape: [1, H, TQ, TK] } };
    const r = m.forward(query, memory, memory,
      { ...options, ...everything, returnIntermediates: true });
    const heads = module.attention(r.q, r.k, r.v, { ...options, ...everything, backend });
    expect(maxAbsDiff(r.headOutput.data, heads.output.data)).toBeLessThan(1e-5);
    expect(maxAbsDiff(r.attnWeights.data, heads.attnWeights.data)).toBeLessThan(1e-5);
    expectScores(r.scores, heads.scores);
  });

  test('a decoding step takes them too', () => {
    const m = mha();
    const cache = track(m.createKVCache({ batch: B, maxLength: TK }));
    m.forwardIncremental({ data: memory.data.subarray(0, B * (TK - 1) * D).slice(), shape: [B, TK - 1, D] }, cache);
    const step = { data: random(B * D, 15), shape: [B, 1, D] };
    const allowed = bits(B * H * TK, 16);
    const r = m.forwardIncremental(step, cache, { ...everything, boolMask: allowed, kvLengths: [TK, 4] });
    cache.truncate(TK - 1);
    const additive = Float32Array.from(allowed, (a) => (a ? 0 : -Infinity));
    const padding = Uint8Array.from({ length: B * TK }, (_, i) => (i < TK || i % TK < 4 ? 1 : 0));
    expectSame(r, m.forwardIncremental(step, cache,
      { ...everything, attnMask: additive, keyPaddingMask: padding }));
    expect(r.scores.shape).toEqual([B, H, 1, TK]);
  });
});

test('mask errors name the option, with the types checked in JS and shapes in C++', () => {
  const m = track(new builds.simd.MultiHeadAttention({ dModel: D, numHeads: H }));
  m.setWeights(weights);
  const call = (options) => () => m.forward(query, memory, memory, options);
  expectError(call({ boolMask: new Float32Array(TQ * TK) }), TypeError,
    'MultiHeadAttention.forward: options.boolMask: expected a Uint8Array (1 = may attend, ' +
    '0 = masked), got Float32Array(55)');
  expectError(call({ boolMask: { data: new Uint8Array(3 * TQ * TK), shape: [1, 3, TQ, TK] } }),
    RangeError, 'MultiHeadAttention.forward: options.boolMask.shape: expected a shape that ' +
    'broadcasts to [B, H, Tq, Tk] = [2, 4, 5, 11]: [Tq, Tk] = [5, 11], [B or 1, H or 1, Tq, Tk] ' +
    '= [2 or 1, 4 or 1, 5, 11], the last dimension from 1 to Tk (the keys past it masked); ' +
    'got [1, 3, 5, 11]');
  expectError(call({ kvLengths: [3, 12] }), RangeError,
    'MultiHeadAttention.forward: options.kvLengths[1]: expected at most Tk (11), got 12');
  expectError(call({ kvLengths: [] }), RangeError,
    'MultiHeadAttention.forward: options.kvLengths: given with no values; omit the option instead');
  expectError(call({ returnScores: 1 }), TypeError,
    "MultiHeadAttention.forward: options.returnScores: expected a boolean or 'scaled', " +
    "'capped' or 'masked', got 1");
});

test('the worker pool splits head-axis masks and joins the scores', async () => {
  const pool = await createAttentionPool({ workers: 2, build: 'simd' });
  try {
    const pooled = await pool.MultiHeadAttention({ dModel: D, numHeads: H });
    await pooled.setWeights(weights);
    const sync = track(new builds.simd.MultiHeadAttention({ dModel: D, numHeads: H }));
    sync.setWeights(weights);
    for (const options of [
      { boolMask: { data: bits(H * TQ * TK, 17), shape: [1, H, TQ, TK] } },
      { attnMask: random(B * H * TQ * TK, 18), kvLengths: [9, 3] },
      { boolMask: { data: bits(B * TQ * TK, 19), shape: [B, 1, TQ, TK] }, causal: 'top-left' },
    ]) {
      const got = await pooled.forward(query, memory, memory, { ...options, ...everything });
      const want = sync.forward(query, memory, memory, { ...options, ...everything });
      expect(maxAbsDiff(got.output.data, want.output.data)).toBeLessThan(1e-5);
      // Value for value: the pool's arrays come from another realm.
      for (const key of ['attnWeights', 'scores']) {
        expect({ data: Array.from(got[key].data), shape: got[key].shape })
          .toEqual({ data: Array.from(want[key].data), shape: want[key].shape });
      }
    }
    await pooled.dispose();
  } finally {
    await pool.dispose();
  }
});
