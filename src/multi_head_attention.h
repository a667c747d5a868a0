// The public C++ API: multi-head self- and cross-attention.
//
// Weights use the X @ W layout (rows = inputs), the transpose of
// torch.nn.Linear.weight. Head h owns columns h*d_k..(h+1)*d_k-1 of w_q and
// w_k, columns h*d_v.. of w_v and rows h*d_v.. of w_o.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backend.h"
#include "dispatch/kernel_table.h"

namespace simd_attention {

struct MhaConfig {
  size_t d_model = 0;
  size_t num_heads = 0;
  size_t kdim = 0;        // features of the keys; 0 = d_model
  size_t vdim = 0;        // features of the values; 0 = d_model
  size_t head_dim_v = 0;  // d_v; 0 = d_model / num_heads
  bool bias = true;
  Backend backend = Backend::kHighway;
};

// A read-only [batch, tokens, features] tensor, row-major.
struct Tensor3 {
  std::span<const float> data;
  size_t batch = 0;
  size_t tokens = 0;
  size_t features = 0;
};

struct MhaWeights {
  std::span<const float> w_q;  // [d_model, H * d_k]
  std::span<const float> w_k;  // [kdim, H * d_k]
  std::span<const float> w_v;  // [vdim, H * d_v]
  std::span<const float> w_o;  // [H * d_v, d_model]
  std::span<const float> b_q;  // [H * d_k]; all four empty when !bias
  std::span<const float> b_k;  // [H * d_k]
  std::span<const float> b_v;  // [H * d_v]
  std::span<const float> b_o;  // [d_model]
};

struct MhaOptions {
  // Query i attends to keys j <= i + (Tk - Tq): bottom-right aligned, as
  // when decoding with a cache.
  bool causal = false;
  std::span<const uint8_t> key_padding_mask;  // [B, Tk], nonzero = real token
  // Added to the scaled scores: [Tq, Tk] or [B, H, Tq, Tk]; may hold -inf.
  std::span<const float> attn_mask;
  bool need_weights = false;          // fill MhaResult::attn_weights
  bool need_per_head_output = false;  // fill MhaResult::per_head_output
};

// A query row whose every key is masked gets all-zero probabilities and a
// zero attention output (so its output row is b_o), never NaN.
struct MhaResult {
  size_t batch = 0, tq = 0, tk = 0;
  std::vector<float> output;           // [B, Tq, d_model]
  std::vector<float> attn_weights;     // [B, H, Tq, Tk], if requested
  std::vector<float> per_head_output;  // [B, H, Tq, d_model], if requested:
                                       // z_h W_O^h, output = sum_h + b_o
};

class MultiHeadAttention {
 public:
  // Throws std::invalid_argument for an invalid config (message names it).
  explicit MultiHeadAttention(const MhaConfig& config);
  // Runs on the given kernels (one target of one backend) instead of the
  // backend's best; for tests and benchmarks that compare targets.
  MultiHeadAttention(const MhaConfig& config, const KernelTable& kernels);

  // Copies and packs the weights; throws std::invalid_argument on a wrong
  // length or a non-finite value.
  void SetWeights(const MhaWeights& weights);

  MhaResult Forward(const Tensor3& x, const MhaOptions& options = {});
  MhaResult Forward(const Tensor3& query, const Tensor3& key,
                    const Tensor3& value, const MhaOptions& options = {});

  // The config with defaults resolved (kdim, vdim, head_dim_v filled in).
  const MhaConfig& config() const { return config_; }
  size_t head_dim() const { return config_.d_model / config_.num_heads; }
  size_t head_dim_v() const { return config_.head_dim_v; }
  const KernelTable& kernels() const { return *kernels_; }

 private:
  struct Packed {
    std::vector<float> w, bias;  // panels; bias padded to whole panels
    size_t rows = 0, cols = 0;
  };
  Packed PackProjection(std::span<const float> w, std::span<const float> b,
                        size_t rows, size_t head_in, size_t head_out) const;
  void Project(const Tensor3& x, const Packed& p, float* out);

  MhaConfig config_;
  const KernelTable* kernels_;
  size_t dk_pad_ = 0;  // head widths padded to whole vectors
  size_t dv_pad_ = 0;
  bool has_weights_ = false;
  Packed q_, k_, v_, o_;
  std::vector<float> workspace_;  // Q, K, V, Z and attention scratch; grows
};

}  // namespace simd_attention
