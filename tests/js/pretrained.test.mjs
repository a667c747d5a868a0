// sa.fromPretrained(config, file, { prefix }) on the Hugging Face reference
// blocks of ../shared/hf-models (read at run time): every case, on every
// build and backend, against the block's own output (real query rows only
// where it has padding); token-by-token decoding with the returned options;
// model types and layers without a case of their own (RoBERTa, Gemma, ViT,
// GPT-NeoX, Phi-3's and GPT-J's layers) from the cases' weights under their
// names; transformers 4 config forms; what the objects lack, refused by
// name; the errors of configs, prefixes and options; and
// pool.fromPretrained.
import { rejection } from './support/errors.mjs';
import { maxAbsDiff, transpose } from './support/golden.mjs';
import { blockIo, hfCases, maxRealRowDiff, modelConfig, modelTensors, paddingOptions }
  from './support/hf-models.mjs';
import { feedForward } from './support/layers.mjs';
import { fromPretrainedPooled } from '../../web/src/pretrained.js';
import { backendMatrix, createAttentionPool, loadBuilds, loadCheckpoint, track }
  from './support/modules.mjs';

const builds = await loadBuilds();
const sa = builds.simd;

// `promise` rejects with exactly `Class` (not a subclass) and `message`.
async function expectRejected(promise, Class, message) {
  const error = await rejection(promise);
  expect(error).toBeInstanceOf(Class);
  expect(error.constructor).toBe(Class);
  expect(error.message).toBe(message);
}

const supported = Object.keys(hfCases);
const SPLIT = { placement: 'split' };
const TOLERANCE = 1e-5;

// The module's forward of the block's input with the returned options (a
// pooled object's too).
async function forwardBlock(name, built, extra = {}) {
  const io = blockIo(name);
  const x = io.tensor('x');
  const options = { ...built.forwardOptions, ...paddingOptions(name), ...extra };
  if (built.kind === 'MultiHeadAttention') {
    return (await built.module.forward(x, x, x, options)).output.data;
  }
  if (built.kind === 'TransformerDecoderLayer') {
    return (await built.module.forward(x, io.tensor('memory'), options)).data;
  }
  return (await built.module.forward(x, options)).data;
}

const load = async (module, name, config = modelConfig(name), options = {}) => {
  const built = await module.fromPretrained(config, modelTensors(name),
    { prefix: hfCases[name].prefix, ...options });
  track(built.module);
  return built;
};

// What cases.json says the block is, against the object and its options.
function expectDescribedBy(c, built) {
  const config = built.module.config;
  expect([config.dModel, config.numHeads, config.numKvHeads])
    .toEqual([c.dModel, c.numHeads, c.numKvHeads ?? c.numHeads]);
  expect(built.forwardOptions.causal).toBe(c.causal === true);
  for (const key of ['headDim', 'ffnDim', 'activation', 'eps', 'normFirst']) {
    if (c[key] !== undefined) expect([key, config[key]]).toEqual([key, c[key]]);
  }
  if (c.bias === false) expect(config.bias).toBe(false);
  if (c.softcap !== undefined) expect(built.forwardOptions.softcap).toBe(c.softcap);
  if (c.rope !== undefined) {
    expect(config.rope).toEqual({ style: c.rope.style, base: c.rope.base,
      rotaryDim: c.rope.rotaryDim ?? config.headDim });
  }
}

test('the shared folder has the cases this file expects', () => {
  for (const name of ['llama_layer', 'qwen3_attention', 'phi3_attention', 'gptj_attention']) {
    expect(supported).toContain(name);
  }
  expect(supported.length).toBeGreaterThanOrEqual(13);
});

const matrix = backendMatrix(builds);

describe.each(matrix)('%s build, %s backend', (_, backend, module) => {
  test.each(supported)('%s: the object of its config, its output', async (name) => {
    const c = hfCases[name];
    const built = await load(module, name, undefined, { backend });
    expect(built.module.config.backend).toBe(backend);
    expect(built.loaded.unused).toEqual([]);
    expectDescribedBy(c, built);
    expect(maxRealRowDiff(name, await forwardBlock(name, built))).toBeLessThan(TOLERANCE);
  });
});

test('a refused config leaves no weights behind', async () => {
  const before = sa.memoryStats();
  await expectRejected(load(sa, 'llama_layer', { ...modelConfig('llama_layer'),
    rope_parameters: { rope_type: 'llama3', factor: 8, rope_theta: 500000 } }), Error,
  'fromPretrained: llama: RoPE scaling "llama3" (config.rope_parameters.rope_type) is not ' +
    "supported by this package: its RoPE is unscaled ('default')");
  expect(sa.memoryStats().weightBytes).toEqual(before.weightBytes);
});

describe('what the result holds', () => {
  test('kind, loaded tensors, zero biases; forwardOptions of a decoder-only attention', async () => {
    const built = await load(sa, 'qwen2_attention');
    const { prefix } = hfCases.qwen2_attention;
    expect(built.kind).toBe('MultiHeadAttention');
    expect(built.loaded.layout).toBe('llama');
    // Qwen2's o_proj has no bias.
    expect(built.loaded.zeroBiases).toEqual([`${prefix}.o_proj.bias`]);
    expect(built.loaded.tensors).toHaveLength(
      modelTensors('qwen2_attention').names.filter((n) => n.startsWith(`${prefix}.`)).length);
    expect(built.forwardOptions).toEqual({ causal: true });
    expect(built.incrementalOptions).toEqual({});
  });

  test('an encoder layer runs bidirectionally and has no incremental options', async () => {
    const built = await load(sa, 'bert');
    expect(built.kind).toBe('TransformerEncoderLayer');
    expect(built.forwardOptions).toEqual({ causal: false });
    expect(built).not.toHaveProperty('incrementalOptions');
  });

  test('a sliding window: [sliding_window - 1, 0], in both option sets', async () => {
    const config = modelConfig('mistral_window');
    const built = await load(sa, 'mistral_window', config);
    const window = [config.sliding_window - 1, 0];
    expect(built.forwardOptions).toEqual({ causal: true, window });
    expect(built.incrementalOptions).toEqual({ window });
  });

  test('Gemma 2: scale query_pre_attn_scalar ** -0.5 and the soft-cap', async () => {
    const config = modelConfig('gemma2_attention');
    const built = await load(sa, 'gemma2_attention', config);
    expect(built.forwardOptions).toEqual({ causal: true, window: [config.sliding_window - 1, 0],
      scale: config.query_pre_attn_scalar ** -0.5, softcap: config.attn_logit_softcapping });
  });
});

describe('a whole model: the stack of its blocks (options.prefix omitted)', () => {
  test.each(matrix)('llama, %s build, %s backend: the block\'s output through the final norm; ' +
    'token by token with a cache per layer', async (_, backend, module) => {
    const name = 'llama_layer';
    const config = modelConfig(name);
    const tensors = modelTensors(name);
    const built = await module.fromPretrained(config, tensors, { backend });
    track(built.module);
    expect(built.kind).toBe('TransformerStack');
    expect(built.module.config).toMatchObject({ numLayers: config.num_hidden_layers,
      finalNorm: true, norm: 'rms_norm', activation: 'silu' });
    // Everything but the embeddings (and a head) is the stack's.
    expect(built.loaded.unused).toEqual(tensors.names.filter((n) => n.startsWith('embed_tokens')));
    expect(config.num_hidden_layers).toBe(1);
    const io = blockIo(name);
    const x = io.tensor('x');
    const [batch, tokens, width] = x.shape;
    // The reference: the layer's own output, RMS-normalized by norm.weight.
    const y = io.tensor('y').data;
    const gamma = tensors.tensor('norm.weight').data;
    const expected = new Float64Array(y.length);
    for (let r = 0; r < batch * tokens; r++) {
      let s = 0;
      for (let i = 0; i < width; i++) s += y[r * width + i] ** 2;
      const inv = 1 / Math.sqrt(s / width + config.rms_norm_eps);
      for (let i = 0; i < width; i++) expected[r * width + i] = y[r * width + i] * inv * gamma[i];
    }
    const out = built.module.forward(x, built.forwardOptions).data;
    expect(Math.max(...out.map((v, i) => Math.abs(v - expected[i])))).toBeLessThan(1e-4);
    const caches = built.module.createKVCaches({ batch, maxLength: tokens }).map(track);
    const stepped = new Float32Array(out.length);
    for (let t = 0; t < tokens; t++) {
      const step = { data: x.data.slice(t * width, (t + 1) * width), shape: [1, 1, width] };
      stepped.set(built.module.forwardIncremental(step, caches, built.incrementalOptions).data,
        t * width);
    }
    expect(Math.max(...stepped.map((v, i) => Math.abs(v - out[i])))).toBeLessThan(1e-5);
  });

  test('gemma2: every layer its own window (config.layer_types)', async () => {
    const config = { ...modelConfig('gemma2_attention'), num_hidden_layers: 3,
      layer_types: ['sliding_attention', 'full_attention', 'sliding_attention'] };
    const tensors = modelTensors('gemma2_attention');
    const layer0 = Object.fromEntries(tensors.names.filter((n) => n.startsWith('layers.0.'))
      .map((n) => [n, tensors.tensor(n)]));
    const three = { ...Object.fromEntries(tensors.names.map((n) => [n, tensors.tensor(n)])),
      ...Object.fromEntries([1, 2].flatMap((i) => Object.entries(layer0).map(([n, t]) =>
        [n.replace('layers.0.', `layers.${i}.`), t]))) };
    const built = await sa.fromPretrained(config, three);
    track(built.module);
    const w = config.sliding_window - 1;
    expect(built.module.config.layerWindows).toEqual([[w, 0], [-1, -1], [w, 0]]);
    expect(built.forwardOptions).toEqual({ causal: true,
      scale: config.query_pre_attn_scalar ** -0.5, softcap: config.attn_logit_softcapping });
  });

  test('the pool\'s stack, its layers split and as the pool places them: the module\'s ' +
    'output, token by token with a cache per layer', async () => {
    const name = 'llama_layer';
    const config = modelConfig(name);
    const tensors = modelTensors(name);
    const want = await sa.fromPretrained(config, tensors);
    track(want.module);
    const x = blockIo(name).tensor('x');
    const y = want.module.forward(x, want.forwardOptions);
    const pool = await createAttentionPool({ workers: 2 });
    try {
      const splitting = { TransformerStack: (c) => pool.TransformerStack(c, SPLIT) };
      for (const built of [await fromPretrainedPooled(splitting, config, tensors),
        await pool.fromPretrained(config, tensors)]) {
        expect(built.kind).toBe('TransformerStack');
        expect(built.module.config).toEqual(want.module.config);
        const out = await built.module.forward(x, built.forwardOptions);
        expect(maxAbsDiff(out.data, y.data)).toBeLessThan(1e-6);
        const [batch, tokens, width] = x.shape;
        const caches = await built.module.createKVCaches({ batch, maxLength: tokens });
        const stepped = new Float32Array(out.data.length);
        for (let t = 0; t < tokens; t++) {
          const step = { data: x.data.slice(t * width, (t + 1) * width), shape: [1, 1, width] };
          stepped.set((await built.module.forwardIncremental(step, caches,
            built.incrementalOptions)).data, t * width);
        }
        expect(maxAbsDiff(stepped, y.data)).toBeLessThan(1e-5);
        await built.module.dispose();
      }
    } finally {
      await pool.dispose();
    }
  });
});

describe('token by token with incrementalOptions', () => {
  // f16 caches: each cached value rounded once (2^-11 relative).
  const f16Tolerance = (name) => 8 * 2 ** -11 *
    blockIo(name).tensor('y').data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);

  test.each(['mistral_window', 'gemma2_attention', 'gptj_attention', 'whisper_decoder'].flatMap(
    (name) => [[name, 'f32'], [name, 'f16']]))('%s, %s cache', async (name, cacheType) => {
    const built = await load(sa, name, undefined, { cacheType });
    expect(built.module.config.cacheType).toBe(cacheType);
    const io = blockIo(name);
    const x = io.tensor('x');
    const [batch, tokens, width] = x.shape;
    const cache = track(built.module.createKVCache({ batch, maxLength: tokens }));
    const memory = built.kind === 'TransformerDecoderLayer'
      ? track(built.module.precomputeMemory(io.tensor('memory'))) : undefined;
    const out = new Float32Array(tokens * width);
    for (let t = 0; t < tokens; t++) {
      const step = { data: x.data.slice(t * width, (t + 1) * width), shape: [1, 1, width] };
      out.set(memory === undefined
        ? built.module.forwardIncremental(step, cache, built.incrementalOptions).output.data
        : built.module.forwardIncremental(step, cache, memory, built.incrementalOptions).data,
      t * width);
    }
    expect(batch).toBe(1);
    expect(maxRealRowDiff(name, out)).toBeLessThan(cacheType === 'f32' ? TOLERANCE
      : f16Tolerance(name));
  });
});

test.each([['f16', 11], ['bf16', 8]])('options.weights %s: the matrices held so', async (weights, bits) => {
  const name = 'llama_attention';
  const built = await load(sa, name, undefined, { weights });
  expect(built.module.config.weights).toBe(weights);
  const scale = blockIo(name).tensor('y').data.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  expect(maxRealRowDiff(name, await forwardBlock(name, built))).toBeLessThan(8 * 2 ** -bits * scale);
});

test('it returns a promise, which bad arguments reject', async () => {
  const promise = sa.fromPretrained('config.json', modelTensors('bert'), { prefix: 'x' });
  expect(promise).toBeInstanceOf(Promise);
  await expectRejected(promise, TypeError,
    'fromPretrained: config: expected the parsed config.json, an object, got "config.json"');
});

// ---------------------------------------------------------------------------
// pool.fromPretrained
// ---------------------------------------------------------------------------

describe('pool.fromPretrained, 2 workers', () => {
  let pool;
  beforeAll(async () => {
    pool = await createAttentionPool({ workers: 2 });
  });
  afterAll(async () => {
    await pool?.dispose();
  });

  // Every supported case, placed as the pool places it (at these widths its
  // layers and blocks whole in one worker) and split over both workers (the
  // layers' and blocks' sublayers and the attentions by (grouped) key/value
  // heads, the FFNs by hidden units).
  const splitting = () => ({ MultiHeadAttention: pool.MultiHeadAttention,
    ...Object.fromEntries(['TransformerEncoderLayer', 'TransformerDecoderLayer',
      'TransformerBlock'].map((kind) => [kind, (config) => pool[kind](config, SPLIT)])) });
  test.each(supported)('%s: the pooled object of its config, its output, placed by the pool ' +
    'and split', async (name) => {
    const c = hfCases[name];
    for (const split of [false, true]) {
      const built = split
        ? await fromPretrainedPooled(splitting(), modelConfig(name), modelTensors(name),
          { prefix: c.prefix })
        : await pool.fromPretrained(modelConfig(name), modelTensors(name), { prefix: c.prefix });
      try {
        if (split && built.kind !== 'MultiHeadAttention') {
          expect(built.module.placement).toBe('split');
        }
        expect(built.loaded.unused).toEqual([]);
        expectDescribedBy(c, built);
        expect(maxRealRowDiff(name, await forwardBlock(name, built))).toBeLessThan(TOLERANCE);
      } finally {
        await built.module.dispose();
      }
    }
  });

  test('a refused part and a config the file contradicts: the synchronous messages', async () => {
    const yarn = { ...modelConfig('qwen3_attention'), rope_parameters: { rope_type: 'yarn',
      factor: 4, rope_theta: 1e6 } };
    const refused = await rejection(sa.fromPretrained(yarn, modelTensors('qwen3_attention'),
      { prefix: hfCases.qwen3_attention.prefix }));
    await expectRejected(pool.fromPretrained(yarn, modelTensors('qwen3_attention'),
      { prefix: hfCases.qwen3_attention.prefix }), Error, refused.message);
    const config = modelConfig('llama_attention');
    const { prefix } = hfCases.llama_attention;
    const contradicted = { ...config, num_key_value_heads: config.num_attention_heads };
    const synchronous = await rejection(sa.fromPretrained(contradicted,
      modelTensors('llama_attention'), { prefix }));
    await expectRejected(pool.fromPretrained(contradicted, modelTensors('llama_attention'),
      { prefix }), RangeError, synchronous.message);
  });

  test('the object whose weights do not load is disposed', async () => {
    const made = [];
    const spy = { MultiHeadAttention: async (config) => {
      made.push(await pool.MultiHeadAttention(config));
      return made.at(-1);
    } };
    const config = modelConfig('llama_attention');
    await rejection(fromPretrainedPooled(spy, { ...config,
      num_key_value_heads: config.num_attention_heads }, modelTensors('llama_attention'),
    { prefix: hfCases.llama_attention.prefix }));
    expect(made.map((m) => m.disposed)).toEqual([true]);
  });
});

// ---------------------------------------------------------------------------
// Model types without a case of their own, and transformers 4 configs
// ---------------------------------------------------------------------------

describe('the cases\' weights under other model types\' names', () => {
  test('roberta: a BERT layer', async () => {
    const built = await load(sa, 'bert', { ...modelConfig('bert'), model_type: 'roberta' });
    expect(maxRealRowDiff('bert', await forwardBlock('bert', built))).toBeLessThan(TOLERANCE);
  });

  test('gemma: a Llama attention', async () => {
    const built = await load(sa, 'llama_attention',
      { ...modelConfig('llama_attention'), model_type: 'gemma' });
    expect(built.forwardOptions).toEqual({ causal: true });
    expect(maxRealRowDiff('llama_attention', await forwardBlock('llama_attention', built)))
      .toBeLessThan(TOLERANCE);
  });

  // The Llama block's tensors, edited: { name: { data, shape } }.
  const llamaLayer = modelTensors('llama_layer');
  const layerPrefix = hfCases.llama_layer.prefix;
  const llamaNamed = (edit) => Object.fromEntries(llamaLayer.names.map((n) => [n,
    edit(n.slice(layerPrefix.length + 1), llamaLayer.tensor(n)) ?? llamaLayer.tensor(n)]));
  const stacked = (...parts) => ({ data: Float32Array.from(parts.flatMap((p) => [...p.data])),
    shape: [parts.reduce((n, p) => n + p.shape[0], 0), parts[0].shape[1]] });
  const llamaPart = (n) => llamaLayer.tensor(`${layerPrefix}.${n}`);

  test('gemma: the Llama block with its norms stored as weight - 1', async () => {
    const tensors = llamaNamed((n, t) => (/layernorm\.weight$/.test(n)
      ? { data: t.data.map((v) => v - 1), shape: t.shape } : undefined));
    const built = await load(sa, 'llama_layer', { ...modelConfig('llama_layer'),
      model_type: 'gemma' }, {});
    const gemma = await sa.fromPretrained({ ...modelConfig('llama_layer'), model_type: 'gemma' },
      tensors, { prefix: layerPrefix });
    track(gemma.module);
    expect(gemma.module.config.norm).toBe('gemma_rms_norm');
    expect(maxRealRowDiff('llama_layer', await forwardBlock('llama_layer', gemma)))
      .toBeLessThan(TOLERANCE);
    // The same tensors read as Llama's: every norm off by one, another output.
    expect(maxRealRowDiff('llama_layer', await forwardBlock('llama_layer', built)))
      .toBeGreaterThan(1e-2);
  });

  test('phi3: the Llama block with q, k, v in one qkv_proj and gate, up in gate_up_proj',
    async () => {
      const fused = Object.fromEntries(Object.entries(llamaNamed(() => undefined)).filter(([n]) =>
        !/(q_proj|k_proj|v_proj|gate_proj|up_proj)\.weight$/.test(n)));
      fused[`${layerPrefix}.self_attn.qkv_proj.weight`] = stacked(llamaPart('self_attn.q_proj.weight'),
        llamaPart('self_attn.k_proj.weight'), llamaPart('self_attn.v_proj.weight'));
      fused[`${layerPrefix}.mlp.gate_up_proj.weight`] = stacked(llamaPart('mlp.gate_proj.weight'),
        llamaPart('mlp.up_proj.weight'));
      const phi3 = await sa.fromPretrained({ ...modelConfig('llama_layer'), model_type: 'phi3' },
        fused, { prefix: layerPrefix });
      track(phi3.module);
      expect([phi3.kind, phi3.loaded.layout]).toEqual(['TransformerBlock', 'phi3']);
      expect(maxRealRowDiff('llama_layer', await forwardBlock('llama_layer', phi3)))
        .toBeLessThan(TOLERANCE);
    });

  // GPT-2's block h.1 as nn.Linear weights [out, in]: { name: { data, shape } }.
  const gpt2 = modelTensors('gpt2');
  const at = (n) => gpt2.tensor(`${hfCases.gpt2.prefix}.${n}`);
  const linear = (n) => {
    const { data, shape: [rows, cols] } = at(n);
    return { data: transpose(data, rows, cols), shape: [cols, rows] };
  };
  const rows = (t, from, count) => {
    const width = t.shape[1] ?? 1;
    return { data: t.data.slice(from * width, (from + count) * width),
      shape: [count, ...t.shape.slice(1)] };
  };
  const named = (prefix, tensors) =>
    Object.fromEntries(Object.entries(tensors).map(([n, t]) => [`${prefix}${n}`, t]));
  const e = hfCases.gpt2.dModel;
  const heads = hfCases.gpt2.numHeads;
  const qkv = { weight: linear('attn.c_attn.weight'), bias: at('attn.c_attn.bias') };
  const gpt2Config = modelConfig('gpt2');

  test('vit: GPT-2\'s pre-LN block under ViT\'s names, run causally as GPT-2 runs it', async () => {
    const tensors = named('vit.encoder.layer.1.', {
      'layernorm_before.weight': at('ln_1.weight'), 'layernorm_before.bias': at('ln_1.bias'),
      ...Object.fromEntries(['query', 'key', 'value'].flatMap((x, i) => [
        [`attention.attention.${x}.weight`, rows(qkv.weight, i * e, e)],
        [`attention.attention.${x}.bias`, rows(qkv.bias, i * e, e)]])),
      'attention.output.dense.weight': linear('attn.c_proj.weight'),
      'attention.output.dense.bias': at('attn.c_proj.bias'),
      'layernorm_after.weight': at('ln_2.weight'), 'layernorm_after.bias': at('ln_2.bias'),
      'intermediate.dense.weight': linear('mlp.c_fc.weight'),
      'intermediate.dense.bias': at('mlp.c_fc.bias'),
      'output.dense.weight': linear('mlp.c_proj.weight'), 'output.dense.bias': at('mlp.c_proj.bias'),
    });
    const config = { model_type: 'vit', hidden_size: e, num_attention_heads: heads,
      intermediate_size: hfCases.gpt2.ffnDim, hidden_act: gpt2Config.activation_function,
      layer_norm_eps: gpt2Config.layer_norm_epsilon, qkv_bias: true };
    const layer = await sa.fromPretrained(config, tensors, { prefix: 'vit.encoder.layer.1' });
    track(layer.module);
    expect([layer.kind, layer.loaded.layout, layer.module.config.normFirst])
      .toEqual(['TransformerEncoderLayer', 'vit', true]);
    expect(layer.forwardOptions).toEqual({ causal: false });
    expect(maxRealRowDiff('gpt2', await forwardBlock('gpt2', layer, { causal: true })))
      .toBeLessThan(TOLERANCE);
    // Its attention alone equals GPT-2's.
    const attention = await sa.fromPretrained(config, tensors,
      { prefix: 'vit.encoder.layer.1.attention' });
    track(attention.module);
    const gpt2Attention = track(new sa.MultiHeadAttention({ dModel: e, numHeads: heads }));
    loadCheckpoint(gpt2Attention, gpt2, { prefix: `${hfCases.gpt2.prefix}.attn` });
    const x = blockIo('gpt2').tensor('x');
    expect(attention.module.forward(x).output.data).toEqual(gpt2Attention.forward(x).output.data);
  });

  // GPT-NeoX's query_key_value: each head's q, k and v rows in turn.
  const byHead = (t) => {
    const width = (t.shape[1] ?? 1) * (e / heads);
    const data = new Float32Array(t.data.length);
    for (let h = 0; h < heads; h++) {
      for (let j = 0; j < 3; j++) {
        const from = (j * heads + h) * width;
        data.set(t.data.subarray(from, from + width), (3 * h + j) * width);
      }
    }
    return { data, shape: t.shape };
  };
  const neoxTensors = named('gpt_neox.layers.1.', {
    'input_layernorm.weight': at('ln_1.weight'), 'input_layernorm.bias': at('ln_1.bias'),
    'attention.query_key_value.weight': byHead(qkv.weight),
    'attention.query_key_value.bias': byHead(qkv.bias),
    'attention.dense.weight': linear('attn.c_proj.weight'),
    'attention.dense.bias': at('attn.c_proj.bias'),
    // Buffers older checkpoints hold, which no layout takes.
    'attention.bias': { data: new Float32Array(4), shape: [1, 1, 2, 2] },
    'attention.rotary_emb.inv_freq': { data: new Float32Array(2), shape: [2] },
    'post_attention_layernorm.weight': at('ln_2.weight'),
    'post_attention_layernorm.bias': at('ln_2.bias'),
    'mlp.dense_h_to_4h.weight': linear('mlp.c_fc.weight'),
    'mlp.dense_h_to_4h.bias': at('mlp.c_fc.bias'),
    'mlp.dense_4h_to_h.weight': linear('mlp.c_proj.weight'),
    'mlp.dense_4h_to_h.bias': at('mlp.c_proj.bias'),
  });
  const neox = (fields) => ({ model_type: 'gpt_neox', hidden_size: e, num_attention_heads: heads,
    intermediate_size: hfCases.gpt2.ffnDim, hidden_act: gpt2Config.activation_function,
    layer_norm_eps: gpt2Config.layer_norm_epsilon, ...fields });
  // A quarter of each head rotates (GPT-NeoX's default rotary_pct).
  const rope = { style: 'half', base: 10000, rotaryDim: e / heads / 4 };

  test.each([
    ['transformers 5', { rope_parameters: { rope_type: 'default', rope_theta: rope.base,
      partial_rotary_factor: 0.25 } }],
    ['transformers 4', { rotary_pct: 0.25, rotary_emb_base: rope.base }],
    ['defaults', {}],
  ])('gpt_neox (%s config): GPT-2\'s weights with RoPE, equal to that layer built by hand',
    async (_, fields) => {
      const x = blockIo('gpt2').tensor('x');
      const layer = await sa.fromPretrained(neox({ use_parallel_residual: false, ...fields }),
        neoxTensors, { prefix: 'gpt_neox.layers.1' });
      track(layer.module);
      expect(layer.module.config.rope).toEqual(rope);
      expect(layer.forwardOptions).toEqual({ causal: true });
      const byHand = track(new sa.TransformerEncoderLayer({ dModel: e, numHeads: heads,
        ffnDim: hfCases.gpt2.ffnDim, activation: hfCases.gpt2.activation, eps: hfCases.gpt2.eps,
        normFirst: true, rope }));
      loadCheckpoint(byHand, gpt2, { prefix: hfCases.gpt2.prefix });
      expect(layer.module.forward(x, layer.forwardOptions).data)
        .toEqual(byHand.forward(x, { causal: true }).data);

      // The attention of the parallel form, which loads alone.
      const attention = await sa.fromPretrained(neox(fields), neoxTensors,
        { prefix: 'gpt_neox.layers.1.attention' });
      track(attention.module);
      const handAttention = track(new sa.MultiHeadAttention({ dModel: e, numHeads: heads, rope }));
      loadCheckpoint(handAttention, gpt2, { prefix: `${hfCases.gpt2.prefix}.attn` });
      expect(attention.module.forward(x, x, x, attention.forwardOptions).output.data)
        .toEqual(handAttention.forward(x, x, x, { causal: true }).output.data);
    });

  test('gpt_neox with a rotary fraction that leaves no feature of a head to rotate', async () => {
    const built = await sa.fromPretrained(neox({ rotary_pct: 1 / (e / heads) / 2 }), neoxTensors,
      { prefix: 'gpt_neox.layers.1.attention' });
    track(built.module);
    expect(built.module.config.rope).toBeUndefined();
  });

  test('gpt_neox\'s parallel layer (use_parallel_residual, its default): ' +
    'x + attention(ln1(x)) + mlp(ln2(x))', async () => {
    const layer = await sa.fromPretrained(neox({}), neoxTensors, { prefix: 'gpt_neox.layers.1' });
    track(layer.module);
    expect([layer.kind, layer.loaded.layout]).toEqual(['TransformerBlock', 'gpt_neox']);
    expect(layer.module.config.sublayers.map((s) => s.parallel)).toEqual([false, true]);
    const attention = await sa.fromPretrained(neox({}), neoxTensors,
      { prefix: 'gpt_neox.layers.1.attention' });
    track(attention.module);
    const x = blockIo('gpt2').tensor('x');
    const [, tokens] = x.shape;
    const norm = (n) => sa.layerNorm(x, { gamma: at(`${n}.weight`).data, beta: at(`${n}.bias`).data,
      eps: gpt2Config.layer_norm_epsilon }).data;
    const ln1 = { data: norm('ln_1'), shape: x.shape };
    const attended = attention.module.forward(ln1, ln1, ln1, { causal: true }).output.data;
    // GPT-2's Conv1D weights are [in, out]: the X @ W layout the FFN takes.
    const mlp = feedForward(norm('ln_2'), tokens * x.shape[0], e, hfCases.gpt2.ffnDim,
      { w1: at('mlp.c_fc.weight').data, b1: at('mlp.c_fc.bias').data,
        w2: at('mlp.c_proj.weight').data, b2: at('mlp.c_proj.bias').data },
      hfCases.gpt2.activation);
    const expected = x.data.map((v, i) => v + attended[i] + mlp[i]);
    const y = layer.module.forward(x, layer.forwardOptions).data;
    expect(Math.max(...y.map((v, i) => Math.abs(v - expected[i])))).toBeLessThan(TOLERANCE);
  });

  test('GPT-2\'s and Llama\'s buffers beside the weights are left out', async () => {
    const { prefix } = hfCases.gpt2;
    const tensors = { ...Object.fromEntries(gpt2.names.map((n) => [n, gpt2.tensor(n)])),
      [`${prefix}.attn.bias`]: { data: new Float32Array(4), shape: [1, 1, 2, 2] },
      [`${prefix}.attn.masked_bias`]: { data: new Float32Array(1), shape: [] } };
    const built = await sa.fromPretrained(gpt2Config, tensors, { prefix });
    track(built.module);
    expect(maxRealRowDiff('gpt2', await forwardBlock('gpt2', built))).toBeLessThan(TOLERANCE);
    const llama = modelTensors('llama_attention');
    const attention = hfCases.llama_attention.prefix;
    const withFrequencies = { ...Object.fromEntries(llama.names.map((n) => [n, llama.tensor(n)])),
      [`${attention}.rotary_emb.inv_freq`]: { data: new Float32Array(8), shape: [8] } };
    const built2 = await sa.fromPretrained(modelConfig('llama_attention'), withFrequencies,
      { prefix: attention });
    track(built2.module);
    expect(maxRealRowDiff('llama_attention', await forwardBlock('llama_attention', built2)))
      .toBeLessThan(TOLERANCE);
  });

  test('GPT-2\'s scale_attn_by_inverse_layer_idx: the scale over layer + 1', async () => {
    const built = await load(sa, 'gpt2', { ...gpt2Config, scale_attn_by_inverse_layer_idx: true });
    const layer = Number(hfCases.gpt2.prefix.split('.').pop());
    expect(built.forwardOptions).toEqual({ causal: true,
      scale: 1 / Math.sqrt(e / heads) / (layer + 1) });
  });
});

describe('transformers 4 config forms', () => {
  const legacy = (name, edit) => {
    const { rope_parameters: rope, layer_types: _, ...rest } = modelConfig(name);
    return { ...rest, rope_theta: rope.rope_theta, rope_scaling: null, ...edit(rope) };
  };
  test.each([
    ['llama_attention', () => ({})],
    ['qwen2_attention', () => ({ use_sliding_window: false })],
    ['mistral_window', () => ({})],
    // Without layer_types, Gemma 2's even layers slide.
    ['gemma2_attention', () => ({})],
    ['phi3_attention', (rope) => ({ partial_rotary_factor: rope.partial_rotary_factor })],
  ])('%s: rope_theta, rope_scaling null, no layer_types', async (name, edit) => {
    const built = await load(sa, name, legacy(name, edit));
    expect(maxRealRowDiff(name, await forwardBlock(name, built))).toBeLessThan(TOLERANCE);
  });
});

describe('a layer\'s attention type', () => {
  const name = 'gemma2_attention';
  const { prefix } = hfCases[name];
  const file = modelTensors(name);
  // The case's attention as layer 1's and as a module named alone.
  const renamed = (to) => Object.fromEntries(file.names.filter((n) => n.startsWith(`${prefix}.`))
    .map((n) => [`${to}${n.slice(prefix.length)}`, file.tensor(n)]));
  const config = { ...modelConfig(name), layer_types: ['sliding_attention', 'full_attention'] };

  test('config.layer_types by the prefix\'s layer number', async () => {
    const built = await sa.fromPretrained(config, renamed('layers.1.self_attn'),
      { prefix: 'layers.1.self_attn' });
    track(built.module);
    expect(built.forwardOptions).not.toHaveProperty('window');
  });

  test('a prefix without a layer number, where the layers differ', async () => {
    await expectRejected(sa.fromPretrained(config, renamed('self_attn'), { prefix: 'self_attn' }),
      RangeError, 'fromPretrained: gemma2: config.layer_types differs between layers, and the ' +
      'prefix names no layer number: give the prefix with its layer (e.g. ' +
      '\'layers.3.self_attn\')');
    const same = { ...config, layer_types: ['sliding_attention', 'sliding_attention'] };
    const built = await sa.fromPretrained(same, renamed('self_attn'), { prefix: 'self_attn' });
    track(built.module);
    expect(maxRealRowDiff(name, await forwardBlock(name, built))).toBeLessThan(TOLERANCE);
  });

  test('an attention type the package lacks', async () => {
    await expectRejected(load(sa, name, { ...config, layer_types: ['chunked_attention', 'x'] }),
      Error, 'fromPretrained: gemma2: the attention type "chunked_attention" ' +
      "(config.layer_types) is not supported by this package ('full_attention', " +
      "'sliding_attention')");
  });
});

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

describe('refusals: what the objects lack, named', () => {
  const llama = () => modelConfig('llama_attention');
  const attention = hfCases.llama_attention.prefix;
  test.each([
    ['RoPE scaling in rope_parameters', { rope_parameters: { rope_type: 'llama3', factor: 8,
      rope_theta: 500000 } }, 'fromPretrained: llama: RoPE scaling "llama3" ' +
      '(config.rope_parameters.rope_type) is not supported by this package: its RoPE is ' +
      "unscaled ('default')"],
    ['RoPE scaling in rope_scaling', { rope_scaling: { type: 'linear', factor: 2 } },
      'fromPretrained: llama: RoPE scaling "linear" (config.rope_scaling.type) is not ' +
      "supported by this package: its RoPE is unscaled ('default')"],
    ['rope_scaling without a type', { rope_scaling: { factor: 2 } },
      'fromPretrained: llama: RoPE scaling (config.rope_scaling) is not supported by this ' +
      "package: its RoPE is unscaled ('default')"],
    ['a model type', { model_type: 'mamba' }, 'fromPretrained: model_type "mamba" is not ' +
      'supported (supported: bert, roberta, distilbert, vit, gpt2, bart, whisper, gptj, ' +
      'gpt_neox, llama, mistral, qwen2, qwen3, gemma, gemma2, phi3)'],
    ['bidirectional attention', { model_type: 'gemma2', use_bidirectional_attention: true },
      'fromPretrained: gemma2: bidirectional attention (config.use_bidirectional_attention: ' +
      'true) is not supported by this package'],
  ])('%s', async (_, edit, message) => {
    await expectRejected(sa.fromPretrained({ ...llama(), ...edit }, modelTensors('llama_attention'),
      { prefix: attention }), Error, message);
  });


  test('BERT\'s attention module adds a residual and a LayerNorm', async () => {
    await expectRejected(sa.fromPretrained(modelConfig('bert'), modelTensors('bert'),
      { prefix: 'encoder.layer.1.attention' }), Error, 'fromPretrained: bert: ' +
      '\'encoder.layer.1.attention\' adds the residual and a LayerNorm ' +
      '(attention.output.LayerNorm) to the attention\'s output, which a MultiHeadAttention ' +
      'does not: load its layer, \'encoder.layer.1\'');
  });

  test('BERT\'s relative positions, an activation the layers lack', async () => {
    const bert = modelConfig('bert');
    const { prefix } = hfCases.bert;
    await expectRejected(sa.fromPretrained({ ...bert, position_embedding_type: 'relative_key' },
      modelTensors('bert'), { prefix }), Error, 'fromPretrained: bert: relative position ' +
      'scores (config.position_embedding_type "relative_key") is not supported by this package');
    await expectRejected(sa.fromPretrained({ ...bert, hidden_act: 'mish' }, modelTensors('bert'),
      { prefix }), Error, 'fromPretrained: bert: config.hidden_act: the activation "mish" is ' +
      'not supported by this package\'s layers (gelu, gelu_python, relu, gelu_new, ' +
      'gelu_pytorch_tanh, gelu_fast, silu, swish)');
  });
});

describe('errors of the arguments', () => {
  const config = modelConfig('llama_attention');
  const file = modelTensors('llama_attention');
  const prefix = hfCases.llama_attention.prefix;

  test('no prefix: a whole model only for the decoder-only models of blocks', async () => {
    await expectRejected(sa.fromPretrained(modelConfig('bart_encoder'), modelTensors('bart_encoder')),
      Error, 'fromPretrained: bart: options.prefix: a whole model is supported for the ' +
      'decoder-only models whose layers are blocks (gptj, gpt_neox, llama, mistral, qwen2, ' +
      "qwen3, gemma, gemma2, phi3), not bart: name a layer ('…{encoder,decoder}.layers.N'), " +
      "an attention ('…{encoder,decoder}.layers.N.self_attn') or an attention " +
      "('…{encoder,decoder}.layers.N.encoder_attn')");
    for (const options of [undefined, {}, { prefix: '' }]) {
      const built = await sa.fromPretrained(config, file, options);
      track(built.module);
      expect(built.kind).toBe('TransformerStack');
    }
  });

  test('a prefix that names neither a layer nor an attention', async () => {
    for (const wrong of ['layers.0.mlp', 'model', 'encoder.layer.0']) {
      await expectRejected(sa.fromPretrained(config, file, { prefix: wrong }), RangeError,
        `fromPretrained: llama: options.prefix '${wrong}' names none of what fromPretrained ` +
        "builds: a layer ('…layers.N') or an attention ('…layers.N.self_attn')");
    }
    // encoder_attn is a decoder layer's.
    await expectRejected(sa.fromPretrained(modelConfig('bart_encoder'), modelTensors('bart_encoder'),
      { prefix: 'encoder.layers.1.encoder_attn' }), RangeError, 'fromPretrained: bart: ' +
      "options.prefix 'encoder.layers.1.encoder_attn' names none of what fromPretrained builds: " +
      "a layer ('…{encoder,decoder}.layers.N'), an attention " +
      "('…{encoder,decoder}.layers.N.self_attn') or an attention " +
      "('…{encoder,decoder}.layers.N.encoder_attn')");
  });

  test('config, file and options of the wrong type', async () => {
    await expectRejected(sa.fromPretrained('config.json', file, { prefix }), TypeError,
      'fromPretrained: config: expected the parsed config.json, an object, got "config.json"');
    await expectRejected(sa.fromPretrained({ ...config, model_type: undefined }, file, { prefix }),
      TypeError, 'fromPretrained: config.model_type: expected a string, got undefined');
    await expectRejected(sa.fromPretrained(config, null, { prefix }), TypeError,
      'fromPretrained: file: expected a SafetensorsFile (readSafetensors, parseSafetensors) ' +
      'or an object of tensors by name, got null');
    await expectRejected(sa.fromPretrained(config, file, { prefix, layout: 'llama' }), TypeError,
      "fromPretrained: options: unknown key 'layout' (expected prefix, backend, weights, " +
      'cacheType)');
    await expectRejected(sa.fromPretrained(config, file, { prefix: 3 }), TypeError,
      'fromPretrained: options.prefix: expected a string, got 3');
  });

  test('config fields missing or of the wrong type, named', async () => {
    const { hidden_size: _, ...noWidth } = config;
    await expectRejected(sa.fromPretrained(noWidth, file, { prefix }), TypeError,
      'fromPretrained: llama: config.hidden_size: expected a positive integer, got undefined');
    await expectRejected(sa.fromPretrained({ ...config, num_key_value_heads: '2' }, file,
      { prefix }), TypeError, 'fromPretrained: llama: config.num_key_value_heads: expected a ' +
      'positive integer, got "2"');
    const { head_dim: __, ...noHeadDim } = config;
    await expectRejected(sa.fromPretrained({ ...noHeadDim, num_attention_heads: 5 }, file,
      { prefix }), RangeError, 'fromPretrained: llama: config.hidden_size 64 is not a ' +
      'multiple of config.num_attention_heads 5');
    await expectRejected(sa.fromPretrained({ ...config, rope_parameters: { rope_theta: -1 } }, file,
      { prefix }), TypeError, 'fromPretrained: llama: config.rope_parameters.rope_theta: ' +
      'expected a positive finite number, got -1');
  });

  test('a config the file contradicts: the loader\'s message, where, and no object left', async () => {
    const before = sa.memoryStats();
    await expectRejected(sa.fromPretrained({ ...config, num_key_value_heads: config.num_attention_heads },
      file, { prefix }), RangeError, `fromPretrained: llama '${prefix}': loadCheckpoint: ` +
      `${prefix}.k_proj.weight: expected shape [64, 64] (PyTorch's k_proj_weight of this ` +
      'MultiHeadAttention), got [32, 64]');
    expect(sa.memoryStats().weightBytes).toEqual(before.weightBytes);
  });
});
