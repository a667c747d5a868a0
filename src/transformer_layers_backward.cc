// The layers' backward passes, given dL/d(output) after a training forward:
//   FFN, H = act(A), A = X W1 + b1, Y = H W2 + b2:
//     dW2, db2 = [H^T; 1^T] dY,  dH = dY W2^T,  dA = dH * act'(A),
//     dW1, db1 = [X^T; 1^T] dA,  dX = dA W1^T
//   LayerNorm: the kernels' layer_norm_backward per row; d_gamma and d_beta
//     are column sums of d_y * xhat and d_y
//   a residual sublayer f:
//     post-LN, y = LN(s), s = x + f(x):  ds = LN'(s) dy,  dx = ds + f'(x) ds
//     pre-LN,  y = x + f(LN(x)):         dx = dy + LN'(x) (f'(LN(x)) dy)
// Products through the GEMM kernels (W^T packed once per weight change),
// element-wise parts through the kernel table, each split so that the
// result does not depend on the threads.
#include <functional>
#include <initializer_list>
#include <iterator>
#include <stdexcept>

#include "dispatch/dispatch.h"
#include "gradients.h"
#include "parameters.h"
#include "simd_attention/transformer_layers.h"
#include "threading/parallel.h"
#include "validate.h"

namespace simd_attention {
namespace {

constexpr char kGradientTooLarge[] = "d_output or the inputs or weights are too large in magnitude";

// out = a + b, split across the pool (element-wise: any split is exact).
void Sum(ThreadPool& pool, const KernelTable& k, const float* a, const float* b, size_t n,
         float* out) {
  ParallelElementwise(pool, n, 0.1, [&](size_t begin, size_t end) {
    k.add(a + begin, b + begin, end - begin, out + begin);
  });
}

// One residual sublayer f of a layer, for the backward: its LayerNorm and
// what that took in the forward, and f's backward, which writes dx at f's
// input given dy at its output.
struct SublayerParts {
  LayerNorm& norm;
  const std::vector<float>& norm_input;
  NormGradients& gradients;
  std::function<void(const std::vector<float>& dy, std::vector<float>& dx)> backward;
};

// d = the gradient at the layer's input, given d_output, through the
// sublayers (in forward order) in reverse.
void LayerBackward(bool norm_first, size_t rows, ThreadPool& pool, const KernelTable& k,
                   std::span<const float> d_output, std::initializer_list<SublayerParts> sublayers,
                   std::vector<float>& d) {
  d.assign(d_output.begin(), d_output.end());
  std::vector<float> a(d.size()), b(d.size());
  for (auto s = std::rbegin(sublayers); s != std::rend(sublayers); ++s) {
    if (norm_first) {
      s->backward(d, a);
      s->norm.Backward(s->norm_input.data(), rows, a.data(), b.data(), s->gradients);
      Sum(pool, k, d.data(), b.data(), d.size(), d.data());
    } else {
      s->norm.Backward(s->norm_input.data(), rows, d.data(), a.data(), s->gradients);
      s->backward(a, b);
      Sum(pool, k, a.data(), b.data(), d.size(), d.data());
    }
  }
}

void CheckDOutput(bool trained, const char* layer, std::span<const float> d_output,
                  size_t batch, size_t tokens, size_t d_model) {
  if (!trained) {
    throw std::logic_error(Cat({layer, "::Backward: expected a training forward (options.training "
                                       "= true) since the last SetWeights or forward, got none"}));
  }
  CheckLength("d_output", d_output.size(), {batch, tokens, d_model});
  CheckFinite("d_output", d_output);
}

}  // namespace

void FeedForward::Backward(const float* d_out, size_t rows, float* d_x, FfnGradients& g) {
  if (w1_t_.empty()) {
    w1_t_ = PackTransposed(*kernels_, w1_);
    w2_t_ = PackTransposed(*kernels_, w2_);
  }
  has_gradients_ = false;  // until this one is complete
  const size_t hidden = rows * ffn_dim_;
  const float* g2 = WeightGradients(*pool_, *kernels_, weight_workspace_, hidden_.data(), rows,
                                    ffn_dim_, true, d_out, d_model_);
  PackGradient(*kernels_, g2, ffn_dim_, d_model_, true, d_w2_, d_b2_);
  g.d_w2.assign(g2, g2 + ffn_dim_ * d_model_);
  g.d_b2.assign(g2 + ffn_dim_ * d_model_, g2 + (ffn_dim_ + 1) * d_model_);
  if (d_hidden_.size() < hidden) d_hidden_.resize(hidden);
  ParallelMultiplyPacked(*pool_, *kernels_, d_out, rows, w2_t_, d_hidden_.data(), ffn_dim_);
  const TrainingKernels& training = TrainingKernelsFor(*kernels_);
  ParallelElementwise(*pool_, hidden, 1.0, [&](size_t begin, size_t end) {
    training.activation_backward(activation_, pre_activation_.data() + begin,
                                  d_hidden_.data() + begin, end - begin, d_hidden_.data() + begin);
  });
  const float* g1 = WeightGradients(*pool_, *kernels_, weight_workspace_, input_.data(), rows,
                                    d_model_, true, d_hidden_.data(), ffn_dim_);
  PackGradient(*kernels_, g1, d_model_, ffn_dim_, true, d_w1_, d_b1_);
  g.d_w1.assign(g1, g1 + d_model_ * ffn_dim_);
  g.d_b1.assign(g1 + d_model_ * ffn_dim_, g1 + (d_model_ + 1) * ffn_dim_);
  ParallelMultiplyPacked(*pool_, *kernels_, d_hidden_.data(), rows, w1_t_, d_x, d_model_);
  has_gradients_ = true;
}

void FeedForward::TrainableParameters(std::vector<Parameter>& out) {
  if (!has_gradients_) {
    throw std::logic_error(
        "FeedForward: an optimizer step expects a Backward since the last SetWeights, got none");
  }
  for (auto [w, g] : {std::pair{&w1_.w, &d_w1_}, {&w1_.bias, &d_b1_}, {&w2_.w, &d_w2_},
                      {&w2_.bias, &d_b2_}}) {
    out.push_back({w->data(), g->data(), w->size()});
  }
}

void FeedForward::WeightsUpdated() {
  w1_t_ = {};
  w2_t_ = {};
  input_.clear();
  pre_activation_.clear();
}

void LayerNorm::Backward(const float* x, size_t rows, const float* d_out, float* d_x,
                         NormGradients& g) {
  const size_t n = rows * d_model_;
  if (dy_xhat_.size() < n) dy_xhat_.resize(n);
  // Rows are independent; ~1.5 ns an element over its three passes.
  const size_t tasks = TaskCount(*pool_, 1.5 * double(n), rows);
  const TrainingKernels& training = TrainingKernelsFor(*kernels_);
  ParallelRanges(*pool_, rows, tasks, [&](size_t begin, size_t end) {
    const size_t at = begin * d_model_;
    training.layer_norm_backward(x + at, end - begin, d_model_, gamma_.data(), eps_, d_out + at,
                                  d_x + at, dy_xhat_.data() + at);
  });
  d_gamma_.resize(d_model_);
  d_beta_.resize(d_model_);
  ColumnSums(*pool_, *kernels_, dy_xhat_.data(), rows, d_model_, d_gamma_.data());
  ColumnSums(*pool_, *kernels_, d_out, rows, d_model_, d_beta_.data());
  g.d_gamma.assign(d_gamma_.begin(), d_gamma_.end());
  g.d_beta.assign(d_beta_.begin(), d_beta_.end());
}

void LayerNorm::TrainableParameters(std::vector<Parameter>& out) {
  if (d_gamma_.empty()) {
    throw std::logic_error(
        "LayerNorm: an optimizer step expects a Backward since the last SetWeights, got none");
  }
  out.push_back({gamma_.data(), d_gamma_.data(), gamma_.size()});
  out.push_back({beta_.data(), d_beta_.data(), beta_.size()});
}

EncoderGradients TransformerEncoderLayer::Backward(std::span<const float> d_output) {
  EncoderGradients g;
  Backward(d_output, g);
  return g;
}

void TransformerEncoderLayer::Backward(std::span<const float> d_output, EncoderGradients& g) {
  const LayerConfig& c = config_;
  CheckDOutput(trained_, "TransformerEncoderLayer", d_output, batch_, tokens_, c.d_model);
  const size_t rows = batch_ * tokens_;
  LayerBackward(c.norm_first, rows, attention_.pool(), attention_.kernels(), d_output,
                {{norm1_, norm1_input_, g.norm1,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    attention_.Backward(dy, g.attention);
                    dx.assign(g.attention.d_input.begin(), g.attention.d_input.end());
                  }},
                 {norm2_, norm2_input_, g.norm2,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    ffn_.Backward(dy.data(), rows, dx.data(), g.ffn);
                  }}},
                g.d_input);
  CheckComputed("the gradients", g.d_input, kGradientTooLarge);
}

DecoderGradients TransformerDecoderLayer::Backward(std::span<const float> d_output) {
  DecoderGradients g;
  Backward(d_output, g);
  return g;
}

void TransformerDecoderLayer::Backward(std::span<const float> d_output, DecoderGradients& g) {
  const LayerConfig& c = config_;
  CheckDOutput(trained_, "TransformerDecoderLayer", d_output, batch_, tokens_, c.d_model);
  const size_t rows = batch_ * tokens_;
  ThreadPool& pool = self_attention_.pool();
  const KernelTable& k = self_attention_.kernels();
  LayerBackward(c.norm_first, rows, pool, k, d_output,
                {{norm1_, norm1_input_, g.norm1,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    self_attention_.Backward(dy, g.self_attention);
                    dx.assign(g.self_attention.d_input.begin(), g.self_attention.d_input.end());
                  }},
                 {norm2_, norm2_input_, g.norm2,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    MhaGradients& a = g.cross_attention;
                    cross_attention_.Backward(dy, a);
                    dx.assign(a.d_query.begin(), a.d_query.end());
                    g.d_memory.resize(a.d_key.size());
                    Sum(pool, k, a.d_key.data(), a.d_value.data(), a.d_key.size(),
                        g.d_memory.data());
                  }},
                 {norm3_, norm3_input_, g.norm3,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    ffn_.Backward(dy.data(), rows, dx.data(), g.ffn);
                  }}},
                g.d_input);
  CheckComputed("the gradients", g.d_input, kGradientTooLarge);
  CheckComputed("the gradients", g.d_memory, kGradientTooLarge);
}

}  // namespace simd_attention
