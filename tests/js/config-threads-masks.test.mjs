// config.threads on every build (the package's builds run on one thread, and
// say so when asked for more) and masks given with no values (refused: an
// omitted option is how to say "no mask").
import { loadBuilds, track } from './support/modules.mjs';
import { expectError } from './support/errors.mjs';

const builds = await loadBuilds();
const ones = (n) => new Float32Array(n).fill(0.25);
const weights = { wQ: ones(64), wK: ones(64), wV: ones(64), wO: ones(64), bQ: ones(8),
  bK: ones(8), bV: ones(8), bO: ones(8) };
const x = { data: ones(2 * 3 * 8), shape: [2, 3, 8] };
const NO_VALUES = 'given with no values; omit the option instead';

describe.each(Object.keys(builds))('%s build', (build) => {
  const module = builds[build];

  test('threads: 1 by default, 0 is every processor (1 here), more is refused', () => {
    expect(track(new module.MultiHeadAttention({ dModel: 8, numHeads: 2 })).config.threads)
      .toBe(1);
    expect(track(new module.MultiHeadAttention({ dModel: 8, numHeads: 2, threads: 0 }))
      .config.threads).toBe(1);
    expectError(() => new module.MultiHeadAttention({ dModel: 8, numHeads: 2, threads: 2 }),
      RangeError, 'MultiHeadAttention: threads: this build runs on one thread (it was ' +
      'compiled without threads), got 2');
    expectError(() => new module.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 4,
      threads: 4 }), RangeError, 'TransformerEncoderLayer: threads: this build runs on one ' +
      'thread (it was compiled without threads), got 4');
    expectError(() => new module.MultiHeadAttention({ dModel: 8, numHeads: 2, threads: 1.5 }),
      RangeError, 'MultiHeadAttention: config.threads: expected a non-negative integer, got 1.5');
    expectError(() => new module.MultiHeadAttention({ dModel: 8, numHeads: 2, threads: '2' }),
      TypeError, 'MultiHeadAttention: config.threads: expected an integer, got "2"');
    const layer = track(new module.TransformerDecoderLayer({ dModel: 8, numHeads: 2, ffnDim: 4,
      threads: 1 }));
    expect(layer.config.threads).toBe(1);
  });

  test('masks given with no values are refused everywhere', () => {
    const mha = track(new module.MultiHeadAttention({ dModel: 8, numHeads: 2 }));
    mha.setWeights(weights);
    const empty = new Uint8Array(0);
    expectError(() => mha.forward(x, undefined, undefined, { keyPaddingMask: empty }), RangeError,
      `MultiHeadAttention.forward: options.keyPaddingMask: ${NO_VALUES}`);
    expectError(() => mha.forward(x, undefined, undefined, { attnMask: new Float32Array(0) }),
      RangeError, `MultiHeadAttention.forward: options.attnMask: ${NO_VALUES}`);
    const cache = track(mha.createKVCache({ batch: 2, maxLength: 4 }));
    expectError(() => mha.forwardIncremental(x, cache, { keyPaddingMask: empty }), RangeError,
      `MultiHeadAttention.forwardIncremental: options.keyPaddingMask: ${NO_VALUES}`);
    expect(cache.length).toBe(0);
    expectError(() => mha.precomputeKeyValue(x, { keyPaddingMask: empty }), RangeError,
      `MultiHeadAttention.precomputeKeyValue: options.keyPaddingMask: ${NO_VALUES}`);
    const norm = { gamma: ones(8), beta: ones(8) };
    const ffn = { w1: ones(32), b1: ones(4), w2: ones(32), b2: ones(8) };
    const encoder = track(new module.TransformerEncoderLayer({ dModel: 8, numHeads: 2,
      ffnDim: 4 }));
    encoder.setWeights({ attention: weights, ffn, norm1: norm, norm2: norm });
    expectError(() => encoder.forward(x, { keyPaddingMask: empty }), RangeError,
      `TransformerEncoderLayer.forward: options.keyPaddingMask: ${NO_VALUES}`);
    const decoder = track(new module.TransformerDecoderLayer({ dModel: 8, numHeads: 2,
      ffnDim: 4 }));
    decoder.setWeights({ selfAttention: weights, crossAttention: weights, ffn, norm1: norm,
      norm2: norm, norm3: norm });
    expectError(() => decoder.forward(x, x, { memoryKeyPaddingMask: empty }), RangeError,
      `TransformerDecoderLayer.forward: options.memoryKeyPaddingMask: ${NO_VALUES}`);
    // Omitted, the same calls run.
    expect(mha.forward(x).output.shape).toEqual([2, 3, 8]);
    expect(decoder.forward(x, x).shape).toEqual([2, 3, 8]);
  });
});
