// TransformerEncoderLayer, TransformerDecoderLayer, positionalEncoding and
// layerNorm: the golden encoder_layer / decoder_layer / positional_encoding
// cases of ../shared/golden on every backend of every build, and the
// variants the golden folder has no case of (pre-LN, GELU in both forms,
// masks, unbatched input) against a float64 reference written from the
// definitions (support/layers.mjs).
import { goldenCaseNames, loadGoldenCase, maxAbsDiff } from './support/golden.mjs';
import {
  decoderArguments, encoderArguments, randomFloats, randomLayerWeights, referenceDecoder,
  referenceEncoder, referenceLayerNorm,
} from './support/layers.mjs';
import { backendMatrix, loadBuilds, track } from './support/modules.mjs';

const builds = await loadBuilds();
const encoderCases = goldenCaseNames('encoder_layer').map(loadGoldenCase);
const decoderCases = goldenCaseNames('decoder_layer').map(loadGoldenCase);
const peCases = goldenCaseNames('positional_encoding').map(loadGoldenCase);

const matrix = backendMatrix(builds);

function expectClose(name, actual, expected, tolerance) {
  const diff = maxAbsDiff(actual, expected);
  if (!(diff <= tolerance)) throw new Error(`${name}: differs by ${diff} > ${tolerance}`);
}

test('the golden folder has layer and positional encoding cases', () => {
  expect(encoderCases.length).toBeGreaterThanOrEqual(1);
  expect(decoderCases.length).toBeGreaterThanOrEqual(1);
  expect(peCases.length).toBeGreaterThanOrEqual(1);
});

describe.each(matrix)('%s build, %s backend', (build, backend, module) => {
  test.each(encoderCases.map((c) => [c.name, c]))('encoder %s', (_, c) => {
    const a = encoderArguments(c);
    const layer = track(new module.TransformerEncoderLayer({ ...a.config, backend }));
    expect(layer.config.backend).toBe(backend);
    layer.setWeights(a.weights);
    const out = layer.forward(a.input);
    expect(out.shape).toEqual(a.output.shape);
    expectClose(c.name, out.data, a.output.data, c.tolerance);
  });

  test.each(decoderCases.map((c) => [c.name, c]))('decoder %s, memory as a tensor and precomputed', (_, c) => {
    const a = decoderArguments(c);
    const layer = track(new module.TransformerDecoderLayer({ ...a.config, backend }));
    layer.setWeights(a.weights);
    const out = layer.forward(a.input, a.memory);
    expect(out.shape).toEqual(a.output.shape);
    expectClose(`${c.name} (tensor memory)`, out.data, a.output.data, c.tolerance);
    const memory = track(layer.precomputeMemory(a.memory));
    expect([memory.batch, memory.tokens]).toEqual(a.memory.shape.slice(0, 2));
    expectClose(`${c.name} (precomputed)`, layer.forward(a.input, memory).data, a.output.data,
      c.tolerance);
  });

  test.each(peCases.map((c) => [c.name, c]))('positionalEncoding %s', (_, c) => {
    const { t, d_model: d } = c.config;
    const pe = module.positionalEncoding(t, d);
    expect(pe.shape).toEqual([t, d]);
    expectClose(c.name, pe.data, c.tensors.output.data, c.tolerance);
  });

  test('layerNorm against the float64 reference', () => {
    const x = { data: randomFloats(3 * 5 * 24, 11, 3), shape: [3, 5, 24] };
    const gamma = randomFloats(24, 12);
    const beta = randomFloats(24, 13);
    for (const eps of [1e-5, 1e-3]) {
      const y = module.layerNorm(x, { gamma, beta, eps, backend });
      expect(y.shape).toEqual([3, 5, 24]);
      expectClose(`layerNorm eps ${eps}`, y.data, referenceLayerNorm(x, gamma, beta, eps), 1e-5);
    }
    const unbatched = module.layerNorm({ data: x.data.subarray(0, 5 * 24), shape: [5, 24] },
      { gamma, beta, backend });
    expect(unbatched.shape).toEqual([5, 24]);
  });
});

// Pre-LN, GELU (erf and tanh), causal and padded: what the golden cases do
// not cover, on the default backend of each build.
const D = 16;
const F = 40;
const variants = [
  ['post-LN, relu', { normFirst: false, activation: 'relu' }],
  ['pre-LN, relu', { normFirst: true, activation: 'relu' }],
  ['post-LN, gelu', { normFirst: false, activation: 'gelu' }],
  ['pre-LN, gelu_erf', { normFirst: true, activation: 'gelu_erf' }],
  ['pre-LN, gelu_tanh, eps 1e-3', { normFirst: true, activation: 'gelu_tanh', eps: 1e-3 }],
];

describe.each(Object.keys(builds))('%s build: layer variants against the float64 reference', (build) => {
  const module = builds[build];
  const x = { data: randomFloats(2 * 7 * D, 21, 1), shape: [2, 7, D] };
  const memory = { data: randomFloats(2 * 5 * D, 22, 1), shape: [2, 5, D] };

  test.each(variants)('encoder %s', (_, variant) => {
    const config = { dModel: D, numHeads: 4, ffnDim: F, ...variant };
    const w = randomLayerWeights(D, F, 3);
    const layer = track(new module.TransformerEncoderLayer(config));
    layer.setWeights(w);
    expect(layer.config).toMatchObject({
      normFirst: variant.normFirst, eps: variant.eps ?? 1e-5,
      activation: variant.activation === 'gelu_erf' ? 'gelu' : variant.activation,
    });
    expectClose('plain', layer.forward(x).data, referenceEncoder(config, w, x), 2e-4);
    expectClose('causal', layer.forward(x, { causal: true }).data,
      referenceEncoder(config, w, x, { causal: true }), 2e-4);
  });

  test.each(variants)('decoder %s', (_, variant) => {
    const config = { dModel: D, numHeads: 2, ffnDim: F, ...variant };
    const w = randomLayerWeights(D, F, 5, { decoder: true });
    const layer = track(new module.TransformerDecoderLayer(config));
    layer.setWeights(w);
    expectClose('causal (default)', layer.forward(x, memory).data,
      referenceDecoder(config, w, x, memory), 2e-4);
    expectClose('not causal', layer.forward(x, memory, { causal: false }).data,
      referenceDecoder(config, w, x, memory, { causal: false }), 2e-4);
  });

  test('key padding masks: encoder, decoder self and memory, and a precomputed mask', () => {
    const config = { dModel: D, numHeads: 4, ffnDim: F };
    // Padding the last tokens equals running the sequence without them.
    const enc = track(new module.TransformerEncoderLayer(config));
    enc.setWeights(randomLayerWeights(D, F, 7));
    const mask = new Uint8Array(14).fill(1);
    mask.fill(0, 5, 7);
    mask.fill(0, 12, 14);
    const padded = enc.forward(x, { keyPaddingMask: mask });
    const short = { data: new Float32Array(2 * 5 * D), shape: [2, 5, D] };
    for (let b = 0; b < 2; b++) {
      short.data.set(x.data.subarray(b * 7 * D, (b * 7 + 5) * D), b * 5 * D);
    }
    const unpadded = enc.forward(short);
    for (let b = 0; b < 2; b++) {
      expectClose(`batch ${b}`, padded.data.subarray(b * 7 * D, (b * 7 + 5) * D),
        unpadded.data.subarray(b * 5 * D, (b + 1) * 5 * D), 1e-5);
    }

    const dec = track(new module.TransformerDecoderLayer(config));
    dec.setWeights(randomLayerWeights(D, F, 8, { decoder: true }));
    const memoryMask = new Uint8Array(10).fill(1);
    memoryMask.fill(0, 3, 5);
    memoryMask.fill(0, 8, 10);
    const shortMemory = { data: new Float32Array(2 * 3 * D), shape: [2, 3, D] };
    for (let b = 0; b < 2; b++) {
      shortMemory.data.set(memory.data.subarray(b * 5 * D, (b * 5 + 3) * D), b * 3 * D);
    }
    const want = dec.forward(x, shortMemory).data;
    expectClose('memoryKeyPaddingMask', dec.forward(x, memory,
      { memoryKeyPaddingMask: memoryMask }).data, want, 1e-5);
    const precomputed = track(dec.precomputeMemory(memory, { keyPaddingMask: memoryMask }));
    expectClose('mask of the precomputed memory', dec.forward(x, precomputed).data, want, 1e-5);
    // A mask given to forward replaces the precomputed one.
    expectClose('mask given to forward wins', dec.forward(x, precomputed,
      { memoryKeyPaddingMask: new Uint8Array(10).fill(1) }).data, dec.forward(x, memory).data, 1e-6);
    // Self-attention padding on top of the causal mask.
    const selfMask = new Uint8Array(14).fill(1);
    selfMask[2] = 0;
    const masked = dec.forward(x, memory, { keyPaddingMask: selfMask }).data;
    expect(maxAbsDiff(masked, dec.forward(x, memory).data)).toBeGreaterThan(1e-3);
  });

  test('a 2-D input gives a 2-D output equal to batch 1', () => {
    const config = { dModel: D, numHeads: 4, ffnDim: F };
    const one = { data: x.data.subarray(0, 7 * D), shape: [7, D] };
    const enc = track(new module.TransformerEncoderLayer(config));
    enc.setWeights(randomLayerWeights(D, F, 9));
    const y = enc.forward(one);
    expect(y.shape).toEqual([7, D]);
    expect(y.data).toEqual(enc.forward({ data: one.data, shape: [1, 7, D] }).data);
    const dec = track(new module.TransformerDecoderLayer(config));
    dec.setWeights(randomLayerWeights(D, F, 10, { decoder: true }));
    const m = { data: memory.data.subarray(0, 5 * D), shape: [5, D] };
    const z = dec.forward(one, m);
    expect(z.shape).toEqual([7, D]);
    expect(z.data).toEqual(dec.forward({ data: one.data, shape: [1, 7, D] },
      { data: m.data, shape: [1, 5, D] }).data);
  });
});

test('layers report their kernels and resolved config; the default backend is the module\'s', () => {
  const m = builds.simd;
  const layer = track(new m.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 8 }));
  expect(layer.config).toEqual({
    dModel: 8, numHeads: 2, headDim: 4, ffnDim: 8, normFirst: false, activation: 'relu',
    eps: 1e-5, backend: m.backend, threads: 1, numKvHeads: 2, weights: 'f32', cacheType: 'f32',
  });
  expect(layer.kernels).toBe(m.kernels);
  expect(layer.disposed).toBe(false);
  layer.dispose();
  expect(layer.disposed).toBe(true);
  layer.dispose(); // again: nothing
});
