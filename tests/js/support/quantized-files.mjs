// 4-bit weights as the files users have hold them, made in the tests from
// float32 weights: GGUF q4_0 tensors (quantized with ggml's rule, in a GGUF
// file that the tests parse with @huggingface/gguf) and onnxruntime's
// MatMulNBits initializers (quantized with its symmetric rule). Written
// from the formats' definitions, independently of the package's
// converters; each also gives the float32 weights it holds.
import { floatToHalf, halfToFloat } from './safetensors-writer.mjs';

const f = Math.fround;

// The weight of largest magnitude of x, with its sign (the first such).
function signedLargest(x) {
  let largest = 0, signed = 0;
  for (const v of x) {
    if (Math.abs(v) > largest) [largest, signed] = [Math.abs(v), v];
  }
  return signed;
}

// w [rows, cols] (X @ W) as GGUF q4_0 holds its transpose [cols, rows]:
// ggml's quantize_row_q4_0_ref per 32 rows of a column, in float32
// arithmetic. { bytes, floats: the weights the blocks hold, [rows, cols] }.
export function ggufQ4_0(w, rows, cols) {
  const bytes = new Uint8Array(cols * rows / 32 * 18);
  const floats = new Float32Array(rows * cols);
  for (let c = 0; c < cols; ++c) {
    for (let b = 0; b < rows / 32; ++b) {
      const x = Array.from({ length: 32 }, (_, k) => w[(b * 32 + k) * cols + c]);
      const d = f(signedLargest(x) / -8), id = d ? f(1 / d) : 0;
      const q = x.map((v) => Math.min(15, Math.trunc(f(f(v * id) + 8.5))));
      const at = (c * rows / 32 + b) * 18, dBits = floatToHalf(d);
      bytes[at] = dBits & 255;
      bytes[at + 1] = dBits >> 8;
      for (let j = 0; j < 16; ++j) bytes[at + 2 + j] = q[j] | (q[j + 16] << 4);
      q.forEach((v, k) => { floats[(b * 32 + k) * cols + c] = (v - 8) * halfToFloat(dBits); });
    }
  }
  return { bytes, floats };
}

// w [K, N] (X @ W) as MatMulNBits' 4-bit initializers with blocks of
// `blockSize` along K: onnxruntime's symmetric rule (scale = the block's
// signed largest / -8, q = clamp(round(w / scale) + 8, 0, 15)), scales as
// float16 bits, zero points 8 packed two a byte where `zeroPoints`.
// { B, scales, zeroPoints?, floats: the weights they hold, [K, N] }.
export function matMulNBits(w, K, N, blockSize, { zeroPoints = false } = {}) {
  const blocks = Math.ceil(K / blockSize), blob = blockSize / 2;
  const B = new Uint8Array(N * blocks * blob), scales = new Uint16Array(N * blocks);
  const floats = new Float32Array(K * N);
  for (let n = 0; n < N; ++n) {
    for (let b = 0; b < blocks; ++b) {
      const x = Array.from({ length: blockSize }, (_, i) =>
        (b * blockSize + i < K ? w[(b * blockSize + i) * N + n] : 0));
      const scale = f(signedLargest(x) / -8), reciprocal = scale ? f(1 / scale) : 0;
      scales[n * blocks + b] = floatToHalf(scale);
      x.forEach((v, i) => {
        const q = Math.min(15, Math.max(0, Math.round(f(v * reciprocal)) + 8));
        B[(n * blocks + b) * blob + (i >> 1)] |= q << (i % 2 * 4);
        const k = b * blockSize + i;
        if (k < K) floats[k * N + n] = (q - 8) * halfToFloat(scales[n * blocks + b]);
      });
    }
  }
  const out = { B, scales, floats, K, N, bits: 4, blockSize };
  if (zeroPoints) out.zeroPoints = new Uint8Array(N * Math.ceil(blocks / 2)).fill(0x88);
  return out;
}

// A GGUF (version 3) file of `tensors` { name: { type, shape: GGUF's
// [ne0, ne1], bytes } } and one metadata string, its data aligned to 32.
export function writeGguf(tensors) {
  const parts = [];
  const u32 = (v) => { const a = new Uint8Array(4); new DataView(a.buffer).setUint32(0, v, true); parts.push(a); };
  const u64 = (v) => { const a = new Uint8Array(8); new DataView(a.buffer).setBigUint64(0, BigInt(v), true); parts.push(a); };
  const string = (s) => { const a = new TextEncoder().encode(s); u64(a.length); parts.push(a); };
  const entries = Object.entries(tensors);
  parts.push(new TextEncoder().encode('GGUF'));
  u32(3);
  u64(entries.length);
  u64(1);
  string('general.name');
  u32(8);  // GGUF's string value type
  string('simd-attention test');
  let offset = 0;
  const offsets = entries.map(([, t]) => {
    const at = offset;
    offset = Math.ceil((offset + t.bytes.length) / 32) * 32;
    return at;
  });
  entries.forEach(([name, t], i) => {
    string(name);
    u32(t.shape.length);
    for (const n of t.shape) u64(n);
    u32(t.type);
    u64(offsets[i]);
  });
  const header = parts.reduce((n, p) => n + p.length, 0);
  const dataStart = Math.ceil(header / 32) * 32;
  const file = new Uint8Array(dataStart + offset);
  let at = 0;
  for (const p of parts) {
    file.set(p, at);
    at += p.length;
  }
  entries.forEach(([, t], i) => file.set(t.bytes, dataStart + offsets[i]));
  return file;
}
