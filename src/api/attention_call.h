// One attention call's options in the kernel's terms, for MultiHeadAttention
// and ScaledDotProductAttention alike: the scale, soft-capping, causal
// alignment, key window and masks are checked here once (messages use the
// caller's names) and set on the kernel's AttentionArgs for every work item.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/attention.h"
#include "simd_attention/arg_names.h"
#include "simd_attention/causal_alignment.h"
#include "simd_attention/scores_stage.h"

namespace simd_attention {

// The heads' outputs, a weighted mean of finite values each: finite unless
// values near float32's largest round past it (the kernel keeps its sums in
// range), which both entry points refuse under this name.
inline constexpr char kAttentionOutput[] = "the attention softmax(q k^T) v";

// The options as both entry points hold them (see SdpaOptions and
// MhaOptions for their meaning); spans view the caller's data.
struct CallOptions {
  CausalAlignment causal = CausalAlignment::kNone;
  std::array<int64_t, 2> window{-1, -1};
  std::optional<double> scale;  // default 1 / sqrt(head_dim)
  std::optional<double> softcap;
  std::span<const float> attn_mask;
  std::span<const size_t> attn_mask_shape;
  std::span<const uint8_t> bool_mask;
  std::span<const size_t> bool_mask_shape;
  std::span<const uint8_t> key_padding_mask;
  std::span<const size_t> kv_lengths;
  std::span<const int64_t> query_offset;
  ScoresStage scores_stage = ScoresStage::kMasked;
};

// The fields of MhaOptions or SdpaOptions (the same names) that AttentionCall
// takes, with the causal alignment the entry point resolved.
template <class Options>
CallOptions CallOptionsOf(const Options& o, CausalAlignment causal) {
  return {.causal = causal,
          .window = o.window,
          .scale = o.scale,
          .softcap = o.softcap,
          .attn_mask = o.attn_mask,
          .attn_mask_shape = o.attn_mask_shape,
          .bool_mask = o.bool_mask,
          .bool_mask_shape = o.bool_mask_shape,
          .key_padding_mask = o.key_padding_mask,
          .kv_lengths = o.kv_lengths,
          .query_offset = o.query_offset,
          .scores_stage = o.scores_stage};
}

// The (batch, head) dimensions a mask has, 1 where it broadcasts, and its
// keys (Tk, or fewer: the keys past them are masked).
struct MaskDims {
  size_t batch = 1, heads = 1, keys = 0;
  // Offset of (b, h)'s [Tq, keys] slice.
  size_t Offset(size_t b, size_t h, size_t tq) const {
    return ((batch > 1 ? b : 0) * heads + (heads > 1 ? h : 0)) * tq * keys;
  }
};

class AttentionCall {
 public:
  // Throws std::invalid_argument, naming the option, for a scale or softcap
  // float32 cannot hold, a window bound below -1, a mask whose shape does not
  // broadcast to [batch, heads, tq, tk] (its last dimension may be shorter)
  // or whose length does not match it, a non-finite additive mask value, a
  // valid length above tk, or query offsets neither 1 nor batch many, or
  // given with neither the causal mask nor a window to place.
  AttentionCall(const ArgNames& names, const CallOptions& options, size_t batch, size_t heads,
                size_t tq, size_t tk, size_t head_dim);
  AttentionCall(const AttentionCall&) = delete;  // key_padding_ may view key_valid_
  AttentionCall& operator=(const AttentionCall&) = delete;
  AttentionCall(AttentionCall&&) = default;  // a moved vector keeps its buffer

  float scale() const { return scale_; }
  // Throws std::range_error if scores of queries and keys of at most these
  // magnitudes could overflow float32; `too_large` names what to scale down.
  void CheckScoreRange(double max_abs_q, double max_abs_k, const char* too_large) const;
  // One head's estimated time on one thread (ns) for the cost models: 4 tq
  // keys d FLOPs at ~40 GFLOP/s and its keys' and values' 2 keys d floats at
  // ~20 GB/s, keys the most any query sees.
  double HeadNs(size_t d) const;
  // Sets the queries and keys (tq, tk), bounds, masks, scale and softcap of
  // the kernel's work item for batch item b, head h and queries [q0, q1).
  void Set(AttentionArgs& a, size_t b, size_t h, size_t q0, size_t q1) const;

 private:
  size_t tq_, tk_, head_dim_;
  float scale_;
  float softcap_;
  CausalAlignment causal_;
  ptrdiff_t left_, right_;  // window bounds, clamped to tq + tk; -1 = none
  // The position of query 0 among the keys: one for every batch item, or
  // one each (clamped to +-(tq + tk) where used). Empty: the alignment's.
  std::span<const int64_t> query_offset_;
  ScoresStage scores_stage_;
  size_t masked_from_;  // the masks' keys: Tk, or fewer
  std::span<const float> attn_mask_;
  MaskDims attn_dims_;
  std::span<const uint8_t> bool_mask_;
  MaskDims bool_dims_;
  // [batch, tk], nonzero = real key: the caller's key padding mask, or
  // key_valid_ when valid lengths were given (merged with that mask), so
  // that fully padded key blocks are skipped either way.
  std::span<const uint8_t> key_padding_;
  std::vector<uint8_t> key_valid_;
};

}  // namespace simd_attention
