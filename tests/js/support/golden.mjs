// Reads the PyTorch reference cases of ../shared/golden at run time (see its
// README): case.json plus one raw little-endian file per tensor. No numbers
// are copied into the tests.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const goldenDir = process.env.SA_GOLDEN_DIR ?? path.resolve(repoRoot, '../shared/golden');
export const webDir = path.join(repoRoot, 'web');

export function goldenCaseNames(kind) {
  const { cases } = JSON.parse(fs.readFileSync(path.join(goldenDir, 'index.json'), 'utf8'));
  return cases.filter((name) => readCaseJson(name).kind === kind);
}

function readCaseJson(name) {
  return JSON.parse(fs.readFileSync(path.join(goldenDir, name, 'case.json'), 'utf8'));
}

function readTensor(dir, spec) {
  const bytes = fs.readFileSync(path.join(dir, spec.file));
  // Copy into a fresh, aligned buffer of this realm (little-endian host).
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  const data = spec.dtype === 'f32' ? new Float32Array(buffer) : new Uint8Array(buffer);
  const count = spec.shape.reduce((a, b) => a * b, 1);
  if (data.length !== count) throw new Error(`${spec.file}: ${data.length} values, shape needs ${count}`);
  return { data, shape: spec.shape };
}

export function loadGoldenCase(name) {
  const json = readCaseJson(name);
  const dir = path.join(goldenDir, name);
  const tensors = {};
  for (const [key, spec] of Object.entries(json.tensors)) tensors[key] = readTensor(dir, spec);
  return { ...json, tolerance: json.tolerance.abs, tensors };
}

// An `mha` case as arguments of the JS API.
export function mhaArguments(c) {
  const t = c.tensors;
  const cfg = c.config;
  return {
    config: {
      dModel: cfg.d_model, numHeads: cfg.num_heads, kDim: cfg.kdim, vDim: cfg.vdim,
      headDimV: cfg.head_dim_v, bias: cfg.bias,
    },
    weights: {
      wQ: t.w_q.data, wK: t.w_k.data, wV: t.w_v.data, wO: t.w_o.data,
      ...(cfg.bias ? { bQ: t.b_q.data, bK: t.b_k.data, bV: t.b_v.data, bO: t.b_o.data } : {}),
    },
    query: t.query,
    key: cfg.self_attention ? undefined : t.key,
    value: cfg.self_attention ? undefined : t.value,
    options: {
      causal: Boolean(cfg.causal),
      ...(t.key_padding_mask ? { keyPaddingMask: t.key_padding_mask.data } : {}),
    },
  };
}

// [rows, cols] row-major -> [cols, rows]
export function transpose(data, rows, cols) {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  }
  return out;
}

function concat(...arrays) {
  const out = new Float32Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) { out.set(a, at); at += a.length; }
  return out;
}

// The case's weights as torch.nn.MultiheadAttention's state_dict holds them:
// Linear layout [out, in]; q, k, v packed in in_proj_weight when
// kdim == vdim == d_model, else separate; biases packed in in_proj_bias.
export function pytorchState(c, { dotNames = true } = {}) {
  const t = c.tensors;
  const cfg = c.config;
  const hk = cfg.num_heads * cfg.head_dim;
  const hv = cfg.num_heads * cfg.head_dim_v;
  const q = transpose(t.w_q.data, cfg.d_model, hk);
  const k = transpose(t.w_k.data, cfg.kdim, hk);
  const v = transpose(t.w_v.data, cfg.vdim, hv);
  const state = cfg.kdim === cfg.d_model && cfg.vdim === cfg.d_model
    ? { in_proj_weight: concat(q, k, v) }
    : { q_proj_weight: q, k_proj_weight: k, v_proj_weight: v };
  state[dotNames ? 'out_proj.weight' : 'out_proj_weight'] = transpose(t.w_o.data, hv, cfg.d_model);
  if (cfg.bias) {
    state.in_proj_bias = concat(t.b_q.data, t.b_k.data, t.b_v.data);
    state[dotNames ? 'out_proj.bias' : 'out_proj_bias'] = t.b_o.data;
  }
  return state;
}

export function maxAbsDiff(actual, expected) {
  if (actual.length !== expected.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < actual.length; i++) {
    const d = Math.abs(actual[i] - expected[i]);
    if (!(d <= worst)) worst = Number.isNaN(d) ? Infinity : d;
  }
  return worst;
}

// Checks every output of a forward() against the case; returns the worst
// difference per output for messages.
export function expectMatchesGolden(result, c, { batched = true } = {}) {
  const t = c.tensors;
  const pairs = [['output', t.output]];
  if (result.attnWeights) pairs.push(['attnWeights', t.attn_weights]);
  if (result.perHeadOutput) pairs.push(['perHeadOutput', t.per_head_output]);
  for (const [name, want] of pairs) {
    const got = result[name];
    const shape = batched ? want.shape : want.shape.slice(1);
    expect({ name, shape: got.shape }).toEqual({ name, shape });
    const diff = maxAbsDiff(got.data, want.data);
    if (!(diff <= c.tolerance)) {
      throw new Error(`${c.name}: ${name} differs from PyTorch by ${diff} > ${c.tolerance}`);
    }
  }
}
