// Attention policy: block sizes of the online-softmax kernel in
// attention-inl.h and the scratch it needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "simd_attention/scores_stage.h"
#include "simd_attention/weight_type.h"

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
  return kAttentionQueryBlock * (dk + kAttentionKeyBlock + dv + 3) +
         kAttentionKeyBlock * (dk + dv);  // a key block widened (kv_type)
}

// One (batch, head) of softmax(Q K^T * scale + mask) V. Q, K, V rows are
// token-major with the given strides; their head widths are padded to whole
// vectors (kernels/attention.h) and the padding holds zeros.
struct AttentionArgs {
  const float* q;
  size_t ldq;
  // Keys and values of kv_type elements (float, or F16Bits / BF16Bits of
  // gemm.h or int8 for a narrow KV cache: read in registers by the dot
  // products of few queries, widened a key block at a time into the scratch
  // for the GEMM of many), row strides in elements.
  const void* k;
  size_t ldk;
  const void* v;
  size_t ldv;
  size_t tq;
  size_t tk;
  size_t dk;  // padded head width of Q and K
  size_t dv;  // padded head width of V and Z
  float scale;
  // Causal: key j visible to query i iff j <= i + causal_diagonal; tk - tq
  // aligns the last query with the last key (bottom-right, as when decoding
  // with a cache), and any other value puts query i at key position
  // causal_diagonal + i (negative: the first queries see no key). A block
  // of queries starting at row q0 of a larger tq passes the diagonal + q0,
  // and computes exactly what the whole call would.
  bool causal;
  ptrdiff_t causal_diagonal;
  // With causal, keys up to window_right past the diagonal stay visible:
  // j <= i + causal_diagonal + window_right (0 = causal proper).
  ptrdiff_t window_right;
  // Sliding window: keys j < i + causal_diagonal - window_left are hidden
  // too. Both bounds are relative to the same diagonal, so a key window
  // [left, right] is sliding + causal with those widths (>= 0 each).
  bool sliding;
  ptrdiff_t window_left;
  // > 0: scores become softcap * tanh(score / softcap) after the scale and
  // before the masks; 0 = no cap.
  float softcap;
  const uint8_t* key_valid;    // [tk], 1 = real token; nullptr = all real
  // [tq, masked_from] with row stride mask_ld; or nullptr.
  const float* additive_mask;
  size_t mask_ld;
  // [tq, masked_from] with row stride boolean_mask_ld, 1 = may attend; or
  // nullptr.
  const uint8_t* boolean_mask;
  size_t boolean_mask_ld;
  // Keys j >= masked_from are hidden from every query: the masks cover the
  // first masked_from keys only (ONNX pads a narrower mask with -inf), and
  // the blocks past them are never visited.
  size_t masked_from = std::numeric_limits<size_t>::max();
  float* z;  // [tq, dv] with row stride ldz
  size_t ldz;
  float* probs;  // [tq, tk] row-major; nullptr = not requested
  // [tq, tk] row-major: the scores at scores_stage (kMasked: after scale,
  // cap and masks, -inf where hidden, what the softmax takes; the earlier
  // stages for every key, the hidden ones computed too); nullptr = not
  // requested.
  float* scores;
  ScoresStage scores_stage = ScoresStage::kMasked;
  // [tq][2]: each query's softmax statistics, the largest score m and the
  // sum l of exp(score - m), from which the backward (attention_backward.h)
  // turns scores back into probabilities (l = 0: a query that sees no key).
  // Raw, not m + log(l): the forward of a build that never trains then
  // carries two copies, not a logarithm. nullptr = not requested.
  float* softmax_stats;
  float* scratch;  // AttentionScratchFloats(...) floats
  WeightType kv_type = WeightType::kF32;
  // int8 keys and values (kv_type kInt8): row j's scale at k_scales[j *
  // ld_scales] (v_scales likewise); the row holds k[j][:] * that scale.
  const float* k_scales = nullptr;
  const float* v_scales = nullptr;
  size_t ld_scales = 0;
};

// The kernel's scalar parts, the same for every vector layer and so compiled
// once (attention_scalar_parts.cc). The key block [k0, k0 + nk) of a query block
// [q0, q0 + nq) is a tile S^T of nk rows of `cols` floats (cols >= nq).

// Keys [begin, end) that the causal mask and the window leave visible to
// some query of the block.
void VisibleKeys(const AttentionArgs& a, size_t q0, size_t nq, size_t& begin, size_t& end);
// The block's queries times the softmax scale into qt: rows [nq][dk] for
// dot products (panel == 0), or Q^T as GEMM panels [cols / panel][dk][panel]
// whose columns past the last query are zero.
void PackScaledQueries(const AttentionArgs& a, size_t q0, size_t nq, size_t cols, size_t panel,
                       float* qt);
// Whether every key of the block is padding.
bool AllPadding(const AttentionArgs& a, size_t k0, size_t nk);
// Adds the additive mask and sets every hidden score of the tile to -inf.
void MaskScores(const AttentionArgs& a, size_t q0, size_t nq, size_t k0, size_t nk, float* st,
                size_t cols);
// The tile's scores into a.scores if they are at the stage requested (and
// scores are); st == nullptr: all -inf (a block no query sees).
void WriteScores(const AttentionArgs& a, ScoresStage stage, size_t q0, size_t nq, size_t k0,
                 size_t nk, const float* st, size_t cols);
// After a pass over the query block [q0, q0 + nq) with its probabilities
// times `scale`: the scale its next pass needs, or 0 for none. An unscaled
// block whose output is finite needs none (z = O / l is finite exactly when
// O is: a scan of the rows it just wrote, in L1); one whose output is not,
// 2^-k with 2^k > 2 x `keys`, so that its accumulator, at most keys x
// max|v|, stays within half of float32's range (exact: the scale cancels in
// O / l). After a scaled pass its sums `l` are scaled back (exact) for the
// statistics and probabilities.
float RescueScale(const AttentionArgs& a, size_t q0, size_t nq, size_t keys, float scale,
                  float* l);
// The block's softmax statistics (its queries' m and l) into a.softmax_stats.
void WriteSoftmaxStats(const AttentionArgs& a, size_t q0, size_t nq, const float* m,
                       const float* l);

}  // namespace simd_attention
