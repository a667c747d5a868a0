// GEMM policy for 4-bit weights (WeightType::kQ4, layout in q4_layout.h):
// the kernel in q4_gemm-inl.h, which a table's `gemm` runs for every
// product of q4 weights, one row (a decoding step) or many (prefill).
//
// It is the int8 kernel (int8_gemm.h) with the weights unpacked in
// registers: A is quantized per row to int16 by the int8 kernel's Quantize
// (the same words, step and rounding), and a register tile of rows x panel
// columns loads 2 * lanes bytes per K pair, splits them into the low and
// high nibbles (two K pairs 8 apart) and multiplies each with the pairwise
// int16 multiply-add (i32x4.dot_i16x8_s, pmaddwd, vpdpwssd). The - 8 of
// every nibble is taken from the block's sum instead: 8 times the block's
// sum of the row's words, which leaves the int32 sum of (q - 8) a exactly.
// No scratch pass: a decoding step reads each weight once, 4.5 bits of it
// (with the scale) from memory. A block's int32 sums are converted to float
// and scaled by the block's float16 scales, widened in registers; the row's
// step is applied once per C tile:
//   c = (sum_b float(sum of block b) * d_b) * row step + c0.
// The alternative of dequantizing blocks into an int16 panel with the block
// scale folded in would round each weight a second time; per-block sums are
// exact in int32 (32 products of |a| <= 32767 and q <= 15, less 8 times 32
// such |a|).
//
// Accuracy contract (tests/q4_gemm_test.cc asserts it on every table), for
// output (i, j), with step s_i = max_k |a_ik| / 32767, the dequantized
// weights w_kj = (q_kj - 8) * d_bj (d_bj the float16 scale of k's block b)
// and B blocks:
//  - against a float64 product of the quantized operands, sum_k
//    round(a_ik / s_i) s_i w_kj + bias_j: each block's sum converted
//    exactly (|sum| < 2^24), times d_bj, added in float32, then the step
//    and the bias:
//    |error| <= (B + 4) 2^-24 (|bias_j| + sum_k |round(a_ik / s_i) s_i w_kj|);
//  - against a float64 product of the float32 activations and the
//    dequantized weights: also each activation's rounding, half a step,
//    max_k |a_ik| * 2^-16 * 65536 / 65534, times sum_k |w_kj|;
//  - against the float32 weights before quantization, the 4-bit rounding
//    (GGUF q4_0's: d = the block's largest-magnitude weight / -8, q =
//    min(15, floor(w / d + 8.5))) adds up to sum_k |a_ik| * (|d_bj| / 2 +
//    8 |d_bj - d'_bj|), d' the scale before it is rounded to float16; |d_bj|
//    in place of |d_bj| / 2 for weights beyond 7.5 d', where q = 15 clamps
//    (q4_0 reaches -8 d but only 7 d).
// A row's result does not depend on the other rows multiplied with it, and
// ParallelGemm splits columns only: bit-identical for every thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>

#include "kernels/gemm.h"
#include "kernels/q4_activation_sums.h"
#include "kernels/q4_layout.h"

namespace simd_attention {

// Columns of A a q4 product of k columns from packed row k_begin reads:
// whole blocks of K, the first `lead` of them before column 0 of A.
inline size_t Q4Lead(size_t k_begin) { return k_begin % kQ4BlockRows; }
inline size_t Q4PaddedK(size_t k, size_t k_begin) {
  return Q4Blocks(Q4Lead(k_begin) + k) * kQ4BlockRows;
}

// `g` as the int8 kernel's Quantize must see A for q4 weights: whole blocks
// from packed row k_begin - Q4Lead(k_begin), zeros outside A's k columns
// (copied into *padded unless A already starts and ends on a block edge),
// so that quantized pair p is K pair p of the product's first block.
inline GemmArgs Q4ActivationArgs(const GemmArgs& g, std::unique_ptr<float[]>* padded) {
  GemmArgs a = g;
  const size_t lead = Q4Lead(g.k_begin), k = Q4PaddedK(g.k, g.k_begin);
  a.k_begin = 0;
  a.k = k;
  if (lead == 0 && k == g.k) return a;
  padded->reset(new float[g.m * k]());
  for (size_t r = 0; r < g.m; ++r) {
    std::copy(g.a + r * g.lda, g.a + r * g.lda + g.k, padded->get() + r * k + lead);
  }
  a.a = padded->get();
  a.lda = k;
  return a;
}

}  // namespace simd_attention
