// Attention backward policy: the arguments of one (batch, head) of the
// FlashAttention-2 backward in attention_backward-inl.h and the scratch it
// needs.
#pragma once

#include <cstddef>

#include "kernels/attention.h"

namespace simd_attention {

// Floats of scratch one head needs, per query block of kAttentionQueryBlock
// queries: Q^T scaled, as GEMM panels (dk); dO^T, as panels (dv); the block's
// dQ (dk); three key-block tiles (P^T, dP^T and, with soft-capping, the
// cap's derivative); each query's log-sum-exp and rowsum(dO * O).
// Independent of T, as the forward's.
constexpr size_t AttentionBackwardScratchFloats(size_t dk, size_t dv) {
  return kAttentionQueryBlock * (2 * dk + dv + 3 * kAttentionKeyBlock + 2);
}

// Gradients of one (batch, head) of softmax(Q K^T * scale + mask) V, given
// the forward's inputs and output O (z in `forward`, with every mask and
// option exactly as the forward had them) and each query's log-sum-exp.
// The probabilities are recomputed block by block, P = exp(S - lse), never
// stored. d_q is written; d_k and d_v are added to (the caller zeroes them
// once, and a grouped-query head's group adds into the same rows in turn).
// Rows are token-major with padded head widths whose padding holds zeros
// (d_out's too), as in the forward.
struct AttentionBackwardArgs {
  AttentionArgs forward;  // q, k, v (kv_type kF32), z = O, sizes, scale,
                          // masks; probs, scores and scratch unused
  const float* softmax_stats;  // [tq][2], as the forward wrote it
  const float* d_out;     // [tq, dv] with row stride ld_d_out
  size_t ld_d_out;
  float* d_q;             // [tq, dk] with row stride ld_d_q: written
  size_t ld_d_q;
  float* d_k;             // [tk, dk] with row stride ld_d_k: added to
  size_t ld_d_k;
  float* d_v;             // [tk, dv] with row stride ld_d_v: added to
  size_t ld_d_v;
  float* scratch;         // AttentionBackwardScratchFloats(dk, dv) floats
};

}  // namespace simd_attention
