// TinyTransformer's backward: the gradients of the mean cross-entropy of
// the last training forward, from dL/dlogits (kept by the forward) down to
// the embedding:
//   dU, dc = [x^T; 1^T] dlogits,  dx = dlogits U^T       (one GEMM each)
//   per layer in reverse: its block's backward (dx += FFN'(dx); dx += MHA'(dx))
//   dE[token] += dx row by row, in order
// and what an optimizer step needs of it.
#include <stdexcept>
#include <string>

#include "training/gradients.h"
#include "simd_attention/tiny_model.h"
#include "threading/parallel.h"
#include "training/tiny_model_parts.h"
#include "checks/validate.h"

namespace simd_attention {

void TinyTransformer::Backward() {
  if (training_ == nullptr || !training_->ready) {
    ThrowNoTrainingForward();
  }
  Training& t = *training_;
  const size_t d = config_.d_model, v = config_.vocab, rows = t.rows;
  t.has_gradients = false;  // until this one is complete
  if (t.unembedding_t.empty()) t.unembedding_t = PackTransposed(*kernels_, unembedding_);
  const float* u = WeightGradients(*pool_, *kernels_, t.weight_workspace, t.x.data(), rows, d,
                                   true, t.d_logits.data(), v);
  PackGradient(*kernels_, u, d, v, true, t.d_unembedding, t.d_unembedding_bias);
  t.d_unembedding_rows.assign(u, u + (d + 1) * v);
  Sized(t.dx, rows * d);
  ParallelMultiplyPacked(*pool_, *kernels_, t.d_logits.data(), rows, t.unembedding_t,
                         t.dx.data(), d);
  t.layer_gradients.resize(layers_.size());
  for (size_t l = layers_.size(); l-- > 0;) {
    BlockGradients& g = t.layer_gradients[l];
    layers_[l].Backward({t.dx, rows / t.tokens_per_row, t.tokens_per_row, d}, g);
    t.dx.swap(g.d_input);
  }
  // Rows in order: a token's sum has one order whatever the threads.
  t.d_embedding.assign(v * d, 0.0f);
  for (size_t r = 0; r < rows; ++r) {
    float* row = t.d_embedding.data() + size_t(t.tokens[r]) * d;
    kernels_->add(row, t.dx.data() + r * d, d, row);
  }
  t.has_gradients = true;
}

TinyModelWeights TinyTransformer::Gradients() const {
  if (training_ == nullptr || !training_->has_gradients) {
    ThrowNoGradients();
  }
  const Training& t = *training_;
  const size_t d = config_.d_model, v = config_.vocab;
  TinyModelWeights g;
  g.embedding = t.d_embedding;
  const FfnGradients none;
  for (const BlockGradients& layer : t.layer_gradients) {
    const MhaGradients& a = layer.sublayers[kAttentionSublayer].attention;
    const FfnGradients& f = config_.ffn_dim > 0 ? layer.sublayers[kFfnSublayer].ffn : none;
    g.layers.push_back({a.d_w_q, a.d_w_k, a.d_w_v, a.d_w_o, a.d_b_q, a.d_b_k, a.d_b_v, a.d_b_o,
                        f.d_w1, f.d_b1, f.d_w2, f.d_b2});
  }
  g.unembedding.assign(t.d_unembedding_rows.begin(), t.d_unembedding_rows.begin() + d * v);
  g.unembedding_bias.assign(t.d_unembedding_rows.begin() + d * v, t.d_unembedding_rows.end());
  return g;
}

void TinyTransformer::TrainableParameters(std::vector<Parameter>& out,
                                          std::string_view prefix) {
  if (training_ == nullptr || !training_->has_gradients) {
    ThrowNoGradients();
  }
  Training& t = *training_;
  // Named as SetWeights names them.
  out.push_back({embedding_.data(), t.d_embedding.data(), embedding_.size(),
                 Cat({prefix, "weights.embedding"})});
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].TrainableParameters(out, Cat({prefix, "weights.layers[", std::to_string(l), "]."}));
  }
  out.push_back({unembedding_.w.data(), t.d_unembedding.data(), unembedding_.w.size(),
                 Cat({prefix, "weights.unembedding"})});
  out.push_back({unembedding_.bias.data(), t.d_unembedding_bias.data(), unembedding_.bias.size(),
                 Cat({prefix, "weights.", config_.names->unembedding_bias})});
}

void TinyTransformer::ParametersUpdated() {
  for (TransformerBlock& layer : layers_) layer.ParametersUpdated();
  training_->unembedding_t = {};
  training_->ready = false;
}

}  // namespace simd_attention
