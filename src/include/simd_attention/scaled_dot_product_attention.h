// The public C++ API: attention on heads that are already projected,
// softmax(cap(scale * q k^T) + masks) v, as PyTorch's
// scaled_dot_product_attention and ONNX's Attention operator compute it, on
// the kernels of MultiHeadAttention (online softmax, skipped blocks).
//
// Grouped-query attention: k and v may have fewer heads than q (Hkv divides
// Hq); query head h reads key/value head h / (Hq / Hkv), in place: keys and
// values are never copied per query head.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "simd_attention/arg_names.h"
#include "simd_attention/backend.h"
#include "simd_attention/causal_alignment.h"
#include "simd_attention/scores_stage.h"

namespace simd_attention {

class ThreadPool;
struct KernelTable;

// How q, k, v and the output lay out their heads in memory.
enum class HeadLayout {
  kHeadMajor,   // [batch, heads, tokens, head_dim] (PyTorch, ONNX 4-D)
  kTokenMajor,  // [batch, tokens, heads * head_dim] (ONNX 3-D, projections'
                // output): head h owns features h*head_dim .. (h+1)*head_dim-1
};

// q, k or v: `data` holds batch * heads * tokens * head_dim floats in the
// options' layout.
struct HeadsTensor {
  std::span<const float> data;
  size_t batch = 0;
  size_t heads = 0;
  size_t tokens = 0;
  size_t head_dim = 0;
};

// A token-major [batch, tokens, features] tensor as `heads` heads of
// features / heads each; throws std::invalid_argument naming `heads_name`
// unless heads > 0 divides features.
HeadsTensor SplitHeads(std::span<const float> data, size_t batch, size_t tokens,
                       size_t features, size_t heads, const char* what,
                       const char* heads_name);

struct SdpaOptions {
  HeadLayout layout = HeadLayout::kHeadMajor;
  CausalAlignment causal = CausalAlignment::kNone;
  // Multiplies q . k; default 1 / sqrt(head_dim). Finite, as float32 holds it.
  std::optional<double> scale;
  // c > 0: scores become c * tanh(scores / c) after the scale, before the
  // masks (Gemma 2's logit soft-capping); none by default.
  std::optional<double> softcap;
  // [left, right]: key j is visible to query i iff
  // i' - left <= j <= i' + right, with i' = i (kNone, kTopLeft) or
  // i + Tk - Tq (kBottomRight); -1 = unbounded on that side. Keys outside
  // the window are never computed: a window of w keys costs O(Tq w).
  std::array<int64_t, 2> window{-1, -1};
  // The position of query 0 among the keys, so that query i sits at
  // i' = query_offset + i for the causal mask (j <= i') and the window:
  // one value for every batch item or one per item (B), any sign (a query
  // with i' < 0 sees no key). It replaces the alignment's i'. ONNX
  // Attention's is_causal uses past_sequence_length with a past cache and
  // nonpad_kv_seqlen[b] - Tq with nonpad_kv_seqlen. Needs causal or a
  // window; empty = the alignment's.
  std::span<const int64_t> query_offset;
  // Masks broadcast to [B, Hq, Tq, Tk] from a shape of [Tq, Tk],
  // [B, 1, Tq, Tk], [1, Hq, Tq, Tk] or [B, Hq, Tq, Tk] (an empty shape
  // means [Tq, Tk]); a shape's last dimension may be less than Tk, and the
  // keys past it are masked (as ONNX pads such a mask with -inf). attn_mask
  // is added to the scores (may hold -inf); bool_mask: 1 = may attend,
  // 0 = masked.
  std::span<const float> attn_mask;
  std::vector<size_t> attn_mask_shape;
  std::span<const uint8_t> bool_mask;
  std::vector<size_t> bool_mask_shape;
  // Key padding: [B, Tk], nonzero = real token; or the number of real keys
  // of each batch item, kv_lengths [B] (keys j >= kv_lengths[b] masked).
  std::span<const uint8_t> key_padding_mask;
  std::span<const size_t> kv_lengths;
  bool need_weights = false;  // fill SdpaResult::attn_weights
  bool need_scores = false;   // fill SdpaResult::scores, at scores_stage
  ScoresStage scores_stage = ScoresStage::kMasked;
};

// Every mask combines: a key is attended only if every mask allows it. A
// query row with no visible key gets zero probabilities and a zero output.
struct SdpaResult {
  size_t batch = 0, heads = 0, tq = 0, tk = 0, head_dim_v = 0;
  // [B, Hq, Tq, dv] (head-major) or [B, Tq, Hq * dv] (token-major).
  std::vector<float> output;
  std::vector<float> attn_weights;  // [B, Hq, Tq, Tk], if requested
  // [B, Hq, Tq, Tk], if requested, at options.scores_stage: by default the
  // scaled, capped and masked scores the softmax takes (-inf where masked).
  std::vector<float> scores;
};

struct SdpaConfig {
  Backend backend = Backend::kHighway;
  // Threads a call runs on, the caller's included; 0 = every logical
  // processor. Results are bit-identical for every count.
  size_t threads = 1;
  // How error messages name arguments; nullptr = CppArgNames().
  const ArgNames* names = nullptr;
};

class ScaledDotProductAttention {
 public:
  explicit ScaledDotProductAttention(const SdpaConfig& config = {});
  // On the given kernels (one target of one backend) and, if not null, pool.
  ScaledDotProductAttention(const SdpaConfig& config, const KernelTable& kernels,
                            std::shared_ptr<ThreadPool> pool = nullptr);

  // q [B, Hq, Tq, d], k [B, Hkv, Tk, d], v [B, Hkv, Tk, dv] (or token-major).
  // Throws std::invalid_argument naming the argument, the expected and the
  // given value; SizeLimitError for sizes that cannot be allocated;
  // std::range_error if the scores could overflow float32, or an output
  // (a weighted mean of v, finite unless v is near float32's largest)
  // rounds past it.
  SdpaResult Forward(const HeadsTensor& q, const HeadsTensor& k, const HeadsTensor& v,
                     const SdpaOptions& options = {});

  const SdpaConfig& config() const { return config_; }
  const KernelTable& kernels() const { return *kernels_; }

 private:
  SdpaConfig config_;  // threads and names resolved
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<float> workspace_;  // padded heads, padded output, scratch; grows
};

}  // namespace simd_attention
