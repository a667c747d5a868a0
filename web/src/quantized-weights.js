// 4-bit weights that files already hold, as the q4 blocks setWeights takes
// for config.weights 'q4' ({ q4: Uint8Array }: GGUF q4_0 blocks of the
// matrix's transpose, a torch Linear's [out, in], 32 rows of a column a
// block), taken as they are: from a GGUF tensor (q4_0) and from the
// initializers of onnxruntime's MatMulNBits (4 bits). The package entry
// ('simd-attention/quantized-weights'), apart from the default page's.
import { describe } from './arguments.js';
import { float16Bits, float16Value } from './float16.js';

export const Q4_BLOCK_ROWS = 32;
// A block's bytes: a float16 scale d, then byte j holding row j's q in its
// low nibble and row j + 16's in its high one (w = (q - 8) * d).
export const Q4_BLOCK_BYTES = 18;

// ggml's type numbers (ggml.h, GGUF's tensor infos; @huggingface/gguf's
// GGMLQuantizationType).
const GGML_Q4_0 = 2;
const GGML_Q8_0 = 8;

// A GGUF tensor as `{ q4 }` for a 'q4' object's setWeights: `tensor` its
// info as @huggingface/gguf lists it ({ name, shape, dtype }: shape GGUF's
// [in, out], which is the matrix's [rows, cols] in setWeights' X @ W
// layout), `data` its bytes. q4_0's blocks are setWeights' own: no byte
// moves, and the result views `data`.
export function ggufQ4Weights(tensor, data) {
  if (tensor === null || typeof tensor !== 'object') {
    throw new TypeError('ggufQ4Weights: tensor: expected its info ({ name, shape, dtype }), ' +
      `got ${describe(tensor)}`);
  }
  const name = typeof tensor.name === 'string' ? `ggufQ4Weights: tensor '${tensor.name}'`
    : 'ggufQ4Weights: tensor';
  if (!(data instanceof Uint8Array)) {
    throw new TypeError(`${name}: data: expected a Uint8Array of the tensor's bytes, ` +
      `got ${describe(data)}`);
  }
  if (!Array.isArray(tensor.shape) && !ArrayBuffer.isView(tensor.shape)) {
    throw new TypeError(`${name}: shape: expected an array, got ${describe(tensor.shape)}`);
  }
  if (Number(tensor.dtype) === GGML_Q8_0) {
    // int8 weights scale each whole column once; q8_0 scales each block of
    // 32, which one scale per column cannot hold without rounding again.
    throw new RangeError(`${name}: q8_0 has a scale per 32 weights, which config.weights ` +
      "'int8' (one scale per column) cannot hold exactly; dequantize it to float32 to have " +
      'it quantized again');
  }
  if (Number(tensor.dtype) !== GGML_Q4_0) {
    throw new RangeError(`${name}: expected ggml type q4_0 (${GGML_Q4_0}), got ${tensor.dtype}`);
  }
  const shape = Array.from(tensor.shape, Number);
  if (shape.length !== 2 || shape[0] % Q4_BLOCK_ROWS !== 0) {
    throw new RangeError(`${name}: expected a matrix [in, out] of in a multiple of ` +
      `${Q4_BLOCK_ROWS}, got shape [${shape.join(', ')}]`);
  }
  const bytes = shape[0] / Q4_BLOCK_ROWS * shape[1] * Q4_BLOCK_BYTES;
  if (data.length !== bytes) {
    throw new RangeError(`${name}: expected ${bytes} bytes for shape [${shape.join(', ')}], ` +
      `got ${data.length}`);
  }
  return { q4: data };
}

// onnxruntime's MatMulNBits (com.microsoft) initializers as `{ q4 }`: B
// (uint8 [N, blocks, blockSize / 2]: element 2i of a block in byte i's low
// nibble, 2i + 1 in its high one), scales ([N * blocks], a Float32Array or
// float16 bits in a Uint16Array), zeroPoints (optional: uint8 [N,
// ceil(blocks / 2)] two nibbles a byte, or a Float32Array / Uint16Array as
// scales; none means 8), K, N, bits and blockSize (the node's attributes).
// Converted exactly or refused: 4 bits, zero points 8, blockSize a
// multiple of 32 (each 32 of its rows a block of the same scale), K a
// multiple of 32, float32 scales that float16 holds exactly.
export function matMulNBitsQ4Weights({ B, scales, zeroPoints, K, N, bits = 4, blockSize }) {
  const where = 'matMulNBitsQ4Weights';
  if (bits !== 4) throw new RangeError(`${where}: bits: expected 4, got ${bits}`);
  if (!Number.isInteger(blockSize) || blockSize < Q4_BLOCK_ROWS ||
      blockSize % Q4_BLOCK_ROWS !== 0) {
    throw new RangeError(`${where}: blockSize: expected a multiple of ${Q4_BLOCK_ROWS} ` +
      `(q4 blocks hold ${Q4_BLOCK_ROWS} rows a scale), got ${blockSize}`);
  }
  if (!Number.isInteger(K) || K <= 0 || K % Q4_BLOCK_ROWS !== 0) {
    throw new RangeError(`${where}: K: expected a positive multiple of ${Q4_BLOCK_ROWS}, got ${K}`);
  }
  if (!Number.isInteger(N) || N <= 0) {
    throw new RangeError(`${where}: N: expected a positive integer, got ${N}`);
  }
  const blocks = Math.ceil(K / blockSize), blob = blockSize / 2;
  const expectLength = (what, v, length, types) => {
    if (!types.some((t) => v instanceof t)) {
      throw new TypeError(`${where}: ${what}: expected a ${types.map((t) => t.name).join(' or ')}`);
    }
    if (v.length !== length) {
      throw new RangeError(`${where}: ${what}: expected ${length} values, got ${v.length}`);
    }
  };
  expectLength('B', B, N * blocks * blob, [Uint8Array]);
  expectLength('scales', scales, N * blocks, [Float32Array, Uint16Array]);
  const value = (v, i) => (v instanceof Uint16Array ? float16Value(v[i]) : v[i]);
  if (zeroPoints !== undefined) {
    const packed = zeroPoints instanceof Uint8Array;
    expectLength('zeroPoints', zeroPoints, packed ? N * Math.ceil(blocks / 2) : N * blocks,
      [Uint8Array, Float32Array, Uint16Array]);
    for (let n = 0; n < N; ++n) {
      for (let b = 0; b < blocks; ++b) {
        const z = packed ? zeroPoints[n * Math.ceil(blocks / 2) + (b >> 1)] >> (b % 2 * 4) & 15
          : value(zeroPoints, n * blocks + b);
        if (z !== 8) {
          throw new RangeError(`${where}: zeroPoints: q4 blocks are symmetric (zero point 8); ` +
            `column ${n}'s block ${b} has ${z}`);
        }
      }
    }
  }
  const q4 = new Uint8Array(N * K / Q4_BLOCK_ROWS * Q4_BLOCK_BYTES);
  const view = new DataView(q4.buffer);
  for (let n = 0; n < N; ++n) {
    for (let k0 = 0; k0 < K; k0 += Q4_BLOCK_ROWS) {
      const b = Math.floor(k0 / blockSize), s = n * blocks + b;
      const d = float16Bits(value(scales, s));
      if (!(float16Value(d) === value(scales, s)) || (d & 0x7c00) === 0x7c00) {
        throw new RangeError(`${where}: scales: q4 blocks hold finite float16 scales; scale ` +
          `${s} (column ${n}'s block ${b}) is ${value(scales, s)}`);
      }
      const at = (n * K + k0) / Q4_BLOCK_ROWS * Q4_BLOCK_BYTES;
      view.setUint16(at, d, true);
      const first = s * blob + (k0 % blockSize) / 2;  // byte of this block's row 0
      const nibble = (k) => B[first + (k >> 1)] >> (k % 2 * 4) & 15;
      for (let j = 0; j < 16; ++j) q4[at + 2 + j] = nibble(j) | nibble(j + 16) << 4;
    }
  }
  return { q4 };
}

// The weights q4 blocks hold, as float32 [rows, cols] row-major (X @ W):
// w = (q - 8) * d. Given to a 'q4' object as float32, they are quantized
// back into the same blocks.
export function dequantizeQ4(q4, rows, cols) {
  const where = 'dequantizeQ4';
  if (!(q4 instanceof Uint8Array)) throw new TypeError(`${where}: q4: expected a Uint8Array`);
  if (!Number.isInteger(rows) || rows <= 0 || rows % Q4_BLOCK_ROWS !== 0) {
    throw new RangeError(`${where}: rows: expected a positive multiple of ${Q4_BLOCK_ROWS}, ` +
      `got ${rows}`);
  }
  if (!Number.isInteger(cols) || cols <= 0) {
    throw new RangeError(`${where}: cols: expected a positive integer, got ${cols}`);
  }
  const bytes = rows / Q4_BLOCK_ROWS * cols * Q4_BLOCK_BYTES;
  if (q4.length !== bytes) {
    throw new RangeError(`${where}: q4: expected ${bytes} bytes for [${rows}, ${cols}], ` +
      `got ${q4.length}`);
  }
  const out = new Float32Array(rows * cols);
  const view = new DataView(q4.buffer, q4.byteOffset, q4.byteLength);
  const blocks = rows / Q4_BLOCK_ROWS;
  for (let c = 0; c < cols; ++c) {
    for (let b = 0; b < blocks; ++b) {
      const at = (c * blocks + b) * Q4_BLOCK_BYTES;
      const d = float16Value(view.getUint16(at, true));
      for (let j = 0; j < 16; ++j) {
        const byte = q4[at + 2 + j], row = b * Q4_BLOCK_ROWS + j;
        out[row * cols + c] = ((byte & 15) - 8) * d;
        out[(row + 16) * cols + c] = ((byte >> 4) - 8) * d;
      }
    }
  }
  return out;
}
