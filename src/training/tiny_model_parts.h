// TinyTransformer's private parts, shared by its forward (tiny_model.cc) and
// backward (tiny_model_backward.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "simd_attention/tiny_model.h"

namespace simd_attention {

// The sublayers of each layer (a TransformerBlock): the attention, then the
// FFN when ffn_dim > 0.
inline constexpr size_t kAttentionSublayer = 0, kFfnSublayer = 1;

struct TinyTransformer::Training {
  bool ready = false;          // a training forward since the last step
  bool has_gradients = false;  // a Backward since the last Reset or SetWeights
  size_t rows = 0;             // batch * tokens_per_row of that forward
  size_t tokens_per_row = 0;
  std::vector<int32_t> tokens;
  std::vector<float> x;         // [rows, d_model]: what the unembedding took
  std::vector<float> d_logits;  // [rows, vocab]: dL/dlogits of the mean cross-entropy
  PackedMatrix unembedding_t;   // U^T packed by Backward; empty once U changed
  std::vector<float> d_embedding;                        // [vocab, d_model]
  std::vector<float> d_unembedding, d_unembedding_bias;  // packed as U and c
  std::vector<float> d_unembedding_rows;  // [d_model + 1, vocab]: dU, then dc
  // Each layer's last Backward's gradients, kept for Gradients() (and
  // reused: a training loop allocates nothing per step).
  std::vector<BlockGradients> layer_gradients;
  std::vector<float> dx, weight_workspace;
};

}  // namespace simd_attention
