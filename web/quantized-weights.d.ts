// Types of the package entry 'simd-attention/quantized-weights'
// (src/quantized-weights.js): 4-bit weights that files hold, as the q4
// blocks setWeights takes, converted exactly or refused.

import type { Q4Weights } from './types/tensors.js';

/** A GGUF tensor's info, as `@huggingface/gguf`'s `gguf()` lists it. */
export interface GgufTensorInfo {
  name: string;
  /** GGUF's `[in, out]`: the matrix's `[rows, cols]` in setWeights' `X @ W` layout. */
  shape: ArrayLike<number | bigint>;
  /** The ggml type: q4_0 (2) is taken; q8_0 (8) and the rest are refused. */
  dtype: number;
}

/**
 * A GGUF q4_0 tensor as the q4 blocks of an object whose `config.weights` is
 * `'q4'`: its blocks are setWeights' own, so the result views `data`. A
 * RangeError for another type (q8_0's scale per 32 weights is not int8's
 * one per column), a shape other than `[in, out]` with `in` a multiple of
 * 32, or a length other than the shape's.
 */
export function ggufQ4Weights(tensor: GgufTensorInfo, data: Uint8Array): Q4Weights;

/** onnxruntime's `MatMulNBits` (com.microsoft) node: its initializers and attributes. */
export interface MatMulNBitsWeights {
  /** uint8 `[N, blocks, blockSize / 2]`, two weights a byte, the first in the low nibble. */
  B: Uint8Array;
  /** `[N * blocks]`: float32, or float16 bits. */
  scales: Float32Array | Uint16Array;
  /** Absent (8), uint8 `[N, ceil(blocks / 2)]` two a byte, or as scales' type. Each must be 8. */
  zeroPoints?: Uint8Array | Float32Array | Uint16Array;
  K: number;
  N: number;
  /** 4 (the default); others are refused. */
  bits?: number;
  /** A multiple of 32 (each 32 rows of a block become a q4 block of its scale). */
  blockSize: number;
}

/**
 * `MatMulNBits` 4-bit weights as the q4 blocks of the matrix `[K, N]`,
 * converted exactly: a RangeError names the value that q4 cannot hold (a
 * zero point other than 8, blockSize 16, K not a multiple of 32, a float32
 * scale that float16 does not hold exactly).
 */
export function matMulNBitsQ4Weights(weights: MatMulNBitsWeights): Q4Weights;

/**
 * The float32 weights `[rows, cols]` that q4 blocks hold; a `'q4'` object
 * quantizes them back into the same blocks. A RangeError for rows not a
 * positive multiple of 32 or bytes other than the shape's.
 */
export function dequantizeQ4(q4: Uint8Array, rows: number, cols: number): Float32Array;

export const Q4_BLOCK_ROWS: 32;
export const Q4_BLOCK_BYTES: 18;
