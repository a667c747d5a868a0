// attention(q, k, v, options) on every `kind: attention` golden case through
// every backend of every wasm build, head-major and token-major; its options
// against each other; and its errors: JS types here, shapes and values from
// C++ with the package's names.
import { expectError } from './support/errors.mjs';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff } from './support/golden.mjs';
import { randomFloats } from './support/layers.mjs';
import { backendMatrix, loadBuilds, withMha } from './support/modules.mjs';

const builds = await loadBuilds();
const cases = goldenCaseNames('attention').map(loadGoldenCase);

const CAUSAL = { none: 'none', top_left: 'top-left', bottom_right: 'bottom-right' };

// A golden case as attention() arguments.
function attentionArguments(c) {
  const t = c.tensors;
  const { causal, scale, softcap, window } = c.config;
  const options = { causal: CAUSAL[causal], returnAttnWeights: true };
  if (scale !== null) options.scale = scale;
  if (softcap > 0) options.softcap = softcap;
  if (window !== null) options.window = window;
  if (t.attn_mask) options.attnMask = t.attn_mask;
  if (t.bool_mask) options.boolMask = t.bool_mask;
  if (t.key_padding_mask) options.keyPaddingMask = t.key_padding_mask.data;
  return { q: t.q, k: t.k, v: t.v, options };
}

// [B, H, T, d] -> [B, T, H*d]
function tokenMajor({ data, shape: [b, h, t, d] }) {
  const out = new Float32Array(data.length);
  for (let bi = 0; bi < b; bi++) {
    for (let hi = 0; hi < h; hi++) {
      for (let ti = 0; ti < t; ti++) {
        for (let e = 0; e < d; e++) {
          out[((bi * t + ti) * h + hi) * d + e] = data[((bi * h + hi) * t + ti) * d + e];
        }
      }
    }
  }
  return { data: out, shape: [b, t, h * d] };
}

function expectNear(c, name, got, want) {
  expect({ name, shape: got.shape }).toEqual({ name, shape: want.shape });
  const diff = maxAbsDiff(got.data, want.data);
  if (!(diff <= c.tolerance)) {
    throw new Error(`${c.name}: ${name} differs from PyTorch by ${diff} > ${c.tolerance}`);
  }
}

test('the golden folder has attention cases with every option', () => {
  const configs = cases.map((c) => c.config);
  expect(configs.some((x) => x.num_kv_heads < x.num_heads)).toBe(true);
  expect(configs.some((x) => x.causal === 'top_left')).toBe(true);
  expect(configs.some((x) => x.window !== null)).toBe(true);
  expect(configs.some((x) => x.softcap > 0)).toBe(true);
});

const matrix = backendMatrix(builds);

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  test.each(cases.map((c) => [c.name, c]))('%s: output and attention weights', (_, c) => {
    const a = attentionArguments(c);
    const r = module.attention(a.q, a.k, a.v, { ...a.options, backend });
    expectNear(c, 'output', r.output, c.tensors.output);
    expectNear(c, 'attnWeights', r.attnWeights, c.tensors.attn_weights);
  });

  test.each(cases.map((c) => [c.name, c]))('%s: token-major [B, T, H*d]', (_, c) => {
    const a = attentionArguments(c);
    const r = module.attention(tokenMajor(a.q), tokenMajor(a.k), tokenMajor(a.v), {
      ...a.options, backend, numHeads: c.config.num_heads, numKvHeads: c.config.num_kv_heads,
    });
    expectNear(c, 'output', r.output, tokenMajor(c.tensors.output));
  });

  // ONNX Attention's corners (query offsets, narrow masks, the scores before
  // the masks) against what they stand for.
  describe('ONNX corners', () => {
    const c = cases.find((x) => x.name === 'attn_basic');
    const { q, k, v } = attentionArguments(c);
    const [B, H, Tq, d] = q.shape;
    const Tk = k.shape[2];
    const run = (options) => module.attention(q, k, v, { ...options, backend });
    // Batch item b's part of a [B, ...] result.
    const item = (t, b) => t.data.subarray(b * (t.data.length / B), (b + 1) * (t.data.length / B));

    test('queryOffset: query i sits at key position queryOffset + i', () => {
      expect(run({ causal: 'top-left', queryOffset: 0 }).output.data)
        .toEqual(run({ causal: 'top-left' }).output.data);
      expect(run({ causal: 'top-left', queryOffset: Tk - Tq, window: [2, 0] }).output.data)
        .toEqual(run({ causal: 'bottom-right', window: [2, 0] }).output.data);
      // One per batch item: each as with its own alone; item 0's first two
      // queries sit before every key.
      const each = run({ causal: 'bottom-right', queryOffset: [-2, 5], returnAttnWeights: true });
      [-2, 5].forEach((offset, b) => {
        const alone = run({ causal: 'bottom-right', queryOffset: offset });
        expect(item(each.output, b)).toEqual(item(alone.output, b));
      });
      expect(each.output.data.subarray(0, 2 * d).every((x) => x === 0)).toBe(true);
      // ONNX with nonpad_kv_seqlen: query i of item b sees keys
      // j <= kvLengths[b] - Tq + i (and j < kvLengths[b]).
      const kvLengths = [Tk, 7];
      const w = run({ causal: 'top-left', kvLengths, queryOffset: kvLengths.map((n) => n - Tq),
        returnAttnWeights: true }).attnWeights.data;
      w.forEach((x, at) => {
        const j = at % Tk, i = Math.floor(at / Tk) % Tq, b = Math.floor(at / (H * Tq * Tk));
        expect({ at, visible: x > 0 })
          .toEqual({ at, visible: j < kvLengths[b] && j <= kvLengths[b] - Tq + i });
      });
    });

    test('a mask narrower than the keys masks the keys past it', () => {
      const keys = 5;
      const narrow = Float32Array.from({ length: Tq * keys }, (_, i) => (i % 4) / 4);
      const padded = Float32Array.from({ length: Tq * Tk },
        (_, i) => (i % Tk < keys ? narrow[Math.floor(i / Tk) * keys + (i % Tk)] : -Infinity));
      const a = run({ attnMask: { data: narrow, shape: [Tq, keys] }, returnAttnWeights: true });
      const b = run({ attnMask: { data: padded, shape: [Tq, Tk] } });
      expect(maxAbsDiff(a.output.data, b.output.data)).toBeLessThan(1e-6);
      a.attnWeights.data.forEach((x, at) => expect(x > 0).toBe(at % Tk < keys));
      const allowed = new Uint8Array(B * Tq * keys).fill(1);
      const booleanNarrow = run({ boolMask: { data: allowed, shape: [B, 1, Tq, keys] } });
      expect(maxAbsDiff(booleanNarrow.output.data,
        run({ attnMask: { data: padded.map((x) => (x === -Infinity ? x : 0)), shape: [Tq, Tk] } })
          .output.data)).toBeLessThan(1e-6);
    });

    test("returnScores 'scaled' and 'capped': every key's score before the masks", () => {
      const masks = { causal: 'top-left', kvLengths: [Tk, 3], softcap: 2, scale: 0.3 };
      const scaled = run({ ...masks, returnScores: 'scaled' }).scores;
      expect(scaled.shape).toEqual([B, H, Tq, Tk]);
      expect(scaled.data).toEqual(run({ scale: 0.3, returnScores: 'scaled' }).scores.data);
      scaled.data.forEach((s, at) => {
        // Query (b, h, i) = row `row` of q; key j of the same (b, h).
        const j = at % Tk, row = Math.floor(at / Tk), keys = Math.floor(row / Tq) * Tk * d;
        let dot = 0;
        for (let e = 0; e < d; e++) dot += q.data[row * d + e] * k.data[keys + j * d + e];
        expect(Math.abs(s - 0.3 * dot)).toBeLessThan(1e-5);
      });
      const capped = run({ ...masks, returnScores: 'capped' }).scores.data;
      capped.forEach((s, at) => expect(Math.abs(s - 2 * Math.tanh(scaled.data[at] / 2)))
        .toBeLessThan(1e-6));
      const masked = run({ ...masks, returnScores: 'masked' }).scores.data;
      expect(masked).toEqual(run({ ...masks, returnScores: true }).scores.data);
      masked.forEach((s, at) => {
        const j = at % Tk, i = Math.floor(at / Tk) % Tq, b = Math.floor(at / (H * Tq * Tk));
        expect(s).toBe(j <= i && j < masks.kvLengths[b] ? capped[at] : -Infinity);
      });
    });

    test('MultiHeadAttention.forward takes them too: attention() on its heads', () => {
      const config = { dModel: 8, numHeads: 2, backend };
      const weights = { wQ: randomFloats(64, 1), wK: randomFloats(64, 2), wV: randomFloats(64, 3),
        wO: randomFloats(64, 4), bQ: randomFloats(8, 5), bK: randomFloats(8, 6),
        bV: randomFloats(8, 7), bO: randomFloats(8, 8) };
      const x = { data: randomFloats(2 * 5 * 8, 9), shape: [2, 5, 8] };
      const memory = { data: randomFloats(2 * 7 * 8, 10), shape: [2, 7, 8] };
      const corners = { causal: 'top-left', queryOffset: [3, -1], returnAttnWeights: true,
        returnScores: 'scaled', attnMask: { data: randomFloats(5 * 4, 11), shape: [5, 4] } };
      withMha(module, config, (mha) => {
        mha.setWeights(weights);
        const r = mha.forward(x, memory, memory, { ...corners, returnIntermediates: true });
        const heads = module.attention(r.q, r.k, r.v, { ...corners, backend });
        expect(maxAbsDiff(r.headOutput.data, heads.output.data)).toBeLessThan(1e-6);
        expect(maxAbsDiff(r.attnWeights.data, heads.attnWeights.data)).toBeLessThan(1e-6);
        expect(maxAbsDiff(r.scores.data, heads.scores.data)).toBeLessThan(1e-6);
      });
    });
  });
});

describe('options', () => {
  const sa = builds.simd;
  const c = cases.find((x) => x.name === 'attn_basic');
  const { q, k, v } = attentionArguments(c);
  const [B, H, Tq] = q.shape;
  const Tk = k.shape[2];

  test('a boolean mask equals its additive twin, and both come back as scores', () => {
    const allowed = new Uint8Array(Tq * Tk).map((_, i) => (i % 3 === 0 ? 0 : 1));
    const additive = Float32Array.from(allowed, (x) => (x ? 0 : -Infinity));
    const b = sa.attention(q, k, v, { boolMask: allowed, returnScores: true });
    const a = sa.attention(q, k, v, { attnMask: { data: additive, shape: [Tq, Tk] } });
    expect(b.output.data).toEqual(a.output.data);
    expect(b.scores.shape).toEqual([B, H, Tq, Tk]);
    b.scores.data.forEach((s, i) => {
      if (allowed[i % (Tq * Tk)] === 0) expect(s).toBe(-Infinity);
      else expect(Number.isFinite(s)).toBe(true);
    });
  });

  test('kvLengths equal the key padding they stand for; a window [-1, -1] is none', () => {
    const lengths = [Tk, 2];
    const padding = new Uint8Array(B * Tk).map((_, i) => (i % Tk < lengths[Math.floor(i / Tk)]));
    const l = sa.attention(q, k, v, { kvLengths: lengths });
    expect(l.output.data).toEqual(sa.attention(q, k, v, { keyPaddingMask: padding }).output.data);
    expect(sa.attention(q, k, v, { window: [-1, -1] }).output.data)
      .toEqual(sa.attention(q, k, v).output.data);
  });

  test('a huge softcap changes nothing beyond rounding', () => {
    const capped = sa.attention(q, k, v, { softcap: 1e6 }).output.data;
    expect(maxAbsDiff(capped, sa.attention(q, k, v).output.data)).toBeLessThan(1e-6);
  });
});

describe('errors', () => {
  const sa = builds.simd;
  const t = (shape) => ({ data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape });
  const q = t([2, 6, 5, 8]);
  const k = t([2, 3, 7, 8]);

  test('shapes and values, judged in C++ with the options named as given', () => {
    expectError(() => sa.attention(q, t([2, 4, 7, 8]), t([2, 4, 7, 8])), RangeError,
      'attention: k: its heads (4) must divide the heads of q (6): query head h uses ' +
      'key/value head h / (Hq / Hkv); got q [2, 6, 5, 8], k [2, 4, 7, 8], v [2, 4, 7, 8]');
    expectError(() => sa.attention(q, k, k, { window: [-2, 0] }), RangeError,
      'attention: options.window[0]: expected -1 (unbounded) or a number >= 0, got -2');
    expectError(() => sa.attention(q, k, k, { scale: NaN }), RangeError,
      'attention: options.scale: expected a finite number float32 holds, got NaN');
    expectError(() => sa.attention(q, k, k, { softcap: 0 }), RangeError,
      'attention: options.softcap: expected a finite number > 0, got 0');
    expectError(() => sa.attention(q, k, k,
      { attnMask: { data: new Float32Array(2 * 6 * 5 * 7), shape: [2, 6, 7, 5] } }), RangeError,
    'attention: options.attnMask.shape: expected a shape that broadcasts to [B, H, Tq, Tk] = ' +
      '[2, 6, 5, 7]: [Tq, Tk] = [5, 7], [B or 1, H or 1, Tq, Tk] = [2 or 1, 6 or 1, 5, 7], ' +
      'the last dimension from 1 to Tk (the keys past it masked); got [2, 6, 7, 5]');
    expectError(() => sa.attention(q, k, k, { causal: 'upper' }), RangeError,
      "attention: options.causal: expected 'none', 'top-left' or 'bottom-right', got 'upper'");
    expectError(() => sa.attention(t([1, 5, 48]), t([1, 7, 48]), t([1, 7, 48]), { numHeads: 5 }),
      RangeError, 'attention: options.numHeads: must divide the 48 q features, got 5');
    expectError(() => sa.attention(q, t([2, 7, 24]), k), RangeError,
      'attention: k.shape: expected 4 dimensions as q has, got 3');
    expectError(() => sa.attention(q, k, k, { kvLengths: [7, 8] }), RangeError,
      'attention: options.kvLengths[1]: expected at most Tk (7), got 8');
    expectError(() => sa.attention(q, k, k,
      { attnMask: { data: new Float32Array(5 * 8), shape: [5, 8] } }), RangeError,
    'attention: options.attnMask.shape: expected a shape that broadcasts to [B, H, Tq, Tk] = ' +
      '[2, 6, 5, 7]: [Tq, Tk] = [5, 7], [B or 1, H or 1, Tq, Tk] = [2 or 1, 6 or 1, 5, 7], ' +
      'the last dimension from 1 to Tk (the keys past it masked); got [5, 8]');
    expectError(() => sa.attention(q, k, k, { causal: 'top-left', queryOffset: [1, 2, 3] }),
      RangeError, "attention: options.queryOffset: expected 1 value (every batch item's) or " +
      'B = 2 (one each), got 3');
    expectError(() => sa.attention(q, k, k, { queryOffset: 4 }), RangeError,
      'attention: options.queryOffset: given without options.causal or options.window, the ' +
      'frontiers it places');
    expectError(() => sa.attention(q, k, k, { returnScores: 'raw' }), RangeError,
      "attention: options.returnScores: expected a boolean or 'scaled', 'capped' or 'masked', " +
      "got 'raw'");
  });

  test('types, judged in JS', () => {
    expectError(() => sa.attention(q, k, k, { causal: true }), TypeError,
      "attention: options.causal: expected 'none', 'top-left' or 'bottom-right', got true");
    expectError(() => sa.attention(q, k, k, { window: [3] }), TypeError,
      'attention: options.window: expected an array of 2 integers, got [3]');
    expectError(() => sa.attention(q, k, k, { boolMask: new Float32Array(35) }), TypeError,
      'attention: options.boolMask: expected a Uint8Array (1 = may attend, 0 = masked), ' +
      'got Float32Array(35)');
    expectError(() => sa.attention(q, k, k, { sofcap: 3 }), TypeError,
      "attention: options: unknown key 'sofcap' (expected causal, scale, softcap, window, " +
      'attnMask, boolMask, keyPaddingMask, kvLengths, queryOffset, numHeads, numKvHeads, ' +
      'returnAttnWeights, returnScores, backend)');
    expectError(() => sa.attention(q, k, k, { causal: 'top-left', queryOffset: 1.5 }), TypeError,
      'attention: options.queryOffset: expected an integer or an array of integers, got 1.5');
    expectError(() => sa.attention(q, k, k, { causal: 'top-left', queryOffset: [] }), RangeError,
      'attention: options.queryOffset: given with no values; omit the option instead');
    expectError(() => sa.attention(q, k, k, { returnScores: 1 }), TypeError,
      "attention: options.returnScores: expected a boolean or 'scaled', 'capped' or 'masked', " +
      'got 1');
    expectError(() => sa.attention(q, { data: [1, 2], shape: [1] }, k), TypeError,
      'attention: k.data: expected a Float32Array, got [1, 2]');
    expectError(() => sa.attention(q, k, k, { boolMask: new Uint8Array(0) }), RangeError,
      'attention: options.boolMask: given with no values; omit the option instead');
  });
});
