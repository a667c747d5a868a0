// The layers' self-attention options (window, scale, softcap, attnMask,
// boolMask, kvLengths) through every backend of every wasm build: each
// against the form it must equal, a decoder decoding token by token with a
// window against its full forward with that window, the options' effect, and
// their errors with the layer's method named.
import { expectError } from './support/errors.mjs';
import { maxAbsDiff } from './support/golden.mjs';
import { concatTokens, randomFloats, randomLayerWeights, sliceTokens } from './support/layers.mjs';
import { backendMatrix, loadBuilds, track } from './support/modules.mjs';

const builds = await loadBuilds();
const B = 2, T = 6, S = 4, D = 16, H = 4, F = 24;
const config = { dModel: D, numHeads: H, ffnDim: F, normFirst: true };
const x = { data: randomFloats(B * T * D, 1), shape: [B, T, D] };
const memory = { data: randomFloats(B * S * D, 2), shape: [B, S, D] };
const allowed = Uint8Array.from(randomFloats(H * T * T, 3), (v) => (v > -0.25 ? 1 : 0));
const additive = Float32Array.from(allowed, (a) => (a ? 0 : -Infinity));

const matrix = backendMatrix(builds);

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  const layer = (Kind, decoder) => {
    const l = track(new module[Kind]({ ...config, backend }));
    l.setWeights(randomLayerWeights(D, F, 4, { decoder }));
    return l;
  };

  test('the encoder: a boolean mask equals its additive twin, the options take effect', () => {
    const encoder = layer('TransformerEncoderLayer', false);
    const shape = [1, H, T, T];
    const options = { window: [2, 1], scale: 0.4, softcap: 3, kvLengths: [T, 4] };
    const boolean = encoder.forward(x, { ...options, boolMask: { data: allowed, shape } });
    const twin = encoder.forward(x, { ...options, attnMask: { data: additive, shape } });
    expect(maxAbsDiff(boolean.data, twin.data)).toBeLessThan(1e-5);
    expect(maxAbsDiff(boolean.data, encoder.forward(x).data)).toBeGreaterThan(1e-3);
    expect(encoder.forward(x, { window: [-1, -1] }).data).toEqual(encoder.forward(x).data);
  });

  test('the decoder: a windowed step by step equals its full windowed forward', () => {
    const decoder = layer('TransformerDecoderLayer', true);
    const full = decoder.forward(x, memory, { window: [2, -1], kvLengths: [T, T] });
    expect(maxAbsDiff(full.data, decoder.forward(x, memory).data)).toBeGreaterThan(1e-3);
    const cache = track(decoder.createKVCache({ batch: B, maxLength: T }));
    const kv = track(decoder.precomputeMemory(memory));
    const steps = [];
    for (let t = 0; t < T; t++) {
      steps.push(decoder.forwardIncremental(sliceTokens(x, t, t + 1), cache, kv, { window: [2, -1] }));
    }
    expect(maxAbsDiff(concatTokens(steps).data, full.data)).toBeLessThan(1e-4);
  });
});

test('causal takes MultiHeadAttention\'s values: a boolean or an alignment\'s name', () => {
  const encoder = track(new builds.simd.TransformerEncoderLayer(config));
  encoder.setWeights(randomLayerWeights(D, F, 4));
  const causal = encoder.forward(x, { causal: true }).data;
  expect(maxAbsDiff(causal, encoder.forward(x).data)).toBeGreaterThan(1e-3);
  // Over T queries and T keys both alignments are j <= i.
  expect(encoder.forward(x, { causal: 'top-left' }).data).toEqual(causal);
  expect(encoder.forward(x, { causal: 'bottom-right' }).data).toEqual(causal);
  expect(encoder.forward(x, { causal: 'none' }).data).toEqual(encoder.forward(x).data);
  const decoder = track(new builds.simd.TransformerDecoderLayer(config));
  decoder.setWeights(randomLayerWeights(D, F, 4, { decoder: true }));
  const masked = decoder.forward(x, memory).data;
  expect(decoder.forward(x, memory, { causal: 'top-left' }).data).toEqual(masked);
  expect(decoder.forward(x, memory, { causal: 'none' }).data)
    .toEqual(decoder.forward(x, memory, { causal: false }).data);
  const kv = track(decoder.precomputeMemory(memory));
  expect(decoder.forward(x, kv, { causal: 'bottom-right' }).data)
    .toEqual(decoder.forward(x, kv).data);
  expectError(() => encoder.forward(x, { causal: 'diagonal' }), RangeError,
    "TransformerEncoderLayer.forward: options.causal: expected 'none', 'top-left' or " +
    "'bottom-right', got 'diagonal'");
  expectError(() => decoder.forward(x, memory, { causal: 1 }), TypeError,
    "TransformerDecoderLayer.forward: options.causal: expected a boolean or 'none', 'top-left' " +
    'or \'bottom-right\', got 1');
});

test('errors name the layer method and the option', () => {
  const encoder = track(new builds.simd.TransformerEncoderLayer(config));
  encoder.setWeights(randomLayerWeights(D, F, 4));
  expectError(() => encoder.forward(x, { softcap: -1 }), RangeError,
    'TransformerEncoderLayer.forward: options.softcap: expected a finite number > 0, got -1');
  expectError(() => encoder.forward(x, { boolMask: { data: allowed, shape: [2, H, T, T] } }),
    RangeError, 'TransformerEncoderLayer.forward: options.boolMask: expected 288 values for ' +
    'shape [2, 4, 6, 6], got 144');
  expectError(() => encoder.forward(x, { windows: [1, 1] }), TypeError,
    "TransformerEncoderLayer.forward: options: unknown key 'windows' (expected keyPaddingMask, " +
    'causal, window, scale, softcap, attnMask, boolMask, kvLengths, training)');
  const decoder = track(new builds.simd.TransformerDecoderLayer(config));
  decoder.setWeights(randomLayerWeights(D, F, 4, { decoder: true }));
  const cache = track(decoder.createKVCache({ batch: B, maxLength: T }));
  expectError(() => decoder.forwardIncremental(sliceTokens(x, 0, 1), cache, memory,
    { kvLengths: [1, 2] }), RangeError,
  'TransformerDecoderLayer.forwardIncremental: options.kvLengths[1]: expected at most Tk (1), got 2');
  expect(cache.length).toBe(0);
});
