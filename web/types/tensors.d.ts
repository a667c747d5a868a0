// Tensors and the storage types of weights and caches.

/**
 * A dense float32 tensor, row-major. Activations are `[batch, tokens,
 * features]`; a 2-D `[tokens, features]` tensor means batch = 1 ("unbatched").
 */
export interface Tensor {
  data: Float32Array;
  shape: number[];
}

/**
 * How an object holds its weight matrices (wQ, wK, wV, wO; a layer's FFN w1
 * and w2): `'f32'` 4 bytes a weight; `'f16'` (IEEE half) and `'bf16'`
 * (bfloat16) 2 bytes, rounded to nearest even at setWeights; `'int8'` 1 byte,
 * symmetric per output column (`w = value * scale[column]`, `scale =
 * max|w| / 127`) plus a float32 scale per column; `'q4'` GGUF q4_0, half a
 * byte, per column blocks of 32 rows sharing a float16 scale (`w = (q - 8) *
 * scale`, quantized from float32 at setWeights or given as blocks). Biases and LayerNorm
 * parameters stay float32, and so does the arithmetic: the kernels widen
 * each weight as they load it.
 */
export type WeightTypeName = 'f32' | 'f16' | 'bf16' | 'int8' | 'q4';

/**
 * How KV caches and precomputed keys/values hold keys and values: `'f32'`
 * 4 bytes a value, `'f16'` and `'bf16'` 2 (rounded to nearest even as they
 * are stored), `'int8'` 1 plus a float32 scale per head's row of a token
 * (`max(abs(row)) / 127`, each value within half of it); the attention
 * kernel widens them in registers or a key block at a time.
 */
export type CacheTypeName = 'f32' | 'f16' | 'bf16' | 'int8';

/**
 * float16 or bfloat16 values as their bits: a `Uint16Array`, or a
 * `Float16Array` where the engine has one (read as its bits).
 */
export type HalfBits = Uint16Array |
  (ArrayBufferView & { readonly length: number; readonly [Symbol.toStringTag]: 'Float16Array' });

/** int8 weights as a quantized checkpoint holds them: `w[r, c] = values[r * cols + c] * scales[c]`. */
export interface Int8Weights {
  /** `[rows, cols]`, row-major, in the matrix's `X @ W` layout. */
  values: Int8Array;
  /** `[cols]`: one finite scale per output column. */
  scales: Float32Array;
}

/**
 * q4 weights as a GGUF file holds them: the q4_0 tensor of the matrix's
 * transpose (a torch Linear's `[out, in]`), so a matrix `[rows, cols]` in
 * the `X @ W` layout is `cols * rows / 32` blocks of 18 bytes, column `c`'s
 * blocks in a row, each a little-endian float16 scale `d` and 16 bytes whose
 * byte `j` holds the `q` of the block's row `j` in its low nibble and of row
 * `j + 16` in its high one: `w = (q - 8) * d`. rows is a multiple of 32.
 * `simd-attention/quantized-weights` makes them from GGUF tensors and
 * onnxruntime's MatMulNBits initializers.
 */
export interface Q4Weights {
  q4: Uint8Array;
}

/**
 * A weight matrix: float32 values, stored in the object's `config.weights`
 * at setWeights (int8: quantized per column; q4: per block of 32 rows), or
 * values already in that type, taken as they are: `HalfBits` for `'f16'` /
 * `'bf16'` (the object's type says which), `Int8Weights` for `'int8'`,
 * `Q4Weights` for `'q4'` (bit-identical to the float32 weights they hold,
 * which q4 quantizes into the same blocks; an attention's `wO` as blocks
 * needs `headDimV` a multiple of the backend's vector lanes, 16 at most). A
 * form that does not match `config.weights` is a RangeError naming the
 * weight (`wQ: int8 values given, but config.weights is float16`); float32
 * values beyond float16's range (65504) for `'f16'` are one too.
 */
export type WeightMatrix = Float32Array | HalfBits | Int8Weights | Q4Weights;

/** A PyTorch weight matrix: float32, or the bits of an object's `'f16'` / `'bf16'` weights. */
export type TorchMatrix = Float32Array | HalfBits;
