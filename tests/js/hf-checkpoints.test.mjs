// Real Hugging Face checkpoints (../shared/hf-models, read at run time: see
// its README) through readSafetensors + loadCheckpoint: Whisper's decoder
// layer, whose k_proj has no bias, against the block's own output; grouped
// K/V heads (Llama); a NaN or infinity named by the checkpoint's tensor and
// its own index; layout names that are Object.prototype keys; tensors
// under the prefix that no layout names.
import fs from 'node:fs';
import { expectError } from './support/errors.mjs';
import { hfCases as cases, maxRealRowDiff, modelConfig, modelFile, modelTensors }
  from './support/hf-models.mjs';
import { createAttentionModule, loadCheckpoint, parseSafetensors, readSafetensors, track }
  from './support/modules.mjs';
import { floatToHalf, writeSafetensors } from './support/safetensors-writer.mjs';

const sa = await createAttentionModule();

function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return a.length === b.length ? m : Infinity;
}

// The checkpoint's tensors under `prefix`, as { name: { data, shape } }
// (with `dtype: 'F32'` too when withDtype: what file.tensor() gives).
function tensorsUnder(file, prefix, withDtype = false) {
  return Object.fromEntries(file.names.filter((n) => n.startsWith(prefix)).map((n) => {
    const { data, shape, dtype } = file.tensor(n);
    return [n, withDtype ? { data, shape, dtype } : { data, shape }];
  }));
}

describe('Whisper: a decoder layer whose k_proj has no bias', () => {
  const c = cases.whisper_decoder;
  const hf = modelConfig('whisper_decoder');
  // Whisper's decoder layer: pre-LN, GELU (activation_function), causal
  // self-attention, LayerNorm's default eps (cases.json).
  const config = {
    dModel: hf.d_model, numHeads: hf.decoder_attention_heads, ffnDim: hf.decoder_ffn_dim,
    activation: hf.activation_function, normFirst: c.normFirst, eps: c.eps,
  };
  const zeroBiases = ['self_attn', 'encoder_attn'].map((a) => `${c.prefix}.${a}.k_proj.bias`);

  test('loads with the absent biases as zeros, and gives the block\'s output', async () => {
    const file = await readSafetensors(modelFile('whisper_decoder.safetensors'));
    const io = await readSafetensors(modelFile('whisper_decoder_io.safetensors'));
    const layer = track(new sa.TransformerDecoderLayer(config));
    const result = loadCheckpoint(layer, file, { prefix: c.prefix });
    expect(result.layout).toBe(c.layout);
    expect(result.unused).toEqual([]);
    expect(result.zeroBiases).toEqual(zeroBiases);
    expect(result.tensors).toHaveLength(file.names.filter((n) => n.startsWith(`${c.prefix}.`)).length);
    const y = io.tensor('y');
    const out = layer.forward(io.tensor('x'), io.tensor('memory'), { causal: c.causal });
    expect(out.shape).toEqual(y.shape);
    // No padding in this case: every row is a real token's.
    expect(maxAbsDiff(out.data, y.data)).toBeLessThan(1e-5);
  });

  test('a pooled layer loads it the same', async () => {
    const file = parseSafetensors(fs.readFileSync(modelFile('whisper_decoder.safetensors')));
    const io = parseSafetensors(fs.readFileSync(modelFile('whisper_decoder_io.safetensors')));
    const { createAttentionPool } = await import('./support/modules.mjs');
    const pool = await createAttentionPool({ workers: 1 });
    try {
      const layer = await pool.TransformerDecoderLayer(config);
      expect((await loadCheckpoint(layer, file, { prefix: c.prefix })).zeroBiases).toEqual(zeroBiases);
      const out = await layer.forward(io.tensor('x'), io.tensor('memory'), { causal: c.causal });
      expect(maxAbsDiff(out.data, io.tensor('y').data)).toBeLessThan(1e-5);
    } finally {
      await pool.dispose();
    }
  });

  test('an absent weight is still an error; a MultiHeadAttention without bias takes none', async () => {
    const file = await readSafetensors(modelFile('whisper_decoder.safetensors'));
    const all = tensorsUnder(file, `${c.prefix}.`);
    const { [`${c.prefix}.encoder_attn.k_proj.weight`]: _, ...noWeight } = all;
    expectError(() => loadCheckpoint(track(new sa.TransformerDecoderLayer(config)), noWeight,
      { prefix: c.prefix }), RangeError, `loadCheckpoint: missing '${c.prefix}.encoder_attn.` +
      "k_proj.weight' (layout 'separate' of a TransformerDecoderLayer)");
    const attention = tensorsUnder(file, `${c.prefix}.self_attn.`, true);
    const withBias = track(new sa.MultiHeadAttention({ dModel: config.dModel, numHeads: config.numHeads }));
    expect(loadCheckpoint(withBias, attention, { prefix: `${c.prefix}.self_attn` }).zeroBiases)
      .toEqual([zeroBiases[0]]);
    const noBias = track(new sa.MultiHeadAttention({ dModel: config.dModel,
      numHeads: config.numHeads, bias: false }));
    const onlyWeights = Object.fromEntries(Object.entries(attention).filter(([n]) => !n.endsWith('bias')));
    expect(loadCheckpoint(noBias, onlyWeights, { prefix: `${c.prefix}.self_attn` }).zeroBiases)
      .toEqual([]);
  });
});

describe('Llama: an attention with grouped key/value heads', () => {
  const c = cases.llama_attention;
  const config = { dModel: c.dModel, numHeads: c.numHeads, numKvHeads: c.numKvHeads,
    rope: c.rope, bias: c.bias };
  const file = modelTensors('llama_attention');

  test('loads (o_proj, the K/V heads\' rows), and gives the module\'s output', () => {
    const mha = track(new sa.MultiHeadAttention(config));
    expect(loadCheckpoint(mha, file, { prefix: c.prefix }).layout).toBe('llama');
    const io = parseSafetensors(fs.readFileSync(modelFile('llama_attention_io.safetensors')));
    const x = io.tensor('x');
    expect(maxRealRowDiff('llama_attention', mha.forward(x, x, x, { causal: c.causal }).output.data))
      .toBeLessThan(1e-5);
  });

  test('into a pool\'s attention split over 2 workers by heads', async () => {
    const { createAttentionPool } = await import('./support/modules.mjs');
    const pool = await createAttentionPool({ workers: 2 });
    try {
      const mha = await pool.MultiHeadAttention(config);
      expect((await loadCheckpoint(mha, file, { prefix: c.prefix })).layout).toBe('llama');
      const io = parseSafetensors(fs.readFileSync(modelFile('llama_attention_io.safetensors')));
      const x = io.tensor('x');
      const out = await mha.forward(x, x, x, { causal: c.causal });
      expect(maxRealRowDiff('llama_attention', out.output.data)).toBeLessThan(1e-5);
    } finally {
      await pool.dispose();
    }
  });

  test('F16 bits kept for an f16 attention, as its own rounding of the float32 file', () => {
    const tensors = tensorsUnder(file, `${c.prefix}.`);
    const half = writeSafetensors(Object.fromEntries(Object.entries(tensors).map(([n, t]) => [n,
      { dtype: 'F16', shape: t.shape,
        bytes: new Uint8Array(Uint16Array.from(t.data, floatToHalf).buffer) }])));
    const fromBits = track(new sa.MultiHeadAttention({ ...config, weights: 'f16' }));
    loadCheckpoint(fromBits, parseSafetensors(half, { keep16Bit: true }), { prefix: c.prefix });
    const rounded = track(new sa.MultiHeadAttention({ ...config, weights: 'f16' }));
    loadCheckpoint(rounded, file, { prefix: c.prefix });
    const io = parseSafetensors(fs.readFileSync(modelFile('llama_attention_io.safetensors')));
    const x = io.tensor('x');
    expect(fromBits.forward(x, x, x).output.data).toEqual(rounded.forward(x, x, x).output.data);
  });

  test('flat arrays of the wrong length are named before any transpose', () => {
    const tensors = tensorsUnder(file, `${c.prefix}.`);
    const k = `${c.prefix}.k_proj.weight`;
    const flat = Object.fromEntries(Object.entries(tensors).map(([n, t]) => [n, t.data]));
    flat[k] = flat[k].subarray(1);
    const rows = c.numKvHeads * (c.dModel / c.numHeads);
    expectError(() => loadCheckpoint(track(new sa.MultiHeadAttention(config)), flat,
      { prefix: c.prefix }), RangeError, `loadCheckpoint: checkpoint tensor '${k}': expected ` +
      `${rows * c.dModel} values for shape [${rows}, ${c.dModel}] (PyTorch's k_proj_weight of ` +
      `this MultiHeadAttention), got ${rows * c.dModel - 1}`);
  });
});

describe('a NaN or infinity is named by the checkpoint tensor and its own index', () => {
  const c = cases.bert;
  const config = { dModel: c.dModel, numHeads: c.numHeads, ffnDim: c.ffnDim,
    activation: c.activation, eps: c.eps, normFirst: c.normFirst };
  const prefix = `${c.prefix}.`;
  const file = parseSafetensors(fs.readFileSync(modelFile('bert.safetensors')));
  const block = tensorsUnder(file, prefix);
  const query = `${prefix}attention.self.query.weight`;
  const [rows, cols] = block[query].shape;
  // Row 1, column 5 of query.weight ([out, in]): after the transpose into
  // the object's wQ it is element 5 * rows + 1, a different index.
  const at = cols + 5;
  const poisoned = (value) => {
    const data = Float32Array.from(block[query].data);
    data[at] = value;
    return { ...block, [query]: { data, shape: [rows, cols] } };
  };

  test.each([[NaN, 'NaN'], [Infinity, '+Infinity'], [-Infinity, '-Infinity']])(
    'a file\'s %s, as [row, column] of its shape', (value, named) => {
      const bytes = writeSafetensors(poisoned(value));
      const layer = track(new sa.TransformerEncoderLayer(config));
      expectError(() => loadCheckpoint(layer, parseSafetensors(bytes), { prefix }), RangeError,
        `loadCheckpoint: ${query}[1, 5] is ${named}`);
    });

  test('an F16 infinity kept as bits, and a flat array\'s as its flat index', () => {
    const bits = Uint16Array.from(block[query].data, floatToHalf);
    bits[at] = 0x7c00;
    const bytes = writeSafetensors({ ...block,
      [query]: { dtype: 'F16', shape: [rows, cols], bytes: new Uint8Array(bits.buffer) } });
    const half = track(new sa.TransformerEncoderLayer({ ...config, weights: 'f16' }));
    expectError(() => loadCheckpoint(half, parseSafetensors(bytes, { keep16Bit: true }), { prefix }),
      RangeError, `loadCheckpoint: ${query}[1, 5] is +Infinity`);
    const flat = Object.fromEntries(Object.entries(poisoned(NaN)).map(([n, t]) => [n, t.data]));
    expectError(() => loadCheckpoint(track(new sa.TransformerEncoderLayer(config)), flat,
      { prefix }), RangeError, `loadCheckpoint: ${query}[${at}] is NaN`);
  });
});

describe('names that are Object.prototype keys', () => {
  const layer = () => track(new sa.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 16 }));
  test.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])('layout %j', (layout) => {
    expectError(() => loadCheckpoint(layer(), {}, { layout }), TypeError,
      "loadCheckpoint: options.layout: expected one of 'pytorch', 'separate', 'bert', 'fused', " +
      "'gpt2', 'distilbert', 'vit', 'gpt_neox' for a TransformerEncoderLayer, got " +
      `${JSON.stringify(layout)}`);
  });

  test.each(['constructor', '__proto__'])('a tensor\'s dtype %j', (dtype) => {
    const c = cases.bert;
    const file = parseSafetensors(fs.readFileSync(modelFile('bert.safetensors')));
    const query = `${c.prefix}.attention.self.query.weight`;
    const checkpoint = { ...tensorsUnder(file, `${c.prefix}.`),
      [query]: { data: new Uint16Array(c.dModel * c.dModel), shape: [c.dModel, c.dModel], dtype } };
    const bert = track(new sa.TransformerEncoderLayer({ dModel: c.dModel, numHeads: c.numHeads,
      ffnDim: c.ffnDim }));
    expectError(() => loadCheckpoint(bert, checkpoint, { prefix: c.prefix }), TypeError,
      `loadCheckpoint: checkpoint['${query}']: expected { data: Uint16Array, dtype: 'F16' or ` +
      `'BF16' } with a dtype, got dtype ${JSON.stringify(dtype)} and data ` +
      `Uint16Array(${c.dModel * c.dModel})`);
  });
});

test('an object with a file\'s names and tensor() but no info() is an object of tensors', () => {
  const file = parseSafetensors(fs.readFileSync(modelFile('bert.safetensors')));
  const lookalike = { names: file.names, tensor: (n) => file.tensor(n) };
  const c = cases.bert;
  const layer = track(new sa.TransformerEncoderLayer({ dModel: c.dModel, numHeads: c.numHeads,
    ffnDim: c.ffnDim }));
  expectError(() => loadCheckpoint(layer, lookalike, { prefix: c.prefix }), RangeError,
    'loadCheckpoint: no tensor of a TransformerEncoderLayer layout (pytorch, separate, bert, ' +
    `fused, gpt2, distilbert, vit, gpt_neox) under prefix '${c.prefix}.'; the checkpoint's 2 ` +
    "tensors start 'names', 'tensor': set options.prefix");
});

test('tensors under the prefix that no layout names: listed, the prefix not blamed', () => {
  // Llama's MLP: there, but no attention's.
  const c = cases.llama_layer;
  const file = modelTensors('llama_layer');
  const prefix = `${c.prefix}.mlp.`;
  const under = file.names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
  expect(under.length).toBeGreaterThan(0);
  const mha = track(new sa.MultiHeadAttention({ dModel: c.dModel, numHeads: c.numHeads }));
  expectError(() => loadCheckpoint(mha, file, { prefix }), RangeError, 'loadCheckpoint: no ' +
    'MultiHeadAttention layout (pytorch, separate, bert, fused, gpt2, llama, phi3, distilbert, ' +
    `vit, gpt_neox) knows the ${under.length} tensors under prefix '${prefix}': ` +
    `${under.map((n) => `'${n}'`).join(', ')}`);
});
