// Attention policy: block sizes of the online-softmax kernel in
// attention-inl.h and the scratch it needs.
#pragma once

#include <cstddef>

namespace simd_attention {

// A query block is the columns of the transposed score tile S^T (keys x
// queries), so that the softmax runs down columns with no horizontal
// reductions. 32 queries is a whole number of GEMM panels on every target
// (panel width 2, 8, 16 or 32 floats) and, with 64-wide heads, keeps the
// block's Q^T (8 KiB), output accumulator (8 KiB) and a 64-key S^T tile
// (8 KiB) inside a 32 KiB L1 next to the streamed K and V rows.
constexpr size_t kAttentionQueryBlock = 32;
constexpr size_t kAttentionKeyBlock = 64;

// Floats of scratch one head needs: Q^T, S^T, the output accumulator and the
// running max, sum and rescale factor per query. Independent of T: the
// Tq x Tk score matrix is never materialized.
constexpr size_t AttentionScratchFloats(size_t dk, size_t dv) {
  return kAttentionQueryBlock * (dk + kAttentionKeyBlock + dv + 3);
}

}  // namespace simd_attention
