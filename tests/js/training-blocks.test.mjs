// TransformerBlock in the training build: a Llama block with rotary
// positions and QK-norm whose gradients match central differences of its
// own forward, the Llama block of ../shared/hf-models loaded, matching
// Hugging Face's output, and fitted by Adam with the loss going down, and
// what the training build leaves out of blocks.
import { expectError } from './support/errors.mjs';
import { blockIo, hfCases, maxRealRowDiff, modelConfig, modelTensors }
  from './support/hf-models.mjs';
import { randomFloats } from './support/layers.mjs';
import { createAttentionModule, track } from './support/modules.mjs';
import { D, expectCentralDifferences, fitLosses, HEAD_DIM, LLAMA_BLOCK as config,
  llamaBlockWeights as randomWeights } from './support/training-llama.mjs';

const sa = await createAttentionModule({ training: true });

// Positions from 3.
const OPTIONS = { causal: true, positionOffset: 3 };

test('a Llama block with RoPE and QK-norm: gradients match central differences', () => {
  const block = track(new sa.TransformerBlock(config));
  const weights = randomWeights(100);
  block.setWeights(weights);
  const x = { data: randomFloats(2 * 7 * D, 1, 1), shape: [2, 7, D] };
  const dOutput = randomFloats(2 * 7 * D, 2, 1);
  block.forward(x, { ...OPTIONS, training: true });
  const g = block.backward({ data: dOutput, shape: [2, 7, D] });
  expect(g.dInput.shape).toEqual([2, 7, D]);
  expect(g.dMemory).toBeUndefined();
  // A block's attention has biases (zero when omitted, trained all the same).
  expect(Object.keys(g.sublayers[0].attention).sort()).toEqual(['dBK', 'dBO', 'dBQ', 'dBV',
    'dKNorm', 'dQNorm', 'dWK', 'dWO', 'dWQ', 'dWV']);
  expect(g.sublayers[0].attention.dQNorm.length).toBe(HEAD_DIM);
  expect(g.sublayers[0].norm.dBeta).toBeUndefined();
  expect(Object.keys(g.sublayers[1].gatedFfn).sort())
    .toEqual(['dBDown', 'dBGate', 'dBUp', 'dWDown', 'dWGate', 'dWUp']);

  expectCentralDifferences(block, weights, x, OPTIONS, dOutput, [
    ['attention.wQ', weights.sublayers[0].attention.wQ, g.sublayers[0].attention.dWQ],
    ['attention.wK', weights.sublayers[0].attention.wK, g.sublayers[0].attention.dWK],
    ['attention.qNorm', weights.sublayers[0].attention.qNorm, g.sublayers[0].attention.dQNorm],
    ['attention.kNorm', weights.sublayers[0].attention.kNorm, g.sublayers[0].attention.dKNorm],
    ['norm.gamma', weights.sublayers[0].norm.gamma, g.sublayers[0].norm.dGamma],
    ['gatedFfn.wGate', weights.sublayers[1].gatedFfn.wGate, g.sublayers[1].gatedFfn.dWGate],
    ['x', x.data, g.dInput.data],
  ]);
});

describe('the Llama block of ../shared/hf-models', () => {
  const name = 'llama_layer';
  const prefix = hfCases[name].prefix;

  test('loads in the training build, its forward (RoPE included) matching HF\'s', async () => {
    const built = await sa.fromPretrained(modelConfig(name), modelTensors(name), { prefix });
    track(built.module);
    expect(built.kind).toBe('TransformerBlock');
    expect(built.module.config.rope.style).toBe('half');
    const x = blockIo(name).tensor('x');
    const y = built.module.forward(x, { ...built.forwardOptions, training: true });
    expect(maxRealRowDiff(name, y.data)).toBeLessThan(1e-5);
  });

  test('Adam fits it to a target: the loss goes down', async () => {
    const built = await sa.fromPretrained(modelConfig(name), modelTensors(name), { prefix });
    const block = track(built.module);
    const x = blockIo(name).tensor('x');
    // The target: Hugging Face's output, scaled; loss = mean squared error.
    const target = blockIo(name).tensor('y').data.map((v) => 0.5 * v);
    const adam = track(new sa.Adam({ lr: 1e-3 }));
    const losses = fitLosses(block, adam, x, built.forwardOptions, target, 20);
    for (let i = 1; i < losses.length; i++) expect(losses[i]).toBeLessThan(losses[i - 1]);
    // From 1.5e-4 to about 4e-6.
    expect(losses[losses.length - 1]).toBeLessThan(losses[0] / 20);
  });
});

test('the training build has blocks but no KV caches, and says so', () => {
  const block = track(new sa.TransformerBlock(config));
  block.setWeights(randomWeights(7));
  const elsewhere = '(in JavaScript: createAttentionModule() without training has them)';
  expectError(() => block.createKVCache({ batch: 1, maxLength: 4 }), Error,
    `TransformerBlock.createKVCache: KV caches are not in the training build ${elsewhere}`);
  expectError(() => block.backward({ data: new Float32Array(D), shape: [1, D] }), Error,
    'TransformerBlock.backward: expected the last forward to be a training one ' +
    '(options.training true) with the weights unchanged since, got none');
});
