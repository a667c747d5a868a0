// Weight matrices in any of the forms setWeights takes (a Float32Array,
// float16/bfloat16 bits in a Uint16Array, int8 { values, scales }, q4
// blocks { q4 }), as the worker pool splits them by heads or hidden units,
// and its screen of whether the synchronous object would take them.

import { dequantizeQ4, Q4_BLOCK_BYTES, Q4_BLOCK_ROWS } from './quantized-weights.js';

// Columns [from, to) of a row-major [rows, cols] matrix, in its form (int8:
// with those columns' scales; q4: those columns' blocks).
export function columns(m, rows, cols, from, to) {
  if (m.q4 !== undefined) {
    const perColumn = m.q4.length / cols;
    return { q4: m.q4.slice(from * perColumn, to * perColumn) };
  }
  if (m.scales !== undefined) {
    return { values: columns(m.values, rows, cols, from, to), scales: m.scales.slice(from, to) };
  }
  const out = new m.constructor(rows * (to - from));
  for (let r = 0; r < rows; ++r) {
    out.set(m.subarray(r * cols + from, r * cols + to), r * (to - from));
  }
  return out;
}

// Rows [from, to) of a row-major matrix of `cols` columns, in its form
// (int8: with every column's scale; q4: each column's blocks of those rows
// where they are whole blocks, else their weights as float32, which the
// worker quantizes in blocks of its own rows, as it does float32 weights).
export function rowRange(m, cols, from, to) {
  if (m.q4 !== undefined) {
    const rows = m.q4.length / cols / Q4_BLOCK_BYTES * Q4_BLOCK_ROWS;
    if (from % Q4_BLOCK_ROWS !== 0 || to % Q4_BLOCK_ROWS !== 0) {
      return dequantizeQ4(m.q4, rows, cols).slice(from * cols, to * cols);
    }
    const [perColumn, first, count] = [rows / Q4_BLOCK_ROWS, from / Q4_BLOCK_ROWS,
      (to - from) / Q4_BLOCK_ROWS];
    const out = new Uint8Array(cols * count * Q4_BLOCK_BYTES);
    for (let c = 0; c < cols; ++c) {
      out.set(m.q4.subarray((c * perColumn + first) * Q4_BLOCK_BYTES,
        (c * perColumn + first + count) * Q4_BLOCK_BYTES), c * count * Q4_BLOCK_BYTES);
    }
    return { q4: out };
  }
  return m.scales !== undefined
    ? { values: m.values.slice(from * cols, to * cols), scales: m.scales.slice() }
    : m.slice(from * cols, to * cols);
}

// A matrix that the pool splits by rows over `parts` workers (wO, a split
// layer's w2) in a form whose rows keep the whole matrix's quantization:
// int8 weights given as float32 are quantized once, whole, by `quantize`
// (a module's quantizeInt8, in a worker; the scale rule of the synchronous
// setWeights), since a worker quantizing its rows alone would scale each
// column over those rows only. Any other form, or a matrix held whole, as
// it is. A promise of the matrix, or the matrix.
export function quantizedWhole(m, [rows, cols], type, parts, quantize) {
  return type === 'int8' && parts > 1 && m.scales === undefined ? quantize(m, rows, cols) : m;
}

// The largest magnitude each type holds (src/checks/validate_values.cc refuses
// larger float32 weights for it).
const LARGEST = { f16: 65504, bf16: 3.3895313892515355e38 };

// Whether matrix (or bias) `m` of shape [rows, cols] has its lengths and
// finite values that an object of config.weights `type` takes. The pool
// splits only weights that pass; others go whole to a synchronous object,
// whose error names what is wrong (this screen composes no message).
export function fits(m, [rows, cols], type) {
  if (m.q4 !== undefined) {
    if (type !== 'q4' || rows % Q4_BLOCK_ROWS !== 0 ||
        m.q4.length !== cols * rows / Q4_BLOCK_ROWS * Q4_BLOCK_BYTES) return false;
    // Each block's float16 scale finite: its exponent bits not all ones.
    for (let at = 1; at < m.q4.length; at += Q4_BLOCK_BYTES) {
      if ((m.q4[at] & 0x7c) === 0x7c) return false;
    }
    return true;
  }
  if (m.scales !== undefined) {
    return type === 'int8' && m.values.length === rows * cols && m.scales.length === cols &&
      m.scales.every(Number.isFinite);
  }
  if (m.length !== rows * cols) return false;
  if (m.BYTES_PER_ELEMENT === 2) {
    // float16 or bfloat16 bits: finite unless the exponent bits are all ones.
    const exponent = { f16: 0x7c00, bf16: 0x7f80 }[type];
    return exponent !== undefined && m.every((b) => (b & exponent) !== exponent);
  }
  const largest = LARGEST[type] ?? Number.MAX_VALUE;
  return m.every((v) => Math.abs(v) <= largest);
}

// The buffers of a part's weights, which the message to its worker moves.
export function buffers(part) {
  return Object.values(part).flatMap((m) => (m.q4 !== undefined ? [m.q4.buffer]
    : m.scales !== undefined ? [m.values.buffer, m.scales.buffer] : [m.buffer]));
}
