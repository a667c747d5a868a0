// The FFN's backward, and the encoder and decoder layers' through their
// block (training/transformer_block_backward.cc), given dL/d(output) after
// a training forward:
//   FFN, H = act(A), A = X W1 + b1, Y = H W2 + b2:
//     dW2, db2 = [H^T; 1^T] dY,  dH = dY W2^T,  dA = dH * act'(A),
//     dW1, db1 = [X^T; 1^T] dA,  dX = dA W1^T
// Products through the GEMM kernels (W^T packed once per weight change),
// the activation's derivative through the kernel table, each split so that
// the result does not depend on the threads.
#include <utility>

#include "checks/validate.h"
#include "dispatch/dispatch.h"
#include "simd_attention/transformer_block.h"
#include "simd_attention/transformer_layers.h"
#include "threading/parallel.h"
#include "training/gradients.h"

namespace simd_attention {
namespace {

// Runs the block's Backward over `sublayers` sublayers into the layer's
// gradients: `lend(b)` swaps each of the layer's vectors with the block's
// gradients `b` of the same part, before and after, so that a reused one
// keeps its storage.
template <class Lend>
void BlockBackward(TransformerBlock& block, const Tensor3& d_output, size_t sublayers,
                   const Lend& lend) {
  BlockGradients b;
  b.sublayers.resize(sublayers);
  lend(b);
  try {
    block.Backward(d_output, b);
  } catch (...) {
    lend(b);
    throw;
  }
  lend(b);
}

// A layer's Backward returning its gradients, through the one filling them.
template <class Gradients, class Layer>
Gradients NewGradients(Layer& layer, const Tensor3& d_output) {
  Gradients g;
  layer.Backward(d_output, g);
  return g;
}

}  // namespace

void FeedForward::Backward(const FfnRecord& record, const float* d_out, size_t rows,
                           float* d_x, FfnGradients& g) {
  if (training_ == nullptr) training_ = MakeTrainingOnly<Training>();
  Training& t = *training_;
  if (t.w1_t.empty()) {
    t.w1_t = PackTransposed(*kernels_, w1_);
    t.w2_t = PackTransposed(*kernels_, w2_);
  }
  t.has_gradients = false;  // until this one is complete
  const size_t hidden = rows * ffn_dim_;
  const float* g2 = WeightGradients(*pool_, *kernels_, t.weight_workspace, record.hidden.data(),
                                    rows, ffn_dim_, true, d_out, d_model_);
  PackGradient(*kernels_, g2, ffn_dim_, d_model_, true, t.d_w2, t.d_b2);
  g.d_w2.assign(g2, g2 + ffn_dim_ * d_model_);
  g.d_b2.assign(g2 + ffn_dim_ * d_model_, g2 + (ffn_dim_ + 1) * d_model_);
  if (t.d_hidden.size() < hidden) t.d_hidden.resize(hidden);
  ParallelMultiplyPacked(*pool_, *kernels_, d_out, rows, t.w2_t, t.d_hidden.data(), ffn_dim_);
  const TrainingKernels& training = TrainingKernelsFor(*kernels_);
  ParallelElementwise(*pool_, hidden, 1.0, [&](size_t begin, size_t end) {
    training.activation_backward(activation_, record.pre_activation.data() + begin,
                                 t.d_hidden.data() + begin, end - begin,
                                 t.d_hidden.data() + begin);
  });
  const float* g1 = WeightGradients(*pool_, *kernels_, t.weight_workspace, record.input.data(),
                                    rows, d_model_, true, t.d_hidden.data(), ffn_dim_);
  PackGradient(*kernels_, g1, d_model_, ffn_dim_, true, t.d_w1, t.d_b1);
  g.d_w1.assign(g1, g1 + d_model_ * ffn_dim_);
  g.d_b1.assign(g1 + d_model_ * ffn_dim_, g1 + (d_model_ + 1) * ffn_dim_);
  ParallelMultiplyPacked(*pool_, *kernels_, t.d_hidden.data(), rows, t.w1_t, d_x, d_model_);
  t.has_gradients = true;
}

void FeedForward::TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) {
  if (training_ == nullptr || !training_->has_gradients) {
    ThrowNoGradients();
  }
  Training& t = *training_;
  const char* names[] = {"w1", "b1", "w2", "b2"};
  const std::pair<std::vector<float>*, std::vector<float>*> values[] = {
      {&w1_.w, &t.d_w1}, {&w1_.bias, &t.d_b1}, {&w2_.w, &t.d_w2}, {&w2_.bias, &t.d_b2}};
  for (size_t i = 0; i < 4; ++i) {
    auto [w, g] = values[i];
    out.push_back({w->data(), g->data(), w->size(), Cat({prefix, names[i]})});
  }
}

void FeedForward::WeightsUpdated() {
  if (training_ == nullptr) return;
  training_->w1_t = {};
  training_->w2_t = {};
}

EncoderGradients TransformerEncoderLayer::Backward(const Tensor3& d_output) {
  return NewGradients<EncoderGradients>(*this, d_output);
}

void TransformerEncoderLayer::Backward(const Tensor3& d_output, EncoderGradients& g) {
  BlockBackward(*block_, d_output, 2, [&](BlockGradients& b) {
    std::swap(g.d_input, b.d_input);
    std::swap(g.attention, b.sublayers[0].attention);
    std::swap(g.norm1, b.sublayers[0].norm);
    std::swap(g.ffn, b.sublayers[1].ffn);
    std::swap(g.norm2, b.sublayers[1].norm);
  });
}

DecoderGradients TransformerDecoderLayer::Backward(const Tensor3& d_output) {
  return NewGradients<DecoderGradients>(*this, d_output);
}

void TransformerDecoderLayer::Backward(const Tensor3& d_output, DecoderGradients& g) {
  BlockBackward(*block_, d_output, 3, [&](BlockGradients& b) {
    std::swap(g.d_input, b.d_input);
    std::swap(g.d_memory, b.d_memory);
    std::swap(g.self_attention, b.sublayers[0].attention);
    std::swap(g.norm1, b.sublayers[0].norm);
    std::swap(g.cross_attention, b.sublayers[1].attention);
    std::swap(g.norm2, b.sublayers[1].norm);
    std::swap(g.ffn, b.sublayers[2].ffn);
    std::swap(g.norm3, b.sublayers[2].norm);
  });
}

}  // namespace simd_attention
