// The training build: every golden `mha_backward` and
// `encoder_layer_backward` case (outputs and every gradient within the
// case's tolerance), the optimizers' update rules through the weights they
// leave behind, a fit whose loss falls, and the errors of misuse, on this
// build and on the inference builds that refuse it.
import { expectError, thrown } from './support/errors.mjs';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff } from './support/golden.mjs';
import { createAttentionModule, loadBuilds, track } from './support/modules.mjs';

const sa = await createAttentionModule({ training: true });
const inference = await loadBuilds();
const mhaCases = goldenCaseNames('mha_backward').map(loadGoldenCase);
const layerCases = goldenCaseNames('encoder_layer_backward').map(loadGoldenCase);

const attentionWeights = (t, p = '') => ({
  wQ: t[`${p}w_q`].data, wK: t[`${p}w_k`].data, wV: t[`${p}w_v`].data, wO: t[`${p}w_o`].data,
  bQ: t[`${p}b_q`].data, bK: t[`${p}b_k`].data, bV: t[`${p}b_v`].data, bO: t[`${p}b_o`].data,
});
// Our gradient key -> the case's tensor name.
const ATTENTION_GRADIENTS = { dWQ: 'd_w_q', dWK: 'd_w_k', dWV: 'd_w_v', dWO: 'd_w_o',
  dBQ: 'd_b_q', dBK: 'd_b_k', dBV: 'd_b_v', dBO: 'd_b_o' };

test('the golden folder has backward cases: self, cross, causal with padding, an encoder layer', () => {
  expect(mhaCases.some((c) => c.config.self_attention)).toBe(true);
  expect(mhaCases.some((c) => !c.config.self_attention)).toBe(true);
  expect(mhaCases.some((c) => c.tensors.key_padding_mask && c.config.causal !== 'none'))
    .toBe(true);
  expect(layerCases.length).toBeGreaterThan(0);
  expect(sa.build).toBe('training');
  expect(sa.threads).toBe(1);
});

describe.each(mhaCases.map((c) => [c.name, c]))('mha_backward %s', (name, c) => {
  test('output and every gradient within the tolerance', () => {
    const cfg = c.config;
    const t = c.tensors;
    const mha = track(new sa.MultiHeadAttention({ dModel: cfg.d_model, numHeads: cfg.num_heads,
      headDim: cfg.head_dim, headDimV: cfg.head_dim_v, bias: cfg.bias }));
    mha.setWeights(attentionWeights(t));
    const options = {
      training: true,
      causal: cfg.causal === 'bottom_right' ? 'bottom-right' : cfg.causal === 'top_left'
        ? 'top-left' : false,
      ...(t.key_padding_mask ? { keyPaddingMask: t.key_padding_mask.data } : {}),
    };
    const memory = cfg.self_attention ? undefined : t.memory;
    const r = mha.forward(t.query, memory, memory, options);
    expect(maxAbsDiff(r.output.data, t.output.data)).toBeLessThanOrEqual(c.tolerance);
    const g = mha.backward(t.d_output);
    for (const [ours, theirs] of Object.entries(ATTENTION_GRADIENTS)) {
      expect(maxAbsDiff(g[ours], t[theirs].data)).toBeLessThanOrEqual(c.tolerance);
    }
    if (cfg.self_attention) {
      expect(g.dInput.shape).toEqual(t.query.shape);
      expect(maxAbsDiff(g.dInput.data, t.d_input.data)).toBeLessThanOrEqual(c.tolerance);
    } else {
      expect(g.dInput).toBeUndefined();
      expect(g.dQuery.shape).toEqual(t.query.shape);
      expect(maxAbsDiff(g.dQuery.data, t.d_query.data)).toBeLessThanOrEqual(c.tolerance);
      // The memory is both key and value: its gradient is the sum of theirs.
      const dMemory = g.dKey.data.map((v, i) => v + g.dValue.data[i]);
      expect(maxAbsDiff(dMemory, t.d_memory.data)).toBeLessThanOrEqual(c.tolerance);
    }
  });
});

describe.each(layerCases.map((c) => [c.name, c]))('encoder_layer_backward %s', (name, c) => {
  test('output and every gradient within the tolerance', () => {
    const cfg = c.config;
    const t = c.tensors;
    const layer = track(new sa.TransformerEncoderLayer({ dModel: cfg.d_model,
      numHeads: cfg.num_heads, ffnDim: cfg.ffn_dim, normFirst: cfg.norm === 'pre',
      activation: cfg.activation, eps: cfg.layer_norm_eps }));
    layer.setWeights({
      attention: attentionWeights(t),
      ffn: { w1: t.ffn_w1.data, b1: t.ffn_b1.data, w2: t.ffn_w2.data, b2: t.ffn_b2.data },
      norm1: { gamma: t.ln1_gamma.data, beta: t.ln1_beta.data },
      norm2: { gamma: t.ln2_gamma.data, beta: t.ln2_beta.data },
    });
    const out = layer.forward(t.input, { training: true, causal: cfg.causal !== 'none' });
    expect(maxAbsDiff(out.data, t.output.data)).toBeLessThanOrEqual(c.tolerance);
    const g = layer.backward(t.d_output);
    const within = (ours, theirs) =>
      expect(maxAbsDiff(ours, t[theirs].data)).toBeLessThanOrEqual(c.tolerance);
    within(g.dInput.data, 'd_input');
    for (const [ours, theirs] of Object.entries(ATTENTION_GRADIENTS)) {
      within(g.attention[ours], theirs);
    }
    for (const k of ['W1', 'B1', 'W2', 'B2']) within(g.ffn[`d${k}`], `d_ffn_${k.toLowerCase()}`);
    for (const n of [1, 2]) {
      within(g[`norm${n}`].dGamma, `d_ln${n}_gamma`);
      within(g[`norm${n}`].dBeta, `d_ln${n}_beta`);
    }
  });
});

// A small self-attention with deterministic weights.
const values = (n, seed) => Float32Array.from({ length: n }, (_, i) =>
  0.4 * Math.sin(1.7 * i + seed) * Math.cos(0.3 * i * seed + 1));
const D = 8;
const smallWeights = (seed = 1) => ({ wQ: values(D * D, seed), wK: values(D * D, seed + 1),
  wV: values(D * D, seed + 2), wO: values(D * D, seed + 3), bQ: values(D, seed + 4),
  bK: values(D, seed + 5), bV: values(D, seed + 6), bO: values(D, seed + 7) });
const x = { data: values(2 * 3 * D, 9), shape: [2, 3, D] };
const dOutput = { data: values(2 * 3 * D, 11), shape: [2, 3, D] };

function trained(module, weights = smallWeights()) {
  const mha = track(new module.MultiHeadAttention({ dModel: D, numHeads: 2 }));
  mha.setWeights(weights);
  mha.forward(x, undefined, undefined, { training: true, causal: true });
  return mha;
}

// Forward outputs of an attention with the given weights.
function outputWith(weights) {
  const mha = track(new sa.MultiHeadAttention({ dModel: D, numHeads: 2 }));
  mha.setWeights(weights);
  return mha.forward(x, undefined, undefined, { causal: true }).output.data;
}

const KEYS = ['wQ', 'wK', 'wV', 'wO', 'bQ', 'bK', 'bV', 'bO'];
const gradientOf = (key) => `d${key[0].toUpperCase()}${key.slice(1).toUpperCase()}`;

test('SGD (with weight decay) leaves w - lr * (dW + decay * w) behind', () => {
  const w = smallWeights();
  const mha = trained(sa, w);
  const g = mha.backward(dOutput);
  const lr = 0.05;
  const decay = 0.01;
  const sgd = track(new sa.SGD({ lr, weightDecay: decay }));
  sgd.step(mha);
  const expected = Object.fromEntries(KEYS.map((k) =>
    [k, w[k].map((v, i) => v - lr * (g[gradientOf(k)][i] + decay * v))]));
  const stepped = mha.forward(x, undefined, undefined, { causal: true }).output.data;
  expect(maxAbsDiff(stepped, outputWith(expected))).toBeLessThanOrEqual(1e-5);
  // The step moved the output: the update was not a no-op.
  expect(maxAbsDiff(stepped, outputWith(w))).toBeGreaterThan(1e-3);
});

test('an optimizer\'s options: those given, C++\'s defaults (torch\'s) for the rest', () => {
  expect(track(new sa.SGD()).options).toEqual(
    { lr: 0.001, momentum: 0, weightDecay: 0, nesterov: false });
  expect(track(new sa.SGD({ momentum: 0.9, nesterov: true })).options).toEqual(
    { lr: 0.001, momentum: 0.9, weightDecay: 0, nesterov: true });
  expect(track(new sa.Adam({ lr: 0.01, decoupledWeightDecay: true })).options).toEqual(
    { lr: 0.01, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0,
      decoupledWeightDecay: true });
  // An option given as undefined is an omitted one.
  expect(track(new sa.SGD({ lr: undefined })).options.lr).toBe(0.001);
  // The default steps: w - 0.001 * dW.
  const w = smallWeights();
  const mha = trained(sa, w);
  const g = mha.backward(dOutput);
  track(new sa.SGD()).step(mha);
  const expected = Object.fromEntries(KEYS.map((k) =>
    [k, w[k].map((v, i) => v - 0.001 * g[gradientOf(k)][i])]));
  const stepped = mha.forward(x, undefined, undefined, { causal: true }).output.data;
  expect(maxAbsDiff(stepped, outputWith(expected))).toBeLessThanOrEqual(1e-6);
  const sgd = new sa.SGD();
  sgd.dispose();
  expectError(() => sgd.options, Error, 'SGD.options: this SGD was disposed; create a new one');
});

test('Adam\'s first step moves every weight by lr * sign(gradient) (bias-corrected moments)', () => {
  const w = smallWeights();
  const mha = trained(sa, w);
  const g = mha.backward(dOutput);
  const lr = 1e-3;
  const adam = track(new sa.Adam({ lr, eps: 1e-12 }));
  adam.step(mha);
  // m^ = g, v^ = g^2 after one step: the update is lr * g / |g|.
  const expected = Object.fromEntries(KEYS.map((k) =>
    [k, w[k].map((v, i) => v - lr * Math.sign(g[gradientOf(k)][i]))]));
  const stepped = mha.forward(x, undefined, undefined, { causal: true }).output.data;
  expect(maxAbsDiff(stepped, outputWith(expected))).toBeLessThanOrEqual(1e-5);
});

test('Adam fits one attention to another\'s outputs: the loss falls 100-fold in 300 steps', () => {
  const target = outputWith(smallWeights(5));
  const mha = track(new sa.MultiHeadAttention({ dModel: D, numHeads: 2 }));
  mha.setWeights(smallWeights(1));
  const adam = track(new sa.Adam({ lr: 0.01 }));
  const lossOf = (out) => out.reduce((s, v, i) => s + (v - target[i]) ** 2, 0) / out.length;
  let first;
  let loss;
  for (let step = 0; step < 300; step++) {
    const out = mha.forward(x, undefined, undefined, { training: true, causal: true }).output;
    loss = lossOf(out.data);
    first ??= loss;
    // d(mean squared error)/d(output)
    const d = out.data.map((v, i) => (2 * (v - target[i])) / out.data.length);
    mha.backward({ data: d, shape: out.shape });
    adam.step(mha);
  }
  expect(loss).toBeLessThan(first / 100);
});

test('a new object at a disposed one\'s address starts with fresh moments', () => {
  const adam = track(new sa.Adam({ lr: 1e-3, eps: 1e-12 }));
  const first = new sa.MultiHeadAttention({ dModel: D, numHeads: 2 });
  first.setWeights(smallWeights());
  first.forward(x, undefined, undefined, { training: true, causal: true });
  first.backward(dOutput);
  adam.step(first);
  first.dispose();
  // Its successor's first step is a first step (lr * sign(g)) whatever
  // address it got.
  const w = smallWeights(3);
  const second = trained(sa, w);
  const g = second.backward(dOutput);
  adam.step(second);
  const expected = Object.fromEntries(KEYS.map((k) =>
    [k, w[k].map((v, i) => v - 1e-3 * Math.sign(g[gradientOf(k)][i]))]));
  expect(maxAbsDiff(second.forward(x, undefined, undefined, { causal: true }).output.data,
    outputWith(expected))).toBeLessThanOrEqual(1e-5);
});

describe('errors', () => {
  test('backward without a training forward, after another forward, after a step', () => {
    const mha = track(new sa.MultiHeadAttention({ dModel: D, numHeads: 2 }));
    mha.setWeights(smallWeights());
    const none = 'MultiHeadAttention.backward: expected the last forward to be a training one ' +
      '(options.training true) with the weights unchanged since, got none';
    expectError(() => mha.backward(dOutput), Error, none);
    mha.forward(x, undefined, undefined, { training: true });
    mha.forward(x);
    expectError(() => mha.backward(dOutput), Error, none);
    mha.forward(x, undefined, undefined, { training: true });
    mha.backward(dOutput);
    const sgd = track(new sa.SGD({ lr: 0.1 }));
    sgd.step(mha);
    expectError(() => mha.backward(dOutput), Error, none);
  });

  test('a wrong dOutput is named, and the saved state stays for a right one', () => {
    const mha = trained(sa);
    expectError(() => mha.backward({ data: new Float32Array(40), shape: [2, 3, D] }), RangeError,
      'MultiHeadAttention.backward: dOutput: expected 48 values for shape [2, 3, 8], got 40');
    const nan = dOutput.data.slice();
    nan[5] = NaN;
    expectError(() => mha.backward({ data: nan, shape: dOutput.shape }), RangeError,
      'MultiHeadAttention.backward: dOutput: element 5 is NaN');
    expectError(() => mha.backward(new Float32Array(48)), TypeError,
      'MultiHeadAttention.backward: dOutput: expected a tensor { data: Float32Array, ' +
      'shape: number[] }, got Float32Array(48)');
    expect(mha.backward(dOutput).dInput.shape).toEqual([2, 3, D]);
  });

  test('after dispose', () => {
    const mha = trained(sa);
    mha.dispose();
    expectError(() => mha.backward(dOutput), Error,
      'MultiHeadAttention.backward: this MultiHeadAttention was disposed; create a new one');
    const adam = new sa.Adam();
    adam.dispose();
    expect(adam.disposed).toBe(true);
    expectError(() => adam.step(trained(sa)), Error,
      'Adam.step: this Adam was disposed; create a new one');
  });

  // The training build leaves out what only inference uses (its .wasm, as
  // every build's, stays within 200 kB): each is refused by name, with the
  // value given and the builds that have it, and nothing is left behind.
  test('what only inference uses is refused, naming it', () => {
    const elsewhere = '(in JavaScript: createAttentionModule() without training has';
    for (const [weights, given] of [['f16', 'float16'], ['bf16', 'bfloat16'], ['int8', 'int8']]) {
      expectError(() => new sa.MultiHeadAttention({ dModel: D, numHeads: 2, weights }), RangeError,
        'MultiHeadAttention: config.weights: expected float32 in the training build, got ' +
        `${given} ${elsewhere} float16, bfloat16 and int8 weights)`);
    }
    expectError(() => new sa.TransformerEncoderLayer({ dModel: D, numHeads: 2, ffnDim: 16,
      weights: 'int8' }), RangeError, 'TransformerEncoderLayer: config.weights: expected ' +
      `float32 in the training build, got int8 ${elsewhere} float16, bfloat16 and int8 weights)`);
    for (const [cacheType, given] of [['bf16', 'bfloat16'], ['int8', 'int8']]) {
      expectError(() => new sa.TransformerDecoderLayer({ dModel: D, numHeads: 2, ffnDim: 16,
        cacheType }), RangeError, 'TransformerDecoderLayer: config.cacheType: expected ' +
        `float32 in the training build, got ${given} ${elsewhere} float16, bfloat16 and int8 ` +
        'KV caches)');
    }

    const mha = track(new sa.MultiHeadAttention({ dModel: D, numHeads: 2 }));
    mha.setWeights(smallWeights());
    expectError(() => mha.createKVCache({ batch: 2, maxLength: 4 }), Error,
      'MultiHeadAttention.createKVCache: KV caches are not in the training build ' +
      `${elsewhere} them)`);
    expectError(() => mha.precomputeKeyValue(x), Error, 'MultiHeadAttention.precomputeKeyValue: ' +
      `precomputed keys and values are not in the training build ${elsewhere} them)`);
    const decoder = track(new sa.TransformerDecoderLayer({ dModel: D, numHeads: 2, ffnDim: 16 }));
    const norm = { gamma: new Float32Array(D).fill(1), beta: new Float32Array(D) };
    decoder.setWeights({ selfAttention: smallWeights(), crossAttention: smallWeights(2),
      ffn: { w1: values(D * 16, 1), b1: values(16, 2), w2: values(16 * D, 3), b2: values(D, 4) },
      norm1: norm, norm2: norm, norm3: norm });
    expectError(() => decoder.createKVCache({ batch: 2, maxLength: 4 }), Error,
      'TransformerDecoderLayer.createKVCache: KV caches are not in the training build ' +
      `${elsewhere} them)`);
    expectError(() => decoder.precomputeMemory(x), Error, 'TransformerDecoderLayer.' +
      `precomputeMemory: precomputed keys and values are not in the training build ${elsewhere} ` +
      'them)');
    const heads = { data: values(2 * 3 * 4, 3), shape: [1, 2, 3, 4] };
    expectError(() => sa.attention(heads, heads, heads), Error, 'attention: attention() calls ' +
      `are not in the training build ${elsewhere} them)`);
    expectError(() => sa.quantizeInt8(values(4, 5), 2, 2), Error, 'quantizeInt8: int8 weights ' +
      `are not in the training build ${elsewhere} them)`);

    // What was refused holds nothing; the attention still trains.
    expect(sa.memoryStats().cacheBytes).toEqual({ f32: 0, f16: 0, bf16: 0, int8: 0 });
    mha.forward(x, undefined, undefined, { training: true, causal: true });
    expect(mha.backward(dOutput).dInput.shape).toEqual(x.shape);
  });

  test('optimizer options and targets', () => {
    expectError(() => new sa.Adam({ beta1: 1 }), RangeError,
      'Adam: options.beta1: expected a number in [0, 1), got 1');
    expectError(() => new sa.SGD({ nesterov: true }), RangeError,
      'SGD: options.nesterov: expected false without momentum (options.momentum 0), got true');
    expectError(() => new sa.SGD({ lr: '0.1' }), TypeError,
      'SGD: options.lr: expected a number, got "0.1"');
    expect(thrown(() => new sa.Adam({ betas: [0.9, 0.99] })).message)
      .toMatch(/^Adam: options: unknown key 'betas'/);
    const adam = track(new sa.Adam());
    expectError(() => adam.step(x), TypeError, 'Adam.step: target: expected a ' +
      'MultiHeadAttention, TransformerEncoderLayer, TransformerDecoderLayer, TransformerBlock, ' +
      'TransformerStack or TinyTransformer, got an object (Object)');
    const fresh = track(new sa.MultiHeadAttention({ dModel: D, numHeads: 2 }));
    fresh.setWeights(smallWeights());
    expectError(() => adam.step(fresh), Error, 'Adam.step: expected a backward since the ' +
      'weights last changed, got none');
  });

  test('an optimizer refuses another module\'s object; both stay usable', async () => {
    const other = await createAttentionModule({ training: true });
    try {
      for (const make of [() => trained(other), () => {
        const layer = track(new other.TransformerEncoderLayer({ dModel: D, numHeads: 2, ffnDim: 4 }));
        layer.setWeights({ attention: smallWeights(), ffn: { w1: values(D * 4, 1), b1: values(4, 2),
          w2: values(4 * D, 3), b2: values(D, 4) }, norm1: { gamma: values(D, 5), beta: values(D, 6) },
        norm2: { gamma: values(D, 7), beta: values(D, 8) } });
        layer.forward(x, { training: true });
        layer.backward(dOutput);
        return layer;
      }]) {
        const foreign = make();
        if (foreign instanceof other.MultiHeadAttention) foreign.backward(dOutput);
        const kind = foreign.constructor.name;
        for (const optimizer of [track(new sa.SGD({ lr: 0.1 })), track(new sa.Adam())]) {
          const name = optimizer.constructor.name;
          expectError(() => optimizer.step(foreign), Error, `${name}.step: target: this ${kind} ` +
            'belongs to another module (another createAttentionModule() call, i.e. another wasm ' +
            'instance); step it with an optimizer of the module that created it');
          // The optimizer steps its own module's objects, the object is
          // stepped by its own module's optimizer.
          const own = trained(sa);
          own.backward(dOutput);
          optimizer.step(own);
          const before = foreign.forward(x).output?.data ?? foreign.forward(x).data;
          track(new other.SGD({ lr: 0.1 })).step(foreign);
          const after = foreign.forward(x).output?.data ?? foreign.forward(x).data;
          expect(maxAbsDiff(after, before)).toBeGreaterThan(1e-4);
          foreign.forward(x, ...(kind === 'MultiHeadAttention' ? [undefined, undefined] : []),
            { training: true });
          foreign.backward(dOutput);
        }
      }
    } finally {
      other.dispose();
    }
  });

  test.each(Object.entries(inference))('the %s build refuses training, naming the option',
    (build, module) => {
      const mha = track(new module.MultiHeadAttention({ dModel: D, numHeads: 2 }));
      mha.setWeights(smallWeights());
      expectError(() => mha.forward(x, undefined, undefined, { training: true }), RangeError,
        'MultiHeadAttention.forward: options.training: expected false in a build without ' +
        'training, got true (in JavaScript: createAttentionModule({ training: true }))');
      expectError(() => mha.backward(dOutput), Error, 'MultiHeadAttention.backward: needs the ' +
        `training build: createAttentionModule({ training: true }) (this module is the ${
          module.build} build)`);
      expectError(() => new module.Adam(), Error, 'Adam: needs the training build: ' +
        `createAttentionModule({ training: true }) (this module is the ${module.build} build)`);
      // A block's forward refuses too (not only its backward), in C++.
      const block = track(new module.TransformerBlock({ dModel: D, numHeads: 2, norm: 'rms_norm',
        sublayers: [{ mixer: 'self_attention' }] }));
      block.setWeights({ sublayers: [{ norm: { gamma: new Float32Array(D).fill(1) },
        attention: smallWeights() }] });
      expectError(() => block.forward(x, { training: true }), RangeError,
        'TransformerBlock.forward: options.training: expected false in a build without ' +
        'training, got true (in JavaScript: createAttentionModule({ training: true }))');
      expect(block.forward(x).data.every(Number.isFinite)).toBe(true);
      // A stack's likewise, and its backward names the build that has it.
      const stack = track(new module.TransformerStack({ dModel: D, numHeads: 2,
        norm: 'rms_norm', sublayers: [{ mixer: 'self_attention' }], numLayers: 2 }));
      const layer = { sublayers: [{ norm: { gamma: new Float32Array(D).fill(1) },
        attention: smallWeights() }] };
      stack.setWeights({ layers: [layer, layer] });
      expectError(() => stack.forward(x, { training: true }), RangeError,
        'TransformerStack.forward: options.training: expected false in a build without ' +
        'training, got true (in JavaScript: createAttentionModule({ training: true }))');
      expectError(() => stack.backward(dOutput), Error, 'TransformerStack.backward: needs the ' +
        `training build: createAttentionModule({ training: true }) (this module is the ${
          module.build} build)`);
      expect(stack.forward(x).data.every(Number.isFinite)).toBe(true);
    });

  test('createAttentionModule refuses training with another build or threads', async () => {
    await expect(createAttentionModule({ training: true, threads: 2 })).rejects.toThrow(
      'createAttentionModule: options.threads: 2 threads asked for, but the training build ' +
      '(options.training: true) runs on one thread; omit the option or pass 1');
    await expect(createAttentionModule({ training: true, simd: false })).rejects.toThrow(
      'options.simd: false asks for another');
    await expect(createAttentionModule({ training: 'yes' })).rejects.toThrow(
      'createAttentionModule: options.training: expected a boolean, got "yes"');
  });
});

describe('TinyTransformer', () => {
  const V = 16;
  const T = 12;
  const B = 32;
  // A deterministic generator (the test's own, so the batches are the same
  // everywhere).
  function generator(seed) {
    let s = seed;
    return () => {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      return s / 2 ** 32;
    };
  }
  // Copy the previous token: target[t] = token[t - 1], t >= 1.
  function copyBatch(random) {
    const tokens = new Int32Array(B * T);
    const targets = new Int32Array(B * T).fill(-1);
    for (let i = 0; i < B * T; i++) tokens[i] = Math.floor(random() * V);
    for (let i = 0; i < B * T; i++) if (i % T !== 0) targets[i] = tokens[i - 1];
    return { tokens: { data: tokens, shape: [B, T] }, targets };
  }
  const config = { vocab: V, dModel: 32, numHeads: 2, numLayers: 2, maxTokens: 32, seed: 7 };

  test('learns to copy the previous token: >= 99% on fresh batches within 1,000 Adam steps', () => {
    const model = track(new sa.TinyTransformer(config));
    const adam = track(new sa.Adam({ lr: 3e-3 }));
    const random = generator(1);
    let steps = 0;
    let accuracy = 0;
    while (steps < 1000) {
      const { tokens, targets } = copyBatch(random);
      model.forward(tokens, { targets, training: true });
      model.backward();
      adam.step(model);
      steps++;
      if (steps % 50 === 0) {
        // Judged on batches it has not trained on.
        const fresh = copyBatch(random);
        accuracy = model.forward(fresh.tokens, { targets: fresh.targets }).accuracy;
        if (accuracy >= 0.99) break;
      }
    }
    expect(accuracy).toBeGreaterThanOrEqual(0.99);
    console.log(`copy: ${(accuracy * 100).toFixed(1)}% after ${steps} steps`);
    // The learned head attends to the previous token.
    const { tokens } = copyBatch(random);
    const r = model.forward({ data: tokens.data.subarray(0, T), shape: [T] },
      { returnAttnWeights: true });
    expect(r.attnWeights.map((w) => w.shape)).toEqual([[2, T, T], [2, T, T]]);
    expect(r.logits.shape).toEqual([T, V]);
  });

  test('the same seed and batches give the same weights; reset and setWeights round-trip', () => {
    const run = () => {
      const model = track(new sa.TinyTransformer(config));
      const sgd = track(new sa.SGD({ lr: 0.1, momentum: 0.9 }));
      const random = generator(3);
      for (let i = 0; i < 5; i++) {
        const { tokens, targets } = copyBatch(random);
        model.forward(tokens, { targets, training: true });
        model.backward();
        sgd.step(model);
      }
      return model;
    };
    const a = run();
    const b = run();
    const wa = a.getWeights();
    expect(b.getWeights()).toEqual(wa);
    const fresh = track(new sa.TinyTransformer(config));
    expect(fresh.getWeights()).not.toEqual(wa);
    fresh.setWeights(wa);
    expect(fresh.getWeights()).toEqual(wa);
    a.reset(config.seed);
    expect(a.getWeights()).toEqual(track(new sa.TinyTransformer(config)).getWeights());
    expect(wa.layers).toHaveLength(2);
    expect(wa.embedding).toHaveLength(V * 32);
    expect(wa.unembedding).toHaveLength(32 * V);
  });

  test('errors name the argument in JS terms, and the model stays usable', () => {
    expectError(() => new sa.TinyTransformer({ ...config, dModel: 30, numHeads: 4 }), RangeError,
      'TinyTransformer: config.dModel: must be divisible by numHeads (4), got 30');
    expectError(() => new sa.TinyTransformer({ ...config, numLayers: 0 }), RangeError,
      'TinyTransformer: config.numLayers: must be > 0, got 0');
    expectError(() => new sa.TinyTransformer({ ...config, seed: -1 }), RangeError,
      'TinyTransformer: config.seed: expected an integer in [0, 2^53), got -1');
    const model = track(new sa.TinyTransformer({ ...config, maxTokens: 4 }));
    const ids = (n) => new Int32Array(n);
    expectError(() => model.forward({ data: ids(10), shape: [2, 5] }), RangeError,
      'TinyTransformer.forward: tokens per row (tokens.shape): expected 1 .. 4 ' +
      '(config.maxTokens), got 5');
    expectError(() => model.forward({ data: Int32Array.of(0, 16), shape: [2] }), RangeError,
      'TinyTransformer.forward: tokens: element 1 is 16, expected a token id in [0, 16) ' +
      '(config.vocab)');
    expectError(() => model.forward({ data: ids(4), shape: [4] }, { targets: ids(3) }),
      RangeError, 'TinyTransformer.forward: targets: expected 4 values for shape [1, 4], got 3');
    expectError(() => model.forward({ data: [0, 1], shape: [2] }), TypeError,
      'TinyTransformer.forward: tokens: expected token ids { data: Int32Array, shape: ' +
      '[batch, tokens] or [tokens] }, got an object (Object)');
    expectError(() => model.backward(), Error, 'TinyTransformer.backward: expected the last ' +
      'forward to be a training one (options.training true) with the weights unchanged since, ' +
      'got none');
    expectError(() => model.gradients(), Error, 'TinyTransformer.gradients: expected a ' +
      'backward since the weights last changed, got none');
    const w = model.getWeights();
    expectError(() => model.setWeights({ ...w, layers: [{ ...w.layers[0],
      wQ: new Float32Array(3) }, w.layers[1]] }), RangeError, 'TinyTransformer.setWeights: ' +
      'weights.layers[0].wQ: expected 1024 values for shape [32, 32], got 3');
    expect(model.getWeights()).toEqual(w);
    expect(model.forward({ data: ids(4), shape: [4] }, { targets: ids(4) }).counted).toBe(4);
    model.dispose();
    expectError(() => model.forward({ data: ids(4), shape: [4] }), Error,
      'TinyTransformer.forward: this TinyTransformer was disposed; create a new one');
  });

  test.each(Object.entries(inference))('the %s build has no TinyTransformer', (build, module) => {
    expectError(() => new module.TinyTransformer(config), Error, 'TinyTransformer: needs the ' +
      `training build: createAttentionModule({ training: true }) (this module is the ${
        module.build} build)`);
  });

  test('gradients() match the loss\'s finite differences on the unembedding bias', () => {
    const model = track(new sa.TinyTransformer({ ...config, dModel: 16 }));
    const { tokens, targets } = copyBatch(generator(5));
    const loss = () => model.forward(tokens, { targets }).loss;
    model.forward(tokens, { targets, training: true });
    model.backward();
    const g = model.gradients().unembeddingBias;
    const w = model.getWeights();
    const h = 1e-2;
    for (const i of [0, 5, 11]) {
      const at = (delta) => {
        const bias = w.unembeddingBias.slice();
        bias[i] += delta;
        model.setWeights({ ...w, unembeddingBias: bias });
        return loss();
      };
      const numeric = (at(h) - at(-h)) / (2 * h);
      // The loss is smooth in the bias (a softmax's log-sum-exp): central
      // differences are exact to O(h^2) plus float32 rounding of the loss.
      expect(Math.abs(numeric - g[i])).toBeLessThanOrEqual(2e-3);
    }
  });
});

describe('properties of the gradients', () => {
  test('dWO is the stack of the heads\' own z_h^T dOutput (the per-head view)', () => {
    const mha = trained(sa);
    const { headOutput } = mha.forward(x, undefined, undefined,
      { training: true, causal: true, returnIntermediates: true });
    const g = mha.backward(dOutput);
    const [batch, heads, tokens, dv] = headOutput.shape;
    const expected = new Float64Array(heads * dv * D);
    for (let b = 0; b < batch; b++) {
      for (let h = 0; h < heads; h++) {
        for (let t = 0; t < tokens; t++) {
          for (let i = 0; i < dv; i++) {
            const z = headOutput.data[((b * heads + h) * tokens + t) * dv + i];
            for (let j = 0; j < D; j++) {
              expected[(h * dv + i) * D + j] += z * dOutput.data[(b * tokens + t) * D + j];
            }
          }
        }
      }
    }
    expect(maxAbsDiff(g.dWO, Float32Array.from(expected))).toBeLessThanOrEqual(1e-5);
  });

  test('grouped-query heads: a shared key/value head\'s gradient is its group\'s sum', () => {
    // One key/value head shared by two query heads, against the same
    // attention with that head copied for each query head.
    const dk = D / 2;
    const w = smallWeights();
    const shared = { ...w, wK: w.wK.filter((_, i) => i % D < dk),
      wV: w.wV.filter((_, i) => i % D < dk), bK: w.bK.slice(0, dk), bV: w.bV.slice(0, dk) };
    const copied = { ...w,
      wK: w.wK.map((_, i) => shared.wK[Math.floor(i / D) * dk + (i % dk)]),
      wV: w.wV.map((_, i) => shared.wV[Math.floor(i / D) * dk + (i % dk)]),
      bK: w.bK.map((_, i) => shared.bK[i % dk]), bV: w.bV.map((_, i) => shared.bV[i % dk]) };
    const gqa = track(new sa.MultiHeadAttention({ dModel: D, numHeads: 2, numKvHeads: 1 }));
    gqa.setWeights(shared);
    const full = track(new sa.MultiHeadAttention({ dModel: D, numHeads: 2 }));
    full.setWeights(copied);
    const options = { training: true, causal: true };
    expect(maxAbsDiff(gqa.forward(x, undefined, undefined, options).output.data,
      full.forward(x, undefined, undefined, options).output.data)).toBeLessThanOrEqual(1e-6);
    const a = gqa.backward(dOutput);
    const b = full.backward(dOutput);
    const groupSum = (m, cols) => Float32Array.from({ length: m.length / 2 }, (_, i) => {
      const row = Math.floor(i / dk) * cols;
      return m[row + (i % dk)] + m[row + dk + (i % dk)];
    });
    expect(maxAbsDiff(a.dWK, groupSum(b.dWK, D))).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(a.dWV, groupSum(b.dWV, D))).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(a.dBK, groupSum(b.dBK, D))).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(a.dInput.data, b.dInput.data)).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(a.dWQ, b.dWQ)).toBeLessThanOrEqual(1e-5);
  });

  test('a query that sees no key has zero gradient and zero output', () => {
    const mha = track(new sa.MultiHeadAttention({ dModel: D, numHeads: 2 }));
    mha.setWeights(smallWeights());
    // Batch item 1 has no real key: its queries attend to nothing.
    const keyPaddingMask = Uint8Array.from([1, 1, 1, 0, 0, 0]);
    const query = { data: values(2 * 3 * D, 21), shape: [2, 3, D] };
    const memory = { data: values(2 * 3 * D, 23), shape: [2, 3, D] };
    const r = mha.forward(query, memory, memory, { training: true, keyPaddingMask });
    const g = mha.backward(dOutput);
    const second = (t) => t.data.subarray(3 * D);
    // dL/dquery is zero there; the output is bO alone.
    expect(Math.max(...second(g.dQuery).map(Math.abs))).toBe(0);
    expect(Math.max(...second(g.dKey).map(Math.abs))).toBe(0);
    expect(maxAbsDiff(second(r.output).subarray(0, D), smallWeights().bO)).toBe(0);
  });
});
