// Integer GEMM policy for int8 weights: the kernel in int8_gemm-inl.h, which
// a table's `gemm` runs for every product of int8 weights, one row (a
// decoding step) or many (prefill: the projections, the FFN).
//
// Widening int8 weights to float costs more operations per weight than the
// multiply-add it feeds (in wasm a one-row product ran 3x slower than on
// float32 weights; with many rows the widened slice at best matched
// float32). Instead each row of A is quantized to int16 with one float step
// (symmetric: max |a| / 32767, rounded to nearest even), once per product; a
// register tile of rows x panel columns multiplies two K rows at a time and
// sums them in int32 with one instruction per vector (i32x4.dot_i16x8_s,
// pmaddwd, AVX512-VNNI's vpdpwssd), and after every kInt8ChunkPairs pairs
// turns its sums into float:
//   c = sum * (column scale * row step) + c   (the bias, or 0, first).
// Per 2 x lanes weights that is one multiply-add where float32 takes two (a
// multiply and an add in wasm-simd128, two FMAs natively), and the weights
// stay int8 in memory and cache, sign-extended as they are loaded.
//
// Why int16 activations, not int8 with a zero point (onnxruntime's
// DynamicQuantizeLinear): the instructions above multiply int16, so int8
// activations would cost the same operations and round 256 times coarser.
// The relaxed-SIMD build runs the same kernel: relaxed SIMD's
// i32x4.relaxed_dot_i8x16_i7x16_add_s (16 products per instruction) gives
// the same result on every engine only for a second operand in [0, 127]
// (x86 engines treat it as unsigned), so it would take 7-bit activations
// (twice int8's rounding) or a sign split into two dot products; Emscripten
// 3.1.6's clang 14 has no builtin for it, and V8 on x86 without AVX-VNNI
// lowers it to pmaddubsw, pmaddwd and an add, no fewer operations per
// product than i32x4.dot_i16x8_s and its add.
//
// Accuracy contract (tests/int8_gemm_test.cc asserts it on every table),
// for output (i, j), with step s_i = max_k |a_ik| / 32767, stored weights
// w_kj = q_kj * scale_j and C chunks of kInt8ChunkPairs pairs:
//  - against a float64 product of the quantized operands, sum_k
//    round(a_ik / s_i) s_i w_kj + bias_j: the int32 sums are exact; each
//    chunk's sum is converted, scaled and added in float32:
//    |error| <= (3 + C) 2^-24 (|bias_j| + sum_k |round(a_ik / s_i) s_i w_kj|);
//  - against a float64 product of the float32 activations and the stored
//    weights: also each activation's rounding, half a step,
//    max_k |a_ik| * 2^-16 * 65536 / 65534, times sum_k |w_kj|;
//  - against the float32 weights before quantization, the int8 storage's
//    own rounding adds sum_k |a_ik| * scale_j / 2 (scale_j = max_k |w_kj| /
//    127).
// A row's result does not depend on the other rows multiplied with it (the
// tiles only share weights), and ParallelGemm splits columns only: results
// are bit-identical for every thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace simd_attention {

// K pairs summed in one int32 lane before it goes to float. |activation| <=
// 32767 and |weight| <= 128 (a given int8 checkpoint may hold -128), so one
// pairwise multiply-add adds at most 2 * 32767 * 128 = 8,388,352 to a lane,
// and 256 of them at most 2,147,418,112 <= 2^31 - 1 = 2,147,483,647. Longer
// K is split into chunks of 512 rows, each converted to float (relative
// error 2^-24) and added to the output.
constexpr size_t kInt8ChunkPairs = 256;

// K pairs of a product of k columns of A starting at packed row k_begin:
// pairs begin at an even packed row (an odd k_begin puts A's first column in
// the second row of a pair).
inline size_t Int8Pairs(size_t k, size_t k_begin) { return (k_begin % 2 + k + 1) / 2; }

// A's quantized rows, as int8_quantize writes them: per row tile of
// `tile_rows` rows (the table's gemm_tile_rows; the last one padded), per
// pair, one int32 word per row of the tile, the pair's two int16 in it (the
// first column in the low half). A tile reads its rows' words of a pair side
// by side: one pointer for every row, whose loads wasm addresses as the
// pointer plus a constant.
inline size_t Int8Words(size_t m, size_t tile_rows, size_t k, size_t k_begin) {
  return (m + tile_rows - 1) / tile_rows * tile_rows * Int8Pairs(k, k_begin);
}

// The int16 step of a row whose largest magnitude is `largest`:
// largest / 32767 (0 for a row of zeros), and its inverse (0 for a row of
// zeros) in `inverse`, by which the kernel multiplies before rounding.
inline float Int8Step(float largest, float* inverse) {
  *inverse = largest > 0 ? 32767.0f / largest : 0.0f;
  return largest / 32767.0f;
}

}  // namespace simd_attention
