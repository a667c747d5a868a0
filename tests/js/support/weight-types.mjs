// What the weight-type tests share: the error bound of each storage type
// against float32, and int8 weights that quantize back to themselves.
//
// Bounds, as tests/weight_types_test.cc derives them: a type's unit
// roundoff u (2^-11 for float16's 11 significant bits, 2^-8 for bfloat16's
// 8; int8 rounds to half a step of max|w|/127 per column, below 2^-8 of
// the column's largest weight; q4 to half a step of max|w|/8 per block of
// 32, 2^-4 of the block's largest) bounds each stored weight's relative error.
// A dot product with such weights errs by at most u * sum |a_k w_k|, which
// for the cases' inputs of mixed signs stays near u times the result's
// scale; attention chains three products (Q or K, V, then W_O), an encoder
// layer adds the FFN's two (5u) and a decoder layer its second attention
// (8u). The bounds are twice that, of the output's scale (max |output|, at
// least 1).
import { maxAbsDiff, transpose } from './golden.mjs';
import { writeSafetensors } from './safetensors-writer.mjs';

export const UNIT_ROUNDOFF = { f16: 2 ** -11, bf16: 2 ** -8, int8: 2 ** -8, q4: 2 ** -4 };
export const NARROW = Object.keys(UNIT_ROUNDOFF);
export const CHAINED_PRODUCTS = { mha: 3, encoder: 5, decoder: 8 };

// Whether a golden case is held to its type's bound: the case that puts
// scores in the thousands (it tests the softmax's subtraction of the row
// max) has keys whose scores lie within q4's rounding of each other, where
// the output moves between their values (tests/weight_types_test.cc).
export function inScope(caseName, type) {
  return !(type === 'q4' && caseName === 'self_large_scores');
}

function scaleOf(values) {
  let scale = 1;
  for (const v of values) scale = Math.max(scale, Math.abs(v));
  return scale;
}

// got within the bound of `type` for `products` chained products of want.
export function expectWithin(what, type, got, want, products) {
  const error = maxAbsDiff(got, want);
  const bound = 2 * products * UNIT_ROUNDOFF[type] * scaleOf(want);
  if (!(error <= bound)) {
    throw new Error(`${what}, ${type} weights: max |error| ${error} > ${bound} (${products}u x 2)`);
  }
}

// Int8 weights [rows, cols] whose float32 values w = value * 2^-k quantize
// back to the same values and scales: each column holds +-127, so its
// scale max|w| / 127 = 2^-k exactly.
export function exactInt8(rows, cols, seed) {
  let s = seed;
  const next = () => { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648; };
  const values = Int8Array.from({ length: rows * cols }, () => Math.round((next() - 0.5) * 250));
  const scales = Float32Array.from({ length: cols }, () => 2 ** -(4 + Math.floor(next() * 4)));
  for (let c = 0; c < cols; ++c) {
    values[Math.floor(next() * rows) * cols + c] = next() < 0.5 ? 127 : -127;
  }
  const floats = Float32Array.from(values, (v, i) => v * scales[i % cols]);
  return { stored: { values, scales }, floats };
}

// An encoder layer's weights (encoderArguments' `weights`) as an
// nn.TransformerEncoderLayer state_dict in a safetensors file of `dtype`:
// q, k and v packed in in_proj_weight, or (separate) as q_proj_weight ...
export function encoderSafetensors(w, dtype, { separate = false } = {}) {
  const [e, f] = [w.attention.bO.length, w.ffn.b1.length];
  const t = transpose; // X @ W [in, out] -> torch's [out, in]
  const cat = (...parts) => Float32Array.from(parts.flatMap((p) => Array.from(p)));
  const [q, k, v] = ['wQ', 'wK', 'wV'].map((key) => t(w.attention[key], e, e));
  const projections = separate
    ? { 'self_attn.q_proj_weight': [q, [e, e]], 'self_attn.k_proj_weight': [k, [e, e]],
      'self_attn.v_proj_weight': [v, [e, e]] }
    : { 'self_attn.in_proj_weight': [cat(q, k, v), [3 * e, e]] };
  const entries = {
    ...projections,
    'self_attn.in_proj_bias': [cat(w.attention.bQ, w.attention.bK, w.attention.bV), [3 * e]],
    'self_attn.out_proj.weight': [t(w.attention.wO, e, e), [e, e]],
    'self_attn.out_proj.bias': [w.attention.bO, [e]],
    'linear1.weight': [t(w.ffn.w1, e, f), [f, e]], 'linear1.bias': [w.ffn.b1, [f]],
    'linear2.weight': [t(w.ffn.w2, f, e), [e, f]], 'linear2.bias': [w.ffn.b2, [e]],
    'norm1.weight': [w.norm1.gamma, [e]], 'norm1.bias': [w.norm1.beta, [e]],
    'norm2.weight': [w.norm2.gamma, [e]], 'norm2.bias': [w.norm2.beta, [e]],
  };
  return writeSafetensors(Object.fromEntries(Object.entries(entries).map(([name, [data, shape]]) =>
    [name, { data, shape, dtype }])));
}
