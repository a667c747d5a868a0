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
#include "training/gradients.h"
#include "simd_attention/transformer_layers.h"
#include "threading/parallel.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

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

void CheckDOutput(bool trained, const ArgNames& names, const Tensor3& d_output, size_t batch,
                  size_t tokens, size_t d_model) {
  if (!trained) ThrowNoTrainingForward();
  CheckOutputGradient(names.d_output, d_output, batch, tokens, d_model);
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
  const float* g2 = WeightGradients(*pool_, *kernels_, t.weight_workspace, record.hidden.data(), rows,
                                    ffn_dim_, true, d_out, d_model_);
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
  const float* g1 = WeightGradients(*pool_, *kernels_, t.weight_workspace, record.input.data(), rows,
                                    d_model_, true, t.d_hidden.data(), ffn_dim_);
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

void LayerNorm::Backward(const float* x, size_t rows, const float* d_out, float* d_x,
                         NormGradients& g) {
  const size_t n = rows * d_model_;
  if (training_ == nullptr) training_ = MakeTrainingOnly<Training>();
  Training& t = *training_;
  if (t.dy_xhat.size() < n) t.dy_xhat.resize(n);
  // Rows are independent; ~1.5 ns an element over its three passes.
  const size_t tasks = TaskCount(*pool_, 1.5 * double(n), rows);
  const TrainingKernels& training = TrainingKernelsFor(*kernels_);
  ParallelRanges(*pool_, rows, tasks, [&](size_t begin, size_t end) {
    const size_t at = begin * d_model_;
    training.layer_norm_backward(x + at, end - begin, d_model_, gamma_.data(), eps_, d_out + at,
                                  d_x + at, t.dy_xhat.data() + at);
  });
  t.d_gamma.resize(d_model_);
  t.d_beta.resize(d_model_);
  ColumnSums(*pool_, *kernels_, t.dy_xhat.data(), rows, d_model_, t.d_gamma.data());
  ColumnSums(*pool_, *kernels_, d_out, rows, d_model_, t.d_beta.data());
  g.d_gamma.assign(t.d_gamma.begin(), t.d_gamma.end());
  g.d_beta.assign(t.d_beta.begin(), t.d_beta.end());
}

void LayerNorm::TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) {
  if (training_ == nullptr || training_->d_gamma.empty()) {
    ThrowNoGradients();
  }
  out.push_back({gamma_.data(), training_->d_gamma.data(), gamma_.size(), Cat({prefix, "gamma"})});
  out.push_back({beta_.data(), training_->d_beta.data(), beta_.size(), Cat({prefix, "beta"})});
}

EncoderGradients TransformerEncoderLayer::Backward(const Tensor3& d_output) {
  EncoderGradients g;
  Backward(d_output, g);
  return g;
}

void TransformerEncoderLayer::Backward(const Tensor3& d_output, EncoderGradients& g) {
  const LayerConfig& c = config_;
  CheckDOutput(trained_, *c.names, d_output, batch_, tokens_, c.d_model);
  const size_t rows = batch_ * tokens_;
  LayerBackward(c.norm_first, rows, attention_.pool(), attention_.kernels(), d_output.data,
                {{norm1_, norm1_input_, g.norm1,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    attention_.Backward({dy, batch_, tokens_, c.d_model}, g.attention);
                    dx.assign(g.attention.d_input.begin(), g.attention.d_input.end());
                  }},
                 {norm2_, norm2_input_, g.norm2,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    ffn_.Backward(ffn_record_, dy.data(), rows, dx.data(), g.ffn);
                  }}},
                g.d_input);
  CheckComputed("the gradients", g.d_input, kGradientTooLarge);
}

void TransformerEncoderLayer::TrainableParameters(std::vector<Parameter>& out,
                                                  std::string_view prefix) {
  attention_.TrainableParameters(out, Cat({prefix, "attention."}));
  ffn_.TrainableParameters(out, Cat({prefix, "ffn."}));
  norm1_.TrainableParameters(out, Cat({prefix, "norm1."}));
  norm2_.TrainableParameters(out, Cat({prefix, "norm2."}));
}

void TransformerEncoderLayer::ParametersUpdated() {
  attention_.ParametersUpdated();
  ffn_.WeightsUpdated();
  trained_ = false;
}

DecoderGradients TransformerDecoderLayer::Backward(const Tensor3& d_output) {
  DecoderGradients g;
  Backward(d_output, g);
  return g;
}

void TransformerDecoderLayer::Backward(const Tensor3& d_output, DecoderGradients& g) {
  const LayerConfig& c = config_;
  CheckDOutput(trained_, *c.names, d_output, batch_, tokens_, c.d_model);
  const size_t rows = batch_ * tokens_;
  ThreadPool& pool = self_attention_.pool();
  const KernelTable& k = self_attention_.kernels();
  LayerBackward(c.norm_first, rows, pool, k, d_output.data,
                {{norm1_, norm1_input_, g.norm1,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    self_attention_.Backward({dy, batch_, tokens_, c.d_model}, g.self_attention);
                    dx.assign(g.self_attention.d_input.begin(), g.self_attention.d_input.end());
                  }},
                 {norm2_, norm2_input_, g.norm2,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    MhaGradients& a = g.cross_attention;
                    cross_attention_.Backward({dy, batch_, tokens_, c.d_model}, a);
                    dx.assign(a.d_query.begin(), a.d_query.end());
                    g.d_memory.resize(a.d_key.size());
                    Sum(pool, k, a.d_key.data(), a.d_value.data(), a.d_key.size(),
                        g.d_memory.data());
                  }},
                 {norm3_, norm3_input_, g.norm3,
                  [&](const std::vector<float>& dy, std::vector<float>& dx) {
                    ffn_.Backward(ffn_record_, dy.data(), rows, dx.data(), g.ffn);
                  }}},
                g.d_input);
  CheckComputed("the gradients", g.d_input, kGradientTooLarge);
  CheckComputed("the gradients", g.d_memory, kGradientTooLarge);
}

void TransformerDecoderLayer::TrainableParameters(std::vector<Parameter>& out,
                                                  std::string_view prefix) {
  const ArgNames& n = *config_.names;
  self_attention_.TrainableParameters(out, Cat({prefix, n.self_attention, "."}));
  cross_attention_.TrainableParameters(out, Cat({prefix, n.cross_attention, "."}));
  ffn_.TrainableParameters(out, Cat({prefix, "ffn."}));
  norm1_.TrainableParameters(out, Cat({prefix, "norm1."}));
  norm2_.TrainableParameters(out, Cat({prefix, "norm2."}));
  norm3_.TrainableParameters(out, Cat({prefix, "norm3."}));
}

void TransformerDecoderLayer::ParametersUpdated() {
  self_attention_.ParametersUpdated();
  cross_attention_.ParametersUpdated();
  ffn_.WeightsUpdated();
  trained_ = false;
}

}  // namespace simd_attention
