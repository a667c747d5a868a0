// Integer GEMM policy for int8 weights times more rows than the GEMV takes
// (prefill: the projections, the FFN): the kernel in int8_gemm-inl.h, which
// a table's `gemm` runs for int8 weights; RunGemm sends products of at most
// kInt8GemvMaxRows rows to the GEMV (int8_gemv.h) instead.
//
// Each row of A is quantized to int16 with the GEMV's rule (Int8RowScale:
// symmetric, step max |a| / 32767, rounded to nearest even), once per
// product; a register tile of rows x panel columns then multiplies two K rows
// at a time and sums them in int32 with one instruction per vector
// (i32x4.dot_i16x8_s, pmaddwd, AVX512-VNNI's vpdpwssd), and after every
// kInt8ChunkPairs pairs turns its sums into float:
//   c = sum * (column scale * row scale) + c   (the bias, or 0, first).
// Per 2 x lanes weights that is one multiply-add where float32 takes two
// (a multiply and an add in wasm-simd128, two FMAs natively), and the
// weights stay int8 in memory and cache, sign-extended as they are loaded.
//
// Why int16 activations, not int8 with a zero point (onnxruntime's
// DynamicQuantizeLinear): the instructions above multiply int16, so int8
// activations would cost the same operations and round 256 times coarser.
// The relaxed-SIMD build runs the same kernel: relaxed SIMD's
// i32x4.relaxed_dot_i8x16_i7x16_add_s (16 products per instruction) wants
// 7-bit activations (its second operand; with the high bit set engines
// differ) or a sign split into two dot products, and Emscripten 3.1.6's
// clang 14 has no builtin for it; V8 on x86 without AVX-VNNI lowers it to
// pmaddubsw, pmaddwd and an add, no fewer operations than two
// i32x4.dot_i16x8_s and their adds.
//
// Accuracy contract (tests/gemm_weight_types_test.cc asserts it on every
// table), for output (i, j), with s_i = max_k |a_ik| / 32767 and stored
// weights w_kj = q_kj * scale_j:
//  - against a float64 product of the quantized operands, sum_k
//    round(a_ik / s_i) s_i w_kj + bias_j: the int32 sums are exact; each
//    chunk's sum is converted, scaled and added in float32, a few roundings
//    of 2^-24: |error| <= 8 * 2^-23 * (|bias_j| + sum_k |a_ik w_kj|);
//  - against a float64 product of the float32 activations and the stored
//    weights: also each activation's rounding, half a step at most,
//    max_k |a_ik| * 2^-16 * 65536 / 65534 (the step's own float32 rounding
//    included), times sum_k |w_kj|;
//  - against float32 weights before quantization, the int8 storage's own
//    rounding adds sum_k |a_ik| * scale_j / 2 (scale_j = max_k |w_kj| / 127).
// The GEMV follows the same rule with the same chunks: a row's result does
// not depend on how many rows are multiplied with it, and is bit-identical
// for every thread count (ParallelGemm splits columns only).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/int8_gemv.h"

namespace simd_attention {

// K pairs of a product of k columns of A starting at packed row k_begin:
// pairs begin at an even packed row (an odd k_begin puts A's first column in
// the second row of a pair, as in the GEMV).
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

}  // namespace simd_attention
