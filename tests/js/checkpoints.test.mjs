// Checkpoints in: safetensors files written here from the golden cases (no
// downloaded models) in PyTorch's and Hugging Face's layouts, in F32, F16
// and BF16, loaded with readSafetensors + loadCheckpoint into
// MultiHeadAttention and both layers, whose outputs must match the golden
// cases; the layers' setWeightsFromPyTorch; the float16 and bfloat16
// decoders on every bit pattern; and the errors of bad files and
// mismatched checkpoints, each naming the tensor.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { goldenCaseNames, loadGoldenCase, maxAbsDiff, mhaArguments, transpose }
  from './support/golden.mjs';
import { expectError } from './support/errors.mjs';
import { decoderArguments, encoderArguments } from './support/layers.mjs';
import { createAttentionModule, createAttentionPool, loadCheckpoint, parseSafetensors, readSafetensors, track }
  from './support/modules.mjs';
import { bfloat16ToFloat, halfToFloat, roundTo, writeSafetensors }
  from './support/safetensors-writer.mjs';

const sa = await createAttentionModule();
const mhaCases = goldenCaseNames('mha').map(loadGoldenCase);
const encoderCase = loadGoldenCase(goldenCaseNames('encoder_layer')[0]);
const decoderCase = loadGoldenCase(goldenCaseNames('decoder_layer')[0]);

const DTYPES = ['F32', 'F16', 'BF16'];
// Unit roundoff of each type (round to nearest): 2^-(significand bits).
const UNIT_ROUNDOFF = { F32: 2 ** -24, F16: 2 ** -11, BF16: 2 ** -8 };

// How far a result may move when every weight carries a relative error of
// up to u (round to nearest): to first order, u times the magnitudes an
// output sums, times the few weighted stages it passes (q and k through the
// softmax, v, the output projection, two FFN matrices). Over the golden
// cases the measured change stays below 0.3 u max|output|; 4 u max|output|
// keeps that headroom, while a weight transposed or taken from the wrong
// block moves an output by about its own magnitude.
function roundingTolerance(dtype, golden) {
  let scale = 0;
  for (const v of golden.tensors.output.data) scale = Math.max(scale, Math.abs(v));
  return golden.tolerance + 4 * UNIT_ROUNDOFF[dtype] * scale;
}

function concat(...arrays) {
  const out = new Float32Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) { out.set(a, at); at += a.length; }
  return out;
}

// ---------------------------------------------------------------------------
// The golden weights in each layout (the tests' own tables of the names)
// ---------------------------------------------------------------------------

// X @ W golden weights -> Linear layout { w: { data, shape: [out, in] }, b }.
function linearOf(w, b, rows) {
  const cols = w.length / rows;
  return { w: { data: transpose(w, rows, cols), shape: [cols, rows] }, b: { data: b, shape: [cols] } };
}

function goldenAttention(t, p = '', dims) {
  const { e, kdim = e, vdim = e, heads } = dims;
  return {
    heads,
    q: linearOf(t[`${p}w_q`].data, t[`${p}b_q`].data, e),
    k: linearOf(t[`${p}w_k`].data, t[`${p}b_k`].data, kdim),
    v: linearOf(t[`${p}w_v`].data, t[`${p}b_v`].data, vdim),
    o: linearOf(t[`${p}w_o`].data, t[`${p}b_o`].data, t[`${p}w_o`].shape[0]),
  };
}

const packedWeight = (a) => ({ data: concat(a.q.w.data, a.k.w.data, a.v.w.data),
  shape: [a.q.w.shape[0] + a.k.w.shape[0] + a.v.w.shape[0], a.q.w.shape[1]] });
const packedBias = (a) => ({ data: concat(a.q.b.data, a.k.b.data, a.v.b.data),
  shape: [a.q.b.shape[0] + a.k.b.shape[0] + a.v.b.shape[0]] });
const conv1d = ({ data, shape: [rows, cols] }) => ({ data: transpose(data, rows, cols), shape: [cols, rows] });
const packs = (a) => a.q.w.shape[1] === a.k.w.shape[1] && a.q.w.shape[1] === a.v.w.shape[1];
// GPT-NeoX's query_key_value: each head's q, k and v rows in turn (one
// width for all three).
const packsByHead = (a) => packs(a) && a.v.w.shape[0] === a.q.w.shape[0];
function byHead(a, key) {
  const [q, k, v] = [a.q[key], a.k[key], a.v[key]];
  const cols = q.shape[1] ?? 1;
  const block = (q.shape[0] / a.heads) * cols;
  const data = new Float32Array(3 * q.data.length);
  for (let h = 0; h < a.heads; h++) {
    [q, k, v].forEach((x, j) => data.set(x.data.subarray(h * block, (h + 1) * block),
      (3 * h + j) * block));
  }
  return { data, shape: [3 * q.shape[0], ...q.shape.slice(1)] };
}

// One attention block's tensors, named as each layout names them.
const ATTENTION_NAMES = {
  pytorch: (a) => ({
    ...(packs(a) ? { in_proj_weight: packedWeight(a) }
      : { q_proj_weight: a.q.w, k_proj_weight: a.k.w, v_proj_weight: a.v.w }),
    in_proj_bias: packedBias(a), 'out_proj.weight': a.o.w, 'out_proj.bias': a.o.b,
  }),
  separate: (a) => ({
    'q_proj.weight': a.q.w, 'q_proj.bias': a.q.b, 'k_proj.weight': a.k.w, 'k_proj.bias': a.k.b,
    'v_proj.weight': a.v.w, 'v_proj.bias': a.v.b, 'out_proj.weight': a.o.w, 'out_proj.bias': a.o.b,
  }),
  bert: (a) => ({
    'self.query.weight': a.q.w, 'self.query.bias': a.q.b, 'self.key.weight': a.k.w,
    'self.key.bias': a.k.b, 'self.value.weight': a.v.w, 'self.value.bias': a.v.b,
    'output.dense.weight': a.o.w, 'output.dense.bias': a.o.b,
  }),
  fused: (a) => ({ 'qkv.weight': packedWeight(a), 'qkv.bias': packedBias(a),
    'proj.weight': a.o.w, 'proj.bias': a.o.b }),
  gpt2: (a) => ({ 'c_attn.weight': conv1d(packedWeight(a)), 'c_attn.bias': packedBias(a),
    'c_proj.weight': conv1d(a.o.w), 'c_proj.bias': a.o.b }),
  llama: (a) => ({
    'q_proj.weight': a.q.w, 'q_proj.bias': a.q.b, 'k_proj.weight': a.k.w, 'k_proj.bias': a.k.b,
    'v_proj.weight': a.v.w, 'v_proj.bias': a.v.b, 'o_proj.weight': a.o.w, 'o_proj.bias': a.o.b,
  }),
  phi3: (a) => ({ 'qkv_proj.weight': packedWeight(a), 'qkv_proj.bias': packedBias(a),
    'o_proj.weight': a.o.w, 'o_proj.bias': a.o.b }),
  distilbert: (a) => ({
    'q_lin.weight': a.q.w, 'q_lin.bias': a.q.b, 'k_lin.weight': a.k.w, 'k_lin.bias': a.k.b,
    'v_lin.weight': a.v.w, 'v_lin.bias': a.v.b, 'out_lin.weight': a.o.w, 'out_lin.bias': a.o.b,
  }),
  vit: (a) => ({
    'attention.query.weight': a.q.w, 'attention.query.bias': a.q.b,
    'attention.key.weight': a.k.w, 'attention.key.bias': a.k.b,
    'attention.value.weight': a.v.w, 'attention.value.bias': a.v.b,
    'output.dense.weight': a.o.w, 'output.dense.bias': a.o.b,
  }),
  gpt_neox: (a) => ({ 'query_key_value.weight': byHead(a, 'w'),
    'query_key_value.bias': byHead(a, 'b'), 'dense.weight': a.o.w, 'dense.bias': a.o.b }),
};
// The layouts that pack q, k and v in one tensor (of one input width).
const PACKED = ['fused', 'gpt2', 'phi3', 'gpt_neox'];

const under = (prefix, tensors) =>
  Object.fromEntries(Object.entries(tensors).map(([k, v]) => [`${prefix}${k}`, v]));
const norm = (t, i) => ({ weight: { data: t[`ln${i}_gamma`].data, shape: [t[`ln${i}_gamma`].data.length] },
  bias: { data: t[`ln${i}_beta`].data, shape: [t[`ln${i}_beta`].data.length] } });
const linearNamed = (name, l) => ({ [`${name}.weight`]: l.w, [`${name}.bias`]: l.b });
const normNamed = (name, n) => ({ [`${name}.weight`]: n.weight, [`${name}.bias`]: n.bias });

function goldenFfn(t) {
  const e = t.ffn_w1.shape[0];
  const f = t.ffn_w1.shape[1];
  return { fc1: linearOf(t.ffn_w1.data, t.ffn_b1.data, e), fc2: linearOf(t.ffn_w2.data, t.ffn_b2.data, f) };
}
const gpt2Named = (name, l) => ({ [`${name}.weight`]: conv1d(l.w), [`${name}.bias`]: l.b });

// An encoder layer as a layout names it: its attention under `attention`,
// then its first norm, its two linears (as `linear` stores them) and its
// second norm.
const encoderNamed = (layout, attention, norm1, fc1, fc2, norm2, linear = linearNamed) =>
  (a, f, n) => ({ ...under(attention, ATTENTION_NAMES[layout](a)), ...normNamed(norm1, n[1]),
    ...linear(fc1, f.fc1), ...linear(fc2, f.fc2), ...normNamed(norm2, n[2]) });
const ENCODER_NAMES = Object.fromEntries([
  ['pytorch', 'self_attn.', 'norm1', 'linear1', 'linear2', 'norm2'],
  ['separate', 'self_attn.', 'self_attn_layer_norm', 'fc1', 'fc2', 'final_layer_norm'],
  ['bert', 'attention.', 'attention.output.LayerNorm', 'intermediate.dense', 'output.dense',
    'output.LayerNorm'],
  ['fused', 'attn.', 'norm1', 'mlp.fc1', 'mlp.fc2', 'norm2'],
  ['gpt2', 'attn.', 'ln_1', 'mlp.c_fc', 'mlp.c_proj', 'ln_2', gpt2Named],
  ['distilbert', 'attention.', 'sa_layer_norm', 'ffn.lin1', 'ffn.lin2', 'output_layer_norm'],
  ['vit', 'attention.', 'layernorm_before', 'intermediate.dense', 'output.dense',
    'layernorm_after'],
  ['gpt_neox', 'attention.', 'input_layernorm', 'mlp.dense_h_to_4h', 'mlp.dense_4h_to_h',
    'post_attention_layernorm'],
].map(([layout, ...names]) => [layout, encoderNamed(layout, ...names)]));

const DECODER_NAMES = {
  pytorch: (s, c, f, n) => ({ ...under('self_attn.', ATTENTION_NAMES.pytorch(s)),
    ...under('multihead_attn.', ATTENTION_NAMES.pytorch(c)), ...linearNamed('linear1', f.fc1),
    ...linearNamed('linear2', f.fc2), ...normNamed('norm1', n[1]), ...normNamed('norm2', n[2]),
    ...normNamed('norm3', n[3]) }),
  separate: (s, c, f, n) => ({ ...under('self_attn.', ATTENTION_NAMES.separate(s)),
    ...under('encoder_attn.', ATTENTION_NAMES.separate(c)),
    ...normNamed('self_attn_layer_norm', n[1]), ...normNamed('encoder_attn_layer_norm', n[2]),
    ...linearNamed('fc1', f.fc1), ...linearNamed('fc2', f.fc2),
    ...normNamed('final_layer_norm', n[3]) }),
};

const PREFIX = 'model.layers.3.';

// A whole-model file: the object's tensors under PREFIX in `dtype`, plus
// another layer's (layers.30, which a prefix 'model.layers.3' must not
// take) and an int64 buffer that no layout reads.
function checkpointBytes(tensors, dtype) {
  const entries = {};
  for (const [name, t] of Object.entries(tensors)) {
    entries[`${PREFIX}${name}`] = { ...t, dtype };
    entries[`model.layers.30.${name}`] = { ...t, dtype };
  }
  entries['model.embeddings.position_ids'] = { dtype: 'I64', shape: [2], bytes: new Uint8Array(16) };
  return writeSafetensors(entries, { metadata: { format: 'pt' } });
}

// ---------------------------------------------------------------------------
// Golden outputs through every layout and dtype
// ---------------------------------------------------------------------------

function expectClose(what, actual, expected, tolerance) {
  const diff = maxAbsDiff(actual, expected);
  if (!(diff <= tolerance)) throw new Error(`${what}: differs by ${diff} > ${tolerance}`);
}

const mhaMatrix = mhaCases.flatMap((c) => {
  const { d_model: e, kdim, vdim, num_heads: heads } = c.config;
  const a = goldenAttention(c.tensors, '', { e, kdim, vdim, heads });
  return Object.keys(ATTENTION_NAMES).filter((l) => (l === 'gpt_neox' ? packsByHead(a)
    : packs(a) || !PACKED.includes(l)))
    .flatMap((layout) => DTYPES.map((dtype) => [c.name, layout, dtype, c, a]));
});

describe('MultiHeadAttention from a safetensors checkpoint', () => {
  test.each(mhaMatrix)('%s, %s layout, %s', (_, layout, dtype, c, a) => {
    const args = mhaArguments(c);
    const file = parseSafetensors(checkpointBytes(ATTENTION_NAMES[layout](a), dtype));
    const mha = track(new sa.MultiHeadAttention(args.config));
    const report = loadCheckpoint(mha, file, { prefix: 'model.layers.3' });
    expect(report.layout).toBe(layout);
    expect(report.unused).toEqual([]);
    const out = mha.forward(args.query, args.key, args.value, args.options).output;
    expectClose(`${c.name} ${layout} ${dtype}`, out.data, c.tensors.output.data,
      roundingTolerance(dtype, c));
  });
});

// The layers' weights as the file holds them: rounded through `dtype`.
function roundedLayerWeights(weights, dtype) {
  return Object.fromEntries(Object.entries(weights).map(([group, w]) => [group,
    Object.fromEntries(Object.entries(w).map(([k, v]) => [k, roundTo(dtype, v)]))]));
}

describe('TransformerEncoderLayer from a safetensors checkpoint', () => {
  const c = encoderCase;
  const e = c.config.d_model;
  const tensors = (layout) => ENCODER_NAMES[layout](goldenAttention(c.tensors, '',
    { e, heads: c.config.num_heads }), goldenFfn(c.tensors),
  { 1: norm(c.tensors, 1), 2: norm(c.tensors, 2) });
  test.each(Object.keys(ENCODER_NAMES).flatMap((l) => DTYPES.map((d) => [l, d])))(
    '%s layout, %s', (layout, dtype) => {
      const a = encoderArguments(c);
      const layer = track(new sa.TransformerEncoderLayer(a.config));
      const report = loadCheckpoint(layer, parseSafetensors(checkpointBytes(tensors(layout), dtype)),
        { prefix: PREFIX });
      expect(report.layout).toBe(layout);
      const out = layer.forward(a.input).data;
      expectClose(`${c.name} ${layout} ${dtype}`, out, a.output.data, roundingTolerance(dtype, c));
      // Exactly the rounded weights, nothing else moved.
      const direct = track(new sa.TransformerEncoderLayer(a.config));
      direct.setWeights(roundedLayerWeights(a.weights, dtype));
      expect(out).toEqual(direct.forward(a.input).data);
    });
});

describe('TransformerDecoderLayer from a safetensors checkpoint', () => {
  const c = decoderCase;
  const e = c.config.d_model;
  const t = c.tensors;
  const tensors = (layout) => DECODER_NAMES[layout](goldenAttention(t, 'self_', { e }),
    goldenAttention(t, 'cross_', { e }), goldenFfn(t),
    { 1: norm(t, 1), 2: norm(t, 2), 3: norm(t, 3) });
  test.each(Object.keys(DECODER_NAMES).flatMap((l) => DTYPES.map((d) => [l, d])))(
    '%s layout, %s', (layout, dtype) => {
      const a = decoderArguments(c);
      const layer = track(new sa.TransformerDecoderLayer(a.config));
      const report = loadCheckpoint(layer, parseSafetensors(checkpointBytes(tensors(layout), dtype)),
        { prefix: PREFIX, layout });
      expect(report.tensors.length).toBe(Object.keys(tensors(layout)).length);
      const out = layer.forward(a.input, a.memory).data;
      expectClose(`${c.name} ${layout} ${dtype}`, out, a.output.data, roundingTolerance(dtype, c));
    });
});

// ---------------------------------------------------------------------------
// setWeightsFromPyTorch on the layers
// ---------------------------------------------------------------------------

function encoderState(c) {
  const e = c.config.d_model;
  const named = ENCODER_NAMES.pytorch(goldenAttention(c.tensors, '', { e }), goldenFfn(c.tensors),
    { 1: norm(c.tensors, 1), 2: norm(c.tensors, 2) });
  return Object.fromEntries(Object.entries(named).map(([k, v]) => [k, v.data]));
}

describe('layers: setWeightsFromPyTorch', () => {
  test('an nn.TransformerEncoderLayer state_dict equals setWeights with the transposes', () => {
    const a = encoderArguments(encoderCase);
    const layer = track(new sa.TransformerEncoderLayer(a.config));
    layer.setWeightsFromPyTorch(encoderState(encoderCase));
    const direct = track(new sa.TransformerEncoderLayer(a.config));
    direct.setWeights(a.weights);
    expect(layer.forward(a.input).data).toEqual(direct.forward(a.input).data);
  });

  test('a pooled layer takes the state_dict too, with the same result', async () => {
    const a = encoderArguments(encoderCase);
    const pool = await createAttentionPool({ workers: 1 });
    try {
      const pooled = await pool.TransformerEncoderLayer(a.config);
      await pooled.setWeightsFromPyTorch(encoderState(encoderCase));
      const direct = track(new sa.TransformerEncoderLayer(a.config));
      direct.setWeights(a.weights);
      const got = await pooled.forward(a.input);
      expect(Array.from(got.data)).toEqual(Array.from(direct.forward(a.input).data));
    } finally {
      await pool.dispose();
    }
  });

  test('bad state_dicts name the entry; the old weights stay', () => {
    const a = encoderArguments(encoderCase);
    const e = a.config.dModel;
    const f = a.config.ffnDim;
    const layer = track(new sa.TransformerEncoderLayer(a.config));
    const state = encoderState(encoderCase);
    const where = 'TransformerEncoderLayer.setWeightsFromPyTorch';
    expect(() => layer.setWeightsFromPyTorch({ ...state, 'self_attn.bias_k': state['norm1.bias'] }))
      .toThrow(new TypeError(`${where}: state: unknown key 'self_attn.bias_k' (expected the ` +
        'nn.TransformerEncoderLayer state_dict names: self_attn.in_proj_weight, ' +
        'self_attn.q_proj_weight, self_attn.k_proj_weight, self_attn.v_proj_weight, ' +
        'self_attn.in_proj_bias, self_attn.out_proj.weight, self_attn.out_proj.bias, ' +
        'linear1.weight, linear1.bias, linear2.weight, linear2.bias, norm1.weight, ' +
        'norm1.bias, norm2.weight, norm2.bias)'));
    const { 'linear2.bias': _, ...noBias } = state;
    expect(() => layer.setWeightsFromPyTorch(noBias))
      .toThrow(new TypeError(`${where}: linear2.bias: missing (every layer has it)`));
    expect(() => layer.setWeightsFromPyTorch({ ...state, 'linear1.weight': new Float32Array(3) }))
      .toThrow(new RangeError(`${where}: linear1.weight: expected ${e * f} values for shape ` +
        `[${f}, ${e}] (PyTorch layout), got 3`));
    const { 'self_attn.in_proj_weight': packed, ...rest } = state;
    expect(() => layer.setWeightsFromPyTorch({ ...rest, 'self_attn.q_proj_weight': packed }))
      .toThrow(new TypeError(`${where}: self_attn.k_proj_weight: missing (give ` +
        'self_attn.in_proj_weight or all of self_attn.q_proj_weight, self_attn.k_proj_weight, ' +
        'self_attn.v_proj_weight)'));
    expect(() => layer.setWeightsFromPyTorch({ ...state, 'norm2.weight': [1, 2] }))
      .toThrow(new TypeError(`${where}: norm2.weight: expected a Float32Array, got [1, 2]`));
    expect(() => a.input && layer.forward(a.input)).toThrow(
      'TransformerEncoderLayer.forward: no weights yet; call setWeights() or ' +
      'setWeightsFromPyTorch() first');
  });
});

// ---------------------------------------------------------------------------
// The reader
// ---------------------------------------------------------------------------

describe('readSafetensors', () => {
  const small = () => writeSafetensors({
    a: { data: Float32Array.of(1, -2.5, 3), shape: [3] },
    b: { data: Float32Array.of(0.1, 0.2, 0.3, 0.4), shape: [2, 2], dtype: 'F16' },
  }, { metadata: { format: 'pt' } });

  test('from an ArrayBuffer, an unaligned Uint8Array, a Response, a path and a file: URL', async () => {
    const bytes = small();
    const shifted = new Uint8Array(bytes.length + 3);
    shifted.set(bytes, 3);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sa-safetensors-'));
    const file = path.join(dir, 'model.safetensors');
    fs.writeFileSync(file, bytes);
    try {
      for (const source of [bytes.buffer, shifted.subarray(3), new Response(bytes), file,
        pathToFileURL(file)]) {
        const st = await readSafetensors(source);
        expect(st.names).toEqual(['a', 'b']);
        expect(st.metadata).toEqual({ format: 'pt' });
        expect(st.info('b')).toEqual({ dtype: 'F16', shape: [2, 2] });
        expect(st.tensor('a')).toEqual({ data: Float32Array.of(1, -2.5, 3), shape: [3], dtype: 'F32' });
        expect(st.tensor('b').data).toEqual(roundTo('F16', [0.1, 0.2, 0.3, 0.4]));
      }
    } finally {
      fs.rmSync(dir, { recursive: true });
    }
  });

  test('F16 and BF16: every one of the 65536 bit patterns decodes exactly', () => {
    const all = new Uint8Array(new Uint16Array(65536).map((_, i) => i).buffer);
    const st = parseSafetensors(writeSafetensors({
      h: { dtype: 'F16', shape: [65536], bytes: all },
      bf: { dtype: 'BF16', shape: [256, 256], bytes: all },
    }));
    const h = st.tensor('h').data;
    const bf = st.tensor('bf').data;
    for (let i = 0; i < 65536; i++) {
      if (!Object.is(h[i], Math.fround(halfToFloat(i))) ||
          !Object.is(bf[i], bfloat16ToFloat(i))) {
        throw new Error(`bits 0x${i.toString(16)}: F16 ${h[i]} vs ${halfToFloat(i)}, ` +
          `BF16 ${bf[i]} vs ${bfloat16ToFloat(i)}`);
      }
    }
  });

  test('a wrong header, truncated data, a wrong dtype or shape name the tensor', async () => {
    const bytes = small();
    const parse = (b) => () => parseSafetensors(b);
    const edited = (edit) => writeSafetensors({
      a: { data: Float32Array.of(1, 2, 3), shape: [3] },
      'layers.0.w': { data: Float32Array.of(1, 2, 3, 4), shape: [2, 2] },
    }, { header: edit });
    expect(parse(bytes.subarray(0, 5))).toThrow(new RangeError('parseSafetensors: expected at ' +
      'least 8 bytes (the header\'s length), got 5: not a safetensors file'));
    const html = new TextEncoder().encode('<!DOCTYPE html><html></html>');
    expect(parse(html)).toThrow(/^parseSafetensors: header: its first 8 bytes give a length of \d+ bytes, but 20 follow: the file is truncated or not safetensors$/);
    const notJson = writeSafetensors({});
    notJson.set(new TextEncoder().encode('{x'), 8);
    expect(parse(notJson)).toThrow(/^parseSafetensors: header: not UTF-8 JSON \(.*\): not a safetensors file$/);
    expect(parse(edited((h) => { h['layers.0.w'].dtype = 'F17'; }))).toThrow(new TypeError(
      "parseSafetensors: tensor 'layers.0.w': dtype: expected one of F32, F16, BF16, F64, I64, " +
      'I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2, got "F17"'));
    expect(parse(edited((h) => { h['layers.0.w'].shape = [2, 3]; }))).toThrow(new RangeError(
      "parseSafetensors: tensor 'layers.0.w': shape [2, 3] of F32 takes 24 bytes, but " +
      'data_offsets [12, 28] hold 16'));
    expect(parse(edited((h) => { h['layers.0.w'].shape = [2, -2]; }))).toThrow(new TypeError(
      "parseSafetensors: tensor 'layers.0.w': shape: expected an array of non-negative " +
      'integers, got [2, -2]'));
    expect(parse(edited((h) => { h['layers.0.w'].data_offsets = [28, 12]; }))).toThrow(
      new TypeError("parseSafetensors: tensor 'layers.0.w': data_offsets: expected [begin, end] " +
        'with 0 <= begin <= end, got [28, 12]'));
    const whole = edited(() => {});
    expect(parse(whole.subarray(0, whole.length - 1))).toThrow(new RangeError(
      "parseSafetensors: tensor 'layers.0.w': data_offsets [12, 28] end past the 27 bytes of " +
      'data after the header: the file is truncated'));
    const ints = parseSafetensors(writeSafetensors({ ids: { dtype: 'I64', shape: [1], bytes: new Uint8Array(8) } }));
    expect(() => ints.tensor('ids')).toThrow(new TypeError("SafetensorsFile.tensor: tensor 'ids': " +
      'dtype I64 is not converted to float32 (expected F32, F16, BF16)'));
    expect(() => ints.tensor('idz')).toThrow(new RangeError('SafetensorsFile.tensor: tensor ' +
      "\"idz\" is not in the file (1 tensors, e.g. 'ids')"));
    await expect(readSafetensors([1, 2])).rejects.toThrow(new TypeError('readSafetensors: source: ' +
      'expected an ArrayBuffer, a Uint8Array, a Response, or a file path or URL (Node), got [1, 2]'));
    await expect(readSafetensors(new Response('missing', { status: 404 }))).rejects.toThrow(
      'readSafetensors: fetching the file failed: HTTP 404');
    await expect(readSafetensors('/nonexistent/model.safetensors')).rejects.toThrow(
      'readSafetensors: cannot read /nonexistent/model.safetensors (ENOENT)');
  });
});

// ---------------------------------------------------------------------------
// loadCheckpoint's errors
// ---------------------------------------------------------------------------

describe('loadCheckpoint: missing, extra and mis-shaped tensors by name', () => {
  const c = encoderCase;
  const e = c.config.d_model;
  const f = c.config.ffn_dim;
  const named = ENCODER_NAMES.bert(goldenAttention(c.tensors, '', { e }), goldenFfn(c.tensors),
    { 1: norm(c.tensors, 1), 2: norm(c.tensors, 2) });
  const layer = () => track(new sa.TransformerEncoderLayer(encoderArguments(c).config));
  const file = (tensors) => parseSafetensors(writeSafetensors(under(PREFIX, tensors)));

  test('a missing weight; a missing bias is zero', () => {
    const { 'intermediate.dense.weight': _, 'output.LayerNorm.weight': __, ...rest } = named;
    expect(() => loadCheckpoint(layer(), file(rest), { prefix: PREFIX })).toThrow(new RangeError(
      `loadCheckpoint: missing '${PREFIX}intermediate.dense.weight', ` +
      `'${PREFIX}output.LayerNorm.weight' (layout 'bert' of a TransformerEncoderLayer)`));
    const { 'intermediate.dense.bias': b1, 'attention.self.key.bias': bK, ...noBias } = named;
    const loaded = layer();
    expect(loadCheckpoint(loaded, file(noBias), { prefix: PREFIX }).zeroBiases).toEqual(
      [`${PREFIX}attention.self.key.bias`, `${PREFIX}intermediate.dense.bias`]);
    const zero = (t) => ({ data: new Float32Array(t.data.length), shape: t.shape });
    const zeros = layer();
    loadCheckpoint(zeros, file({ ...named, 'intermediate.dense.bias': zero(b1),
      'attention.self.key.bias': zero(bK) }), { prefix: PREFIX });
    const { input } = encoderArguments(c);
    expect(loaded.forward(input).data).toEqual(zeros.forward(input).data);
  });

  test('an extra tensor under the prefix, unless allowed', () => {
    const extra = { ...named, 'attention.self.distance_embedding.weight': named['output.LayerNorm.bias'] };
    expect(() => loadCheckpoint(layer(), file(extra), { prefix: PREFIX })).toThrow(new RangeError(
      `loadCheckpoint: 1 tensor under prefix '${PREFIX}' not part of a TransformerEncoderLayer ` +
      `in layout 'bert': '${PREFIX}attention.self.distance_embedding.weight'; set ` +
      'options.prefix to the object\'s own tensors, or options.allowUnused: true'));
    expect(loadCheckpoint(layer(), file(extra), { prefix: PREFIX, allowUnused: true }).unused)
      .toEqual([`${PREFIX}attention.self.distance_embedding.weight`]);
  });

  test('a tensor of the wrong shape, or transposed', () => {
    const w = named['intermediate.dense.weight'];
    expect(() => loadCheckpoint(layer(), file({ ...named, 'intermediate.dense.weight': conv1d(w) }),
      { prefix: PREFIX })).toThrow(new RangeError(`loadCheckpoint: ${PREFIX}intermediate.dense.weight: ` +
      `expected shape [${f}, ${e}] (PyTorch's linear1.weight of this TransformerEncoderLayer), ` +
      `got [${e}, ${f}]`));
    const gpt2 = ENCODER_NAMES.gpt2(goldenAttention(c.tensors, '', { e }), goldenFfn(c.tensors),
      { 1: norm(c.tensors, 1), 2: norm(c.tensors, 2) });
    expect(() => loadCheckpoint(layer(), file({ ...gpt2, 'attn.c_attn.weight': packedWeight(
      goldenAttention(c.tensors, '', { e })) }), { prefix: PREFIX })).toThrow(new RangeError(
      `loadCheckpoint: ${PREFIX}attn.c_attn.weight: expected shape [${e}, ${3 * e}] (Conv1D, the ` +
      "transpose of PyTorch's self_attn.in_proj_weight of this TransformerEncoderLayer), got " +
      `[${3 * e}, ${e}]`));
  });

  test('a tensor of a dtype that is not converted', () => {
    const bytes = writeSafetensors({ ...under(PREFIX, named),
      [`${PREFIX}output.dense.bias`]: { dtype: 'I32', shape: [e], bytes: new Uint8Array(4 * e) } });
    expect(() => loadCheckpoint(layer(), parseSafetensors(bytes), { prefix: PREFIX })).toThrow(
      new TypeError(`SafetensorsFile.tensor: tensor '${PREFIX}output.dense.bias': dtype I32 is ` +
        'not converted to float32 (expected F32, F16, BF16)'));
  });

  test('no known layout under the prefix', () => {
    expect(() => loadCheckpoint(layer(), file(named), { prefix: 'encoder.layer.3' })).toThrow(
      new RangeError('loadCheckpoint: no tensor of a TransformerEncoderLayer layout (pytorch, ' +
        "separate, bert, fused, gpt2, distilbert, vit, gpt_neox) under prefix 'encoder.layer.3.'; " +
        "the checkpoint's 16 " +
        `tensors start '${PREFIX}attention.self.query.weight', '${PREFIX}attention.self.query.bias', ` +
        `'${PREFIX}attention.self.key.weight': set options.prefix`));
  });

  test('a plain object of Float32Arrays: C++ judges the sizes, the message names the tensor', () => {
    const tiny = mhaCases.find((x) => x.name === 'self_tiny') ?? mhaCases[0];
    const args = mhaArguments(tiny);
    const mha = track(new sa.MultiHeadAttention(args.config));
    const hf = ATTENTION_NAMES.separate(goldenAttention(tiny.tensors, '',
      { e: args.config.dModel, kdim: args.config.kDim, vdim: args.config.vDim }));
    const flat = Object.fromEntries(Object.entries(hf).map(([k, v]) => [`attn.${k}`, v.data]));
    flat['attn.out_proj.weight'] = flat['attn.out_proj.weight'].subarray(1);
    expectError(() => loadCheckpoint(mha, flat, { prefix: 'attn.' }), RangeError,
      "loadCheckpoint: checkpoint tensor 'attn.out_proj.weight': MultiHeadAttention." +
      'setWeightsFromPyTorch: out_proj.weight: expected ' +
      `${args.config.dModel ** 2} values for shape [${args.config.dModel}, ${args.config.dModel}] ` +
      `(PyTorch layout), got ${args.config.dModel ** 2 - 1}`);
    expect(() => loadCheckpoint({}, flat)).toThrow(new TypeError('loadCheckpoint: target: ' +
      'expected a MultiHeadAttention, TransformerEncoderLayer, TransformerDecoderLayer, ' +
      'TransformerBlock or TransformerStack, got an object (Object)'));
    expect(() => loadCheckpoint(mha, flat, { prefix: 'attn.', layout: 'mpt' })).toThrow(
      new TypeError("loadCheckpoint: options.layout: expected one of 'pytorch', 'separate', " +
        "'bert', 'fused', 'gpt2', 'llama', 'phi3', 'distilbert', 'vit', 'gpt_neox' for a " +
        'MultiHeadAttention, got "mpt"'));
  });
});
