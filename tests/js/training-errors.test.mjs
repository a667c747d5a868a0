// The training build's refusals that C++ composes: a dOutput of the right
// length in another shape than the forward's output; an Adam eps that is 0
// in float32; an optimizer step that would make a weight or a moment
// non-finite, which names the optimizer, the weight and what would
// overflow, and changes nothing.
import { expectError, thrown } from './support/errors.mjs';
import { createAttentionModule, track } from './support/modules.mjs';

const sa = await createAttentionModule({ training: true });
const D = 8;
const H = 2;

function random(n, seed, scale = 1) {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 2147483648 - 0.5) * 2 * scale;
  });
}
const attentionWeights = (seed = 1) => ({
  wQ: random(D * D, seed, 0.35), wK: random(D * D, seed + 1, 0.35),
  wV: random(D * D, seed + 2, 0.35), wO: random(D * D, seed + 3, 0.35),
  bQ: random(D, seed + 4, 0.35), bK: random(D, seed + 5, 0.35), bV: random(D, seed + 6, 0.35),
  bO: random(D, seed + 7, 0.35),
});
const x = { data: random(2 * 3 * D, 40), shape: [2, 3, D] };

describe('backward: dOutput in the forward output\'s shape', () => {
  const expected = (where, given) => `${where}.backward: dOutput: expected shape [2, 3, 8] ` +
    `(the training forward's output's), got ${given}`;
  // The output's 48 values as [3, 2, 8], [1, 6, 8] and [2, 6, 4].
  const wrong = [[[3, 2, D], '[3, 2, 8]'], [[1, 6, D], '[1, 6, 8]'], [[2, 6, 4], '[2, 6, 4]']];

  test('MultiHeadAttention', () => {
    const mha = track(new sa.MultiHeadAttention({ dModel: D, numHeads: H }));
    mha.setWeights(attentionWeights());
    const out = mha.forward(x, undefined, undefined, { training: true }).output;
    for (const [shape, given] of wrong) {
      expectError(() => mha.backward({ data: out.data, shape }), RangeError,
        expected('MultiHeadAttention', given));
    }
    // The state stays: the right shape gives dInput in the input's.
    expect(mha.backward({ data: out.data, shape: out.shape }).dInput.shape).toEqual([2, 3, D]);
  });

  test('TransformerEncoderLayer and TransformerDecoderLayer', () => {
    const norm = { gamma: new Float32Array(D).fill(1), beta: new Float32Array(D) };
    const ffn = { w1: random(D * 16, 50, 0.3), b1: random(16, 51, 0.3),
      w2: random(16 * D, 52, 0.25), b2: random(D, 53, 0.25) };
    const config = { dModel: D, numHeads: H, ffnDim: 16 };
    const encoder = track(new sa.TransformerEncoderLayer(config));
    encoder.setWeights({ attention: attentionWeights(), ffn, norm1: norm, norm2: norm });
    const decoder = track(new sa.TransformerDecoderLayer(config));
    decoder.setWeights({ selfAttention: attentionWeights(), crossAttention: attentionWeights(9),
      ffn, norm1: norm, norm2: norm, norm3: norm });
    const memory = { data: random(2 * 4 * D, 60), shape: [2, 4, D] };
    const y = encoder.forward(x, { training: true });
    const z = decoder.forward(x, memory, { training: true });
    for (const [shape, given] of wrong) {
      expectError(() => encoder.backward({ data: y.data, shape }), RangeError,
        expected('TransformerEncoderLayer', given));
      expectError(() => decoder.backward({ data: z.data, shape }), RangeError,
        expected('TransformerDecoderLayer', given));
    }
    expect(encoder.backward(y).dInput.shape).toEqual([2, 3, D]);
    expect(decoder.backward(z).dMemory.shape).toEqual([2, 4, D]);
  });
});

test('Adam: an eps that is 0 in float32 is refused', () => {
  expectError(() => new sa.Adam({ eps: 1e-60 }), RangeError,
    'Adam: options.eps: expected a finite number > 0 that float32 can hold (1.4e-45 to ' +
    '3.4e38), got 1e-60');
});

describe('a step that would make a weight or a moment non-finite', () => {
  const trained = (weights) => {
    const mha = track(new sa.MultiHeadAttention({ dModel: D, numHeads: H }));
    mha.setWeights(weights);
    return mha;
  };
  const backward = (mha, d) => {
    mha.forward(x, undefined, undefined, { training: true });
    mha.backward({ data: d, shape: [2, 3, D] });
  };
  const output = (mha) => mha.forward(x).output.data;
  const small = random(2 * 3 * D, 70, 1e-3);

  test('SGD with lr 1e38: refused naming the weight; the object keeps its weights and steps on', () => {
    const mha = trained(attentionWeights());
    const before = output(mha);
    // Gradients of a few units: lr times them is past float32.
    backward(mha, random(2 * 3 * D, 71, 10));
    const e = thrown(() => track(new sa.SGD({ lr: 1e38 })).step(mha));
    expect(e).toBeInstanceOf(RangeError);
    expect(e.message).toMatch(/^SGD\.step: (wQ|bQ|wK|bK|wV|bV|wO|bO): SGD step refused: options\.lr times its update would overflow float32; no weight or optimizer state changed$/);
    expect(output(mha)).toEqual(before);
    // The gradients are still there: an ordinary step takes them.
    track(new sa.SGD({ lr: 1e-3 })).step(mha);
    expect(output(mha)).not.toEqual(before);
  });

  test('Adam with lr 3.5e38 (its step size is +Infinity in float32): the first weight named', () => {
    const mha = trained(attentionWeights());
    backward(mha, small);
    for (const [options, name] of [[{ lr: 3.5e38 }, 'Adam'],
      [{ lr: 3.5e38, decoupledWeightDecay: true }, 'AdamW']]) {
      expectError(() => track(new sa.Adam(options)).step(mha), RangeError,
        `Adam.step: wQ: ${name} step refused: options.lr times its update would overflow ` +
        'float32; no weight or optimizer state changed');
    }
  });

  // bO[0] is 3.35e38 and wO's column 0 zero (no other gradient is large):
  // dOutput -1.5e37 in column 0 of its 6 rows gives bO[0] a gradient of
  // -9e37, which would take it to 3.44e38; dOutput 1e30 gives gradients whose squares overflow Adam's v.
  // Refused, and the optimizer's state stays: later steps match those of a
  // twin that never saw the refused one.
  test.each([
    ['SGD', () => new sa.SGD({ lr: 0.1, momentum: 0.9 }),
      (d) => { for (let r = 0; r < 6; r++) d[r * D] = -1.5e37; },
      'SGD.step: bO: SGD step refused: options.lr times its update would overflow float32; ' +
      'no weight or optimizer state changed'],
    ['Adam', () => new sa.Adam({ lr: 0.01 }), (d) => d.fill(1e30),
      'Adam.step: wQ: Adam step refused: its second moment (the gradients\' squares: ' +
      'gradients beyond 1.8e19 in magnitude) would overflow float32; no weight or optimizer ' +
      'state changed'],
  ])('%s: nothing changes, and the next steps are a twin\'s', (_, make, fill, message) => {
    const w = attentionWeights();
    w.bO[0] = 3.35e38;
    for (let r = 0; r < D; r++) w.wO[r * D] = 0;
    const a = trained(w);
    const b = trained(w);
    const optA = track(make());
    const optB = track(make());
    backward(a, small);
    optA.step(a);
    backward(b, small);
    optB.step(b);
    const before = output(a);
    const huge = new Float32Array(2 * 3 * D);
    fill(huge);
    backward(a, huge);
    expectError(() => optA.step(a), RangeError, message);
    expect(output(a)).toEqual(before);
    for (let i = 0; i < 2; i++) {
      backward(a, small);
      optA.step(a);
      backward(b, small);
      optB.step(b);
      expect(output(a)).toEqual(output(b));
    }
  });
});
