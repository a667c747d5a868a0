// TransformerStack in the training build: a three-layer Llama stack (RoPE,
// QK-norm, a final norm) and a two-layer post-LN one whose gradients match
// central differences of their own forward, the whole Llama model of
// ../shared/hf-models loaded without a prefix (a stack), matching Hugging
// Face's output and fitted by Adam with the loss going down at every step,
// and what the training build leaves out of stacks.
import { expectError } from './support/errors.mjs';
import { blockIo, modelConfig, modelTensors } from './support/hf-models.mjs';
import { randomFloats } from './support/layers.mjs';
import { createAttentionModule, track } from './support/modules.mjs';
import { D, expectCentralDifferences, F, fitLosses, LLAMA_BLOCK, llamaBlockWeights }
  from './support/training-llama.mjs';

const sa = await createAttentionModule({ training: true });

const LLAMA = { ...LLAMA_BLOCK, numLayers: 3, finalNorm: true,
  layerWindows: [[-1, -1], [2, 0], [-1, -1]] };
const POST_LN = {
  dModel: D, numHeads: 2, ffnDim: F, activation: 'gelu', norm: 'layer_norm',
  sublayers: [{ mixer: 'self_attention', norm: 'post' }, { mixer: 'ffn', norm: 'post' }],
  numLayers: 2,
};

const m = (n, seed, scale = 0.3) => randomFloats(n, seed, scale);
const scales = (n, seed) => m(n, seed).map((v) => 1 + v);

function postLnLayer(seed) {
  const norm = () => ({ gamma: scales(D, seed + 1), beta: m(D, seed + 2) });
  return { sublayers: [
    { norm: norm(), attention: { wQ: m(D * D, seed + 3), wK: m(D * D, seed + 4),
      wV: m(D * D, seed + 5), wO: m(D * D, seed + 6), bQ: m(D, seed + 7), bO: m(D, seed + 8) } },
    { norm: norm(), ffn: { w1: m(D * F, seed + 9), b1: m(F, seed + 10), w2: m(F * D, seed + 11),
      b2: m(D, seed + 12) } },
  ] };
}

// Central-difference probes of each layer's weights picked as [sublayer,
// part, weight], each with its gradient: the backward names it 'd' and the
// weight's name capitalized (wQ: dWQ, gamma: dGamma).
function layerProbes(weights, g, picks) {
  const gradientName = (name) => `d${name[0].toUpperCase()}${name.slice(1)}`;
  return g.layers.flatMap((layer, i) => picks.map(([k, part, name]) => [
    `layers[${i}].sublayers[${k}].${part}.${name}`, weights.layers[i].sublayers[k][part][name],
    layer.sublayers[k][part][gradientName(name)]]));
}

test('a three-layer Llama stack with RoPE, QK-norm and a final norm: gradients match ' +
  'central differences', () => {
  const stack = track(new sa.TransformerStack(LLAMA));
  const weights = { layers: [llamaBlockWeights(100), llamaBlockWeights(200), llamaBlockWeights(300)],
    finalNorm: { gamma: scales(D, 400) } };
  stack.setWeights(weights);
  const x = { data: m(2 * 7 * D, 1, 1), shape: [2, 7, D] };
  const dOutput = m(2 * 7 * D, 2, 1);
  const options = { causal: true, positionOffset: 3 };
  stack.forward(x, { ...options, training: true });
  const g = stack.backward({ data: dOutput, shape: [2, 7, D] });
  expect(g.dInput.shape).toEqual([2, 7, D]);
  expect(g.layers.length).toBe(3);
  // Grouped as setWeights takes the weights.
  for (const layer of g.layers) {
    expect(Object.keys(layer.sublayers[0].attention).sort()).toEqual(['dBK', 'dBO', 'dBQ', 'dBV',
      'dKNorm', 'dQNorm', 'dWK', 'dWO', 'dWQ', 'dWV']);
    expect(Object.keys(layer.sublayers[1].gatedFfn).sort())
      .toEqual(['dBDown', 'dBGate', 'dBUp', 'dWDown', 'dWGate', 'dWUp']);
  }
  expect(Object.keys(g.finalNorm)).toEqual(['dGamma']);
  const probes = [['finalNorm.gamma', weights.finalNorm.gamma, g.finalNorm.dGamma],
    ...layerProbes(weights, g, [[0, 'attention', 'wQ'], [0, 'attention', 'wV'],
      [0, 'attention', 'kNorm'], [0, 'norm', 'gamma'], [1, 'gatedFfn', 'wUp'],
      [1, 'gatedFfn', 'wDown']]),
    ['x', x.data, g.dInput.data]];
  expectCentralDifferences(stack, weights, x, options, dOutput, probes);
});

test('a two-layer post-LN stack with padding: gradients match central differences', () => {
  const stack = track(new sa.TransformerStack(POST_LN));
  const weights = { layers: [postLnLayer(10), postLnLayer(30)] };
  stack.setWeights(weights);
  const x = { data: m(2 * 5 * D, 3, 1), shape: [2, 5, D] };
  const dOutput = m(2 * 5 * D, 4, 1);
  const options = { keyPaddingMask: Uint8Array.from([1, 1, 1, 0, 0, 1, 1, 1, 1, 1]) };
  stack.forward(x, { ...options, training: true });
  const g = stack.backward({ data: dOutput, shape: [2, 5, D] });
  expect(g.finalNorm).toBeUndefined();
  const probes = [...layerProbes(weights, g, [[0, 'attention', 'wK'], [0, 'attention', 'bQ'],
    [0, 'norm', 'beta'], [1, 'ffn', 'w1'], [1, 'norm', 'gamma']]), ['x', x.data, g.dInput.data]];
  expectCentralDifferences(stack, weights, x, options, dOutput, probes);
});

describe('the Llama model of ../shared/hf-models as a stack (no prefix)', () => {
  const name = 'llama_layer';

  // Hugging Face's block output through the model's final RMSNorm (norm.weight),
  // in double.
  function expected() {
    const config = modelConfig(name);
    const y = blockIo(name).tensor('y');
    const gamma = modelTensors(name).tensor('norm.weight').data;
    const width = y.shape[y.shape.length - 1];
    const out = new Float64Array(y.data.length);
    for (let r = 0; r < y.data.length / width; r++) {
      let s = 0;
      for (let i = 0; i < width; i++) s += y.data[r * width + i] ** 2;
      const inv = 1 / Math.sqrt(s / width + config.rms_norm_eps);
      for (let i = 0; i < width; i++) out[r * width + i] = y.data[r * width + i] * inv * gamma[i];
    }
    return out;
  }

  test('loads in the training build, its training forward matching HF\'s', async () => {
    const built = await sa.fromPretrained(modelConfig(name), modelTensors(name));
    track(built.module);
    expect(built.kind).toBe('TransformerStack');
    expect(built.module.config).toMatchObject({ finalNorm: true, norm: 'rms_norm' });
    const x = blockIo(name).tensor('x');
    const y = built.module.forward(x, { ...built.forwardOptions, training: true });
    const want = expected();
    expect(Math.max(...y.data.map((v, i) => Math.abs(v - want[i])))).toBeLessThan(1e-5);
    // Its backward then gives every layer's gradients and the final norm's.
    const g = built.module.backward({ data: y.data.map((v) => v / 10), shape: y.shape });
    expect(g.layers.length).toBe(modelConfig(name).num_hidden_layers);
    expect(g.finalNorm.dGamma.length).toBe(x.shape[2]);
  });

  test('Adam fits it to a target: the loss goes down at every step', async () => {
    const built = await sa.fromPretrained(modelConfig(name), modelTensors(name));
    const stack = track(built.module);
    // Hidden states of unit RMS, as a trained model's: the random model's
    // (RMS 0.02, as its embeddings) leave the final norm to magnify every
    // step Adam takes on the layers' weights.
    const io = blockIo(name).tensor('x');
    const x = { data: io.data.map((v) => 50 * v), shape: io.shape };
    // The target: its own output, halved (the final norm's gamma halved);
    // loss = mean squared error.
    const target = stack.forward(x, built.forwardOptions).data.map((v) => 0.5 * v);
    const adam = track(new sa.Adam({ lr: 1e-2 }));
    const losses = fitLosses(stack, adam, x, built.forwardOptions, target, 20);
    for (let i = 1; i < losses.length; i++) expect(losses[i]).toBeLessThan(losses[i - 1]);
    // From 0.25 to about 0.1.
    expect(losses[losses.length - 1]).toBeLessThan(losses[0] / 2);
  });
});

test('the training build\'s stack has no KV caches, and says so; backward needs a training ' +
  'forward', () => {
  const stack = track(new sa.TransformerStack(LLAMA));
  stack.setWeights({ layers: [llamaBlockWeights(1), llamaBlockWeights(2), llamaBlockWeights(3)],
    finalNorm: { gamma: scales(D, 4) } });
  expectError(() => track(new sa.Adam()).step(stack), Error,
    'Adam.step: expected a backward since the weights last changed, got none');
  const elsewhere = '(in JavaScript: createAttentionModule() without training has them)';
  expectError(() => stack.createKVCaches({ batch: 1, maxLength: 4 }), Error,
    `TransformerStack.createKVCaches: KV caches are not in the training build ${elsewhere}`);
  const x = { data: m(3 * D, 5, 1), shape: [3, D] };
  expectError(() => stack.backward(x), Error,
    'TransformerStack.backward: expected the last forward to be a training one ' +
    '(options.training true) with the weights unchanged since, got none');
  stack.forward(x, { causal: true, training: true });
  expect(stack.backward(x).dInput.shape).toEqual([3, D]);
  // A forward that does not train ends the record.
  stack.forward(x);
  expectError(() => stack.backward(x), Error,
    'TransformerStack.backward: expected the last forward to be a training one ' +
    '(options.training true) with the weights unchanged since, got none');
});
