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

const sa = await createAttentionModule({ training: true });

// Llama 3 with Qwen3's QK-norm: 6-feature heads (a tail past the vectors),
// grouped heads, positions from 3.
const D = 24;
const HEADS = 4;
const KV_HEADS = 2;
const HEAD_DIM = D / HEADS;
const F = 20;
const config = {
  dModel: D, numHeads: HEADS, numKvHeads: KV_HEADS, ffnDim: F, activation: 'silu',
  norm: 'rms_norm', eps: 1e-5, rope: { style: 'half', base: 500 },
  qkNorm: { kind: 'rms_norm', eps: 1e-6 },
  sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }],
};
const OPTIONS = { causal: true, positionOffset: 3 };

function randomWeights(seed) {
  const m = (n, s, scale = 0.3) => randomFloats(n, seed + s, scale);
  const kv = KV_HEADS * HEAD_DIM;
  return { sublayers: [
    { norm: { gamma: m(D, 1).map((v) => 1 + v) },
      attention: { wQ: m(D * D, 2), wK: m(D * kv, 3), wV: m(D * kv, 4), wO: m(D * D, 5),
        qNorm: m(HEAD_DIM, 6).map((v) => 1 + v), kNorm: m(HEAD_DIM, 7).map((v) => 1 + v) } },
    { norm: { gamma: m(D, 8).map((v) => 1 + v) },
      gatedFfn: { wGate: m(D * F, 9), wUp: m(D * F, 10), wDown: m(F * D, 11) } },
  ] };
}

// sum(output * dOutput) in double.
const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);

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

  const loss = () => dot(block.forward(x, OPTIONS).data, dOutput);
  // Probes the largest gradient entries of each parameter: float32's
  // forward rounds the loss by ~1e-6 of itself, so h = 1e-2 keeps the
  // difference quotient's error near 1e-4 and the curvature's h^2 below it.
  const h = 1e-2;
  const worst = {};
  const probes = [
    ['attention.wQ', weights.sublayers[0].attention.wQ, g.sublayers[0].attention.dWQ],
    ['attention.wK', weights.sublayers[0].attention.wK, g.sublayers[0].attention.dWK],
    ['attention.qNorm', weights.sublayers[0].attention.qNorm, g.sublayers[0].attention.dQNorm],
    ['attention.kNorm', weights.sublayers[0].attention.kNorm, g.sublayers[0].attention.dKNorm],
    ['norm.gamma', weights.sublayers[0].norm.gamma, g.sublayers[0].norm.dGamma],
    ['gatedFfn.wGate', weights.sublayers[1].gatedFfn.wGate, g.sublayers[1].gatedFfn.dWGate],
  ];
  for (const [name, values, gradient] of probes) {
    expect([name, gradient.length]).toEqual([name, values.length]);
    const largest = [...gradient.keys()]
      .sort((a, b) => Math.abs(gradient[b]) - Math.abs(gradient[a])).slice(0, 3);
    for (const i of largest) {
      const keep = values[i];
      values[i] = keep + h;
      block.setWeights(weights);
      const up = loss();
      values[i] = keep - h;
      block.setWeights(weights);
      const down = loss();
      values[i] = keep;
      const numeric = (up - down) / (2 * h);
      worst[name] = Math.max(worst[name] ?? 0,
        Math.abs(numeric - gradient[i]) / Math.max(1, Math.abs(numeric)));
    }
    expect([name, worst[name] < 2e-3]).toEqual([name, true]);
  }
  block.setWeights(weights);
  // The input's gradient too, at a token past the first (causal: it
  // reaches the later ones' outputs).
  const xi = 2 * D + 5;
  const keep = x.data[xi];
  x.data[xi] = keep + h;
  const up = loss();
  x.data[xi] = keep - h;
  const down = loss();
  x.data[xi] = keep;
  expect(Math.abs((up - down) / (2 * h) - g.dInput.data[xi])).toBeLessThan(2e-3);
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
    const losses = [];
    for (let step = 0; step < 20; step++) {
      const y = block.forward(x, { ...built.forwardOptions, training: true });
      const diff = y.data.map((v, i) => v - target[i]);
      losses.push(dot(diff, diff) / diff.length);
      block.backward({ data: diff.map((v) => (2 * v) / diff.length), shape: y.shape });
      adam.step(block);
    }
    for (let i = 1; i < losses.length; i++) expect(losses[i]).toBeLessThan(losses[i - 1]);
    // From 1.5e-4 to about 4e-6.
    expect(losses[losses.length - 1]).toBeLessThan(losses[0] / 20);
  });
});

test('the training build has blocks but no stack or KV caches, and says so', () => {
  const block = track(new sa.TransformerBlock(config));
  block.setWeights(randomWeights(7));
  const elsewhere = '(in JavaScript: createAttentionModule() without training has them)';
  expectError(() => block.createKVCache({ batch: 1, maxLength: 4 }), Error,
    `TransformerBlock.createKVCache: KV caches are not in the training build ${elsewhere}`);
  expectError(() => new sa.TransformerStack({ ...config, numLayers: 2 }), Error,
    'TransformerStack: not in this module\'s build (the training build, ' +
    'createAttentionModule({ training: true }), has no TransformerStack); use the default build');
  expectError(() => block.backward({ data: new Float32Array(D), shape: [1, D] }), Error,
    'TransformerBlock.backward: expected the last forward to be a training one ' +
    '(options.training true) with the weights unchanged since, got none');
});
