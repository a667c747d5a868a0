#include "simd_attention/transformer_layers.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "dispatch/dispatch.h"
#include "storage/packed_weights.h"
#include "layers/residual.h"
#include "simd_attention/thread_pool.h"
#include "threading/parallel.h"
#include "training/training_build.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

// The config's own checks (the attention checks d_model and num_heads), and
// its names resolved. Runs before any part is built from it.
LayerConfig Resolve(LayerConfig c) {
  if (c.names == nullptr) c.names = &CppArgNames();
  const ArgNames& n = *c.names;
  CheckPositive(ConfigName(n.ffn_dim), c.ffn_dim);
  CheckEps(ConfigName(n.eps), c.eps);
  CheckedCount("ffn.w1", {{n.d_model, c.d_model}, {n.ffn_dim, c.ffn_dim}});
  return c;
}

MhaConfig AttentionConfig(const LayerConfig& c) {
  MhaConfig m;
  m.d_model = c.d_model;
  m.num_heads = c.num_heads;
  m.backend = c.backend;
  m.threads = c.threads;
  m.names = c.names;
  m.num_kv_heads = c.num_kv_heads;
  m.rope = c.rope;
  m.weights = c.weights;
  m.cache_type = c.cache_type;
  return m;
}

// The decoder's cross-attention: the same heads, no rotary positions (the
// memory's keys have no positions relative to the decoder's queries).
MhaConfig CrossAttentionConfig(const LayerConfig& c) {
  MhaConfig m = AttentionConfig(c);
  m.rope = {};
  return m;
}

// The attention's messages name its weights "<part>.<weight>".
template <class F>
void InPart(const char* part, F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(part) + "." + e.what());
  }
}

// One residual sublayer on x [rows, d] in place, f mapping a [rows, d]
// input to its [rows, d] output:
//   post-LN (torch default): x = norm(x + f(x))
//   pre-LN:                  x = x + f(norm(x))
// with the sum checked before it goes on (AddResidual).
// saved (training): the LayerNorm's input, for the backward; never in a
// build without training.
template <class F>
void Residual(const char* name, bool norm_first, const LayerNorm& norm, ThreadPool& pool,
              const KernelTable& k, std::vector<float>& x, size_t rows, F&& f,
              std::vector<float>* saved) {
  if (norm_first) {
    if (kTrainingBuild && saved != nullptr) saved->assign(x.begin(), x.end());
    std::vector<float> normed(x.size());
    norm.Forward(x.data(), rows, normed.data());
    AddResidual(name, pool, k, x, f(normed));
  } else {
    AddResidual(name, pool, k, x, f(x));
    if (kTrainingBuild && saved != nullptr) saved->assign(x.begin(), x.end());
    norm.Forward(x.data(), rows, x.data());
  }
}

}  // namespace

FeedForward::FeedForward(size_t d_model, size_t ffn_dim, Activation activation,
                         const KernelTable& kernels, std::shared_ptr<ThreadPool> pool,
                         WeightType weights)
    : d_model_(d_model),
      ffn_dim_(ffn_dim),
      activation_(activation),
      kernels_(&kernels),
      pool_(std::move(pool)),
      weights_(weights) {}

FeedForward::FeedForward(size_t d_model, size_t ffn_dim, Activation activation,
                         const KernelTable& kernels)
    : FeedForward(d_model, ffn_dim, activation, kernels, SharedThreadPool(1)) {}

LayerNorm::LayerNorm(size_t d_model, float eps, const KernelTable& kernels,
                     std::shared_ptr<ThreadPool> pool)
    : LayerNorm(EpsChecked{}, d_model, (CheckEps("eps", eps), eps), kernels, std::move(pool)) {}

LayerNorm::LayerNorm(size_t d_model, float eps, const KernelTable& kernels)
    : LayerNorm(d_model, eps, kernels, SharedThreadPool(1)) {}

void FeedForward::SetWeights(const FfnWeights& w) {
  CheckLength("ffn.b1", w.b1.size(), {ffn_dim_});
  CheckLength("ffn.b2", w.b2.size(), {d_model_});
  CheckFinite("ffn.b1", w.b1);
  CheckFinite("ffn.b2", w.b2);
  const std::string config_name = ConfigName(CppArgNames().weights);
  const WeightValues w1 =
      ReadWeight("ffn.w1", w.w1, w.stored_w1, weights_, d_model_, ffn_dim_, config_name);
  const WeightValues w2 =
      ReadWeight("ffn.w2", w.w2, w.stored_w2, weights_, ffn_dim_, d_model_, config_name);
  w1_ = PackWeights(*kernels_, w1.values, w1.scales, w.b1, d_model_, ffn_dim_, weights_);
  w2_ = PackWeights(*kernels_, w2.values, w2.scales, w.b2, ffn_dim_, d_model_, weights_);
  // W^T, gradients and saved activations belonged to the old weights (a
  // build without training never makes them: only a training Forward does).
  if (kTrainingBuild) training_.reset();
}

void FeedForward::Forward(const float* x, size_t rows, float* out, FfnRecord* record) {
  if (w1_.empty()) throw std::logic_error("FeedForward: forward before SetWeights");
  const size_t hidden = CheckedCount("feed-forward hidden units",
                                     {{"batch * tokens", rows}, {"ffn_dim", ffn_dim_}});
  if (hidden_.size() < hidden) hidden_.resize(hidden);
  ParallelMultiplyPacked(*pool_, *kernels_, x, rows, w1_, hidden_.data(), ffn_dim_);
  const bool keep = kTrainingBuild && record != nullptr;  // never in a build without training
  if (keep) {
    record->input.assign(x, x + rows * d_model_);
    record->pre_activation.assign(hidden_.begin(), hidden_.begin() + hidden);
  }
  // The activation at ~0.5 ns an element (GELU's exp), element-wise.
  ParallelElementwise(*pool_, rows * ffn_dim_, 0.5, [&](size_t begin, size_t end) {
    kernels_->activation(activation_, hidden_.data() + begin, end - begin);
  });
  if (keep) record->hidden.assign(hidden_.begin(), hidden_.begin() + hidden);
  ParallelMultiplyPacked(*pool_, *kernels_, hidden_.data(), rows, w2_, out, d_model_);
}

void LayerNorm::SetWeights(const char* name, const NormWeights& w) {
  const std::string gamma = std::string(name) + ".gamma", beta = std::string(name) + ".beta";
  CheckLength(gamma.c_str(), w.gamma.size(), {d_model_});
  CheckLength(beta.c_str(), w.beta.size(), {d_model_});
  CheckFinite(gamma.c_str(), w.gamma);
  CheckFinite(beta.c_str(), w.beta);
  gamma_.assign(w.gamma.begin(), w.gamma.end());
  beta_.assign(w.beta.begin(), w.beta.end());
  training_.reset();  // the gradients belonged to the old weights
}

void LayerNorm::Forward(const float* x, size_t rows, float* out) const {
  if (gamma_.empty()) throw std::logic_error("LayerNorm: forward before SetWeights");
  CheckNormRange("the LayerNorm input", {x, rows * d_model_}, d_model_);
  // Rows are independent; ~0.5 ns an element over its two passes.
  const size_t tasks = TaskCount(*pool_, 0.5 * double(rows * d_model_), rows);
  ParallelRanges(*pool_, rows, tasks, [&](size_t begin, size_t end) {
    kernels_->layer_norm(x + begin * d_model_, end - begin, d_model_, gamma_.data(),
                         beta_.data(), eps_, out + begin * d_model_);
  });
}

std::vector<float> LayerNormForward(const Tensor3& x, const NormWeights& w,
                                    double eps, const KernelTable& kernels,
                                    const ArgNames& names) {
  const size_t d = x.features;
  CheckPositive("x.features", d);
  CheckLength("x", x.data.size(), {x.batch, x.tokens, d});
  CheckLength(names.layer_norm_gamma, w.gamma.size(), {d});
  CheckLength(names.layer_norm_beta, w.beta.size(), {d});
  CheckEps(names.layer_norm_eps, eps);
  CheckFinite("x", x.data);
  CheckFinite(names.layer_norm_gamma, w.gamma);
  CheckFinite(names.layer_norm_beta, w.beta);
  CheckNormRange("x", x.data, d);
  std::vector<float> out(x.data.size());
  if (!out.empty()) {
    kernels.layer_norm(x.data.data(), x.batch * x.tokens, d, w.gamma.data(), w.beta.data(),
                       static_cast<float>(eps), out.data());
  }
  return out;
}

TransformerEncoderLayer::TransformerEncoderLayer(const LayerConfig& config)
    : TransformerEncoderLayer(config, BestKernels(config.backend)) {}

TransformerEncoderLayer::TransformerEncoderLayer(const LayerConfig& config,
                                                 const KernelTable& kernels)
    : TransformerEncoderLayer(config, kernels, nullptr) {}

TransformerEncoderLayer::TransformerEncoderLayer(const LayerConfig& config,
                                                 const KernelTable& kernels,
                                                 std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)),
      attention_(AttentionConfig(config_), kernels, std::move(pool)),
      ffn_(config_.d_model, config_.ffn_dim, config_.activation, kernels,
           attention_.shared_pool(), config_.weights),
      norm1_(LayerNorm::EpsChecked{}, config_.d_model, float(config_.eps), kernels,
             attention_.shared_pool()),
      norm2_(LayerNorm::EpsChecked{}, config_.d_model, float(config_.eps), kernels,
             attention_.shared_pool()) {}

void TransformerEncoderLayer::SetWeights(const MhaWeights& attention,
                                         const FfnWeights& ffn,
                                         const NormWeights& norm1,
                                         const NormWeights& norm2) {
  // All or nothing: new parts are built aside and swapped in once every
  // weight has been accepted.
  MultiHeadAttention new_attention(attention_.config(), attention_.kernels(),
                                   attention_.shared_pool());
  InPart("attention", [&] { new_attention.SetWeights(attention); });
  FeedForward new_ffn(config_.d_model, config_.ffn_dim, config_.activation,
                      attention_.kernels(), attention_.shared_pool(), config_.weights);
  new_ffn.SetWeights(ffn);
  const auto new_norm = [&] {
    return LayerNorm(LayerNorm::EpsChecked{}, config_.d_model, float(config_.eps),
                     attention_.kernels(), attention_.shared_pool());
  };
  LayerNorm new_norm1 = new_norm(), new_norm2 = new_norm();
  new_norm1.SetWeights("norm1", norm1);
  new_norm2.SetWeights("norm2", norm2);
  attention_ = std::move(new_attention);
  ffn_ = std::move(new_ffn);
  norm1_ = std::move(new_norm1);
  norm2_ = std::move(new_norm2);
  if (kTrainingBuild) trained_ = false;
}

std::vector<float> TransformerEncoderLayer::Forward(const Tensor3& x,
                                                    const EncoderOptions& options) {
  const size_t rows = x.batch * x.tokens;
  CheckTensor("x", x, config_.d_model, config_.names->d_model);
  std::vector<float> h(x.data.begin(), x.data.end());
  const KernelTable& k = attention_.kernels();
  ThreadPool& pool = attention_.pool();
  MhaOptions mha = SelfAttentionMhaOptions(options.self_attention);
  mha.causal = options.causal;
  mha.causal_alignment = options.causal_alignment;
  mha.key_padding_mask = options.key_padding_mask;
  const bool t = TrainingRequested(options.training);
  mha.training = t;
  // What Backward reads; a build without training has no Backward.
  if (kTrainingBuild) trained_ = false;
  Residual("the self-attention sublayer", config_.norm_first, norm1_, pool, k, h, rows,
           [&](const std::vector<float>& in) {
             return attention_.Forward(Tensor3{in, x.batch, x.tokens, x.features}, mha).output;
           }, t ? &norm1_input_ : nullptr);
  Residual("the feed-forward sublayer", config_.norm_first, norm2_, pool, k, h, rows,
           [&](const std::vector<float>& in) {
    std::vector<float> out(in.size());
    ffn_.Forward(in.data(), rows, out.data(), t ? &ffn_record_ : nullptr);
    return out;
  }, t ? &norm2_input_ : nullptr);
  if (kTrainingBuild) {
    batch_ = x.batch;
    tokens_ = x.tokens;
    trained_ = t;
  }
  return h;
}

TransformerDecoderLayer::TransformerDecoderLayer(const LayerConfig& config)
    : TransformerDecoderLayer(config, BestKernels(config.backend)) {}

TransformerDecoderLayer::TransformerDecoderLayer(const LayerConfig& config,
                                                 const KernelTable& kernels)
    : TransformerDecoderLayer(config, kernels, nullptr) {}

TransformerDecoderLayer::TransformerDecoderLayer(const LayerConfig& config,
                                                 const KernelTable& kernels,
                                                 std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)),
      self_attention_(AttentionConfig(config_), kernels, std::move(pool)),
      cross_attention_(CrossAttentionConfig(config_), kernels, self_attention_.shared_pool()),
      ffn_(config_.d_model, config_.ffn_dim, config_.activation, kernels,
           self_attention_.shared_pool(), config_.weights),
      norm1_(LayerNorm::EpsChecked{}, config_.d_model, float(config_.eps), kernels,
             self_attention_.shared_pool()),
      norm2_(LayerNorm::EpsChecked{}, config_.d_model, float(config_.eps), kernels,
             self_attention_.shared_pool()),
      norm3_(LayerNorm::EpsChecked{}, config_.d_model, float(config_.eps), kernels,
             self_attention_.shared_pool()) {}

void TransformerDecoderLayer::SetWeights(const MhaWeights& self_attention,
                                         const MhaWeights& cross_attention,
                                         const FfnWeights& ffn,
                                         const NormWeights& norm1,
                                         const NormWeights& norm2,
                                         const NormWeights& norm3) {
  // All or nothing, as in the encoder.
  MultiHeadAttention new_self(self_attention_.config(), self_attention_.kernels(),
                              self_attention_.shared_pool());
  InPart(config_.names->self_attention, [&] { new_self.SetWeights(self_attention); });
  MultiHeadAttention new_cross(cross_attention_.config(), cross_attention_.kernels(),
                               cross_attention_.shared_pool());
  InPart(config_.names->cross_attention, [&] { new_cross.SetWeights(cross_attention); });
  FeedForward new_ffn(config_.d_model, config_.ffn_dim, config_.activation,
                      self_attention_.kernels(), self_attention_.shared_pool(),
                      config_.weights);
  new_ffn.SetWeights(ffn);
  const auto new_norm = [&] {
    return LayerNorm(LayerNorm::EpsChecked{}, config_.d_model, float(config_.eps),
                     self_attention_.kernels(), self_attention_.shared_pool());
  };
  LayerNorm new_norm1 = new_norm(), new_norm2 = new_norm(), new_norm3 = new_norm();
  new_norm1.SetWeights("norm1", norm1);
  new_norm2.SetWeights("norm2", norm2);
  new_norm3.SetWeights("norm3", norm3);
  self_attention_ = std::move(new_self);
  cross_attention_ = std::move(new_cross);
  ffn_ = std::move(new_ffn);
  norm1_ = std::move(new_norm1);
  norm2_ = std::move(new_norm2);
  norm3_ = std::move(new_norm3);
  if (kTrainingBuild) trained_ = false;
}

template <class SelfAttend, class CrossAttend>
std::vector<float> TransformerDecoderLayer::Run(const Tensor3& x,
                                                SelfAttend&& self_attend,
                                                CrossAttend&& cross_attend, bool training) {
  const size_t rows = x.batch * x.tokens;
  if (kTrainingBuild) trained_ = false;  // as the encoder's
  std::vector<float> h(x.data.begin(), x.data.end());
  const KernelTable& k = self_attention_.kernels();
  ThreadPool& pool = self_attention_.pool();
  auto view = [&](const std::vector<float>& in) {
    return Tensor3{in, x.batch, x.tokens, x.features};
  };
  Residual("the self-attention sublayer", config_.norm_first, norm1_, pool, k, h, rows,
           [&](const std::vector<float>& in) { return self_attend(view(in)); },
           training ? &norm1_input_ : nullptr);
  Residual("the cross-attention sublayer", config_.norm_first, norm2_, pool, k, h, rows,
           [&](const std::vector<float>& in) { return cross_attend(view(in)); },
           training ? &norm2_input_ : nullptr);
  Residual("the feed-forward sublayer", config_.norm_first, norm3_, pool, k, h, rows,
           [&](const std::vector<float>& in) {
    std::vector<float> out(in.size());
    ffn_.Forward(in.data(), rows, out.data(), training ? &ffn_record_ : nullptr);
    return out;
  }, training ? &norm3_input_ : nullptr);
  if (kTrainingBuild) {
    batch_ = x.batch;
    tokens_ = x.tokens;
    trained_ = training;
  }
  return h;
}

std::vector<float> TransformerDecoderLayer::Forward(const Tensor3& x,
                                                    const Tensor3& memory,
                                                    const DecoderOptions& options) {
  const ArgNames& n = *config_.names;
  // x is checked by the Forward below.
  CheckTensor("memory", memory, config_.d_model, n.d_model);
  CheckEqual("memory.batch", memory.batch, x.batch, "x.batch");
  if (!options.memory_key_padding_mask.empty()) {
    CheckLength(n.memory_key_padding_mask, options.memory_key_padding_mask.size(),
                {memory.batch, memory.tokens});
  }
  if (TrainingRequested(options.training)) {
    CheckTensor("x", x, config_.d_model, n.d_model);
    return ForwardOn(x, &memory, nullptr, options);
  }
  const PrecomputedKV kv =
      cross_attention_.PrecomputeKeyValue(memory, options.memory_key_padding_mask);
  return Forward(x, kv, options);
}

PrecomputedKV TransformerDecoderLayer::PrecomputeMemory(
    const Tensor3& memory, std::span<const uint8_t> key_padding_mask) {
  CheckTensor("memory", memory, config_.d_model, config_.names->d_model);
  return cross_attention_.PrecomputeKeyValue(memory, key_padding_mask);
}

std::vector<float> TransformerDecoderLayer::Forward(const Tensor3& x,
                                                    const PrecomputedKV& memory,
                                                    const DecoderOptions& options) {
  const ArgNames& n = *config_.names;
  if (TrainingRequested(options.training)) {
    throw std::invalid_argument(
        "options.training: a precomputed memory keeps no memory to differentiate, expected "
        "false, got true (train through Forward(x, memory))");
  }
  CheckTensor("x", x, config_.d_model, n.d_model);
  CheckEqual("x.batch", x.batch, memory.batch(), "batch of the precomputed memory");
  if (!options.memory_key_padding_mask.empty()) {
    CheckLength(n.memory_key_padding_mask, options.memory_key_padding_mask.size(),
                {memory.batch(), memory.tokens()});
  }
  return ForwardOn(x, nullptr, &memory, options);
}

std::vector<float> TransformerDecoderLayer::ForwardOn(const Tensor3& x, const Tensor3* memory,
                                                      const PrecomputedKV* kv,
                                                      const DecoderOptions& options) {
  // Only Forward(x, memory) trains; Forward(x, precomputed) refused it.
  const bool training = kTrainingBuild && options.training;
  MhaOptions self = SelfAttentionMhaOptions(options.self_attention);
  self.causal = options.causal;
  self.causal_alignment = options.causal_alignment;
  self.key_padding_mask = options.key_padding_mask;
  self.training = training;
  MhaOptions cross;
  cross.key_padding_mask = options.memory_key_padding_mask;
  cross.training = training;
  return Run(
      x, [&](const Tensor3& in) { return self_attention_.Forward(in, self).output; },
      [&](const Tensor3& in) {
        return (training ? cross_attention_.Forward(in, *memory, *memory, cross)
                         : cross_attention_.Forward(in, *kv, cross))
            .output;
      },
      training);
}

std::vector<float> TransformerDecoderLayer::ForwardIncremental(
    const Tensor3& x, KVCache& cache, const PrecomputedKV& memory,
    const SelfAttentionOptions& self_attention) {
  const MhaOptions self = SelfAttentionMhaOptions(self_attention);
  CheckTensor("x", x, config_.d_model, config_.names->d_model);
  CheckEqual("x.batch", x.batch, memory.batch(), "batch of the precomputed memory");
  // The self-attention adds x's tokens to the cache before the later
  // sublayers run; a step that fails after it takes them back out.
  const size_t length = cache.length();
  try {
    return Run(
        x,
        [&](const Tensor3& in) {
          return self_attention_.ForwardIncremental(in, cache, self).output;
        },
        [&](const Tensor3& in) { return cross_attention_.Forward(in, memory).output; });
  } catch (...) {
    cache.Truncate(length);
    throw;
  }
}

MhaOptions SelfAttentionMhaOptions(const SelfAttentionOptions& o) {
  MhaOptions mha;
  mha.window = o.window;
  mha.scale = o.scale;
  mha.softcap = o.softcap;
  mha.attn_mask = o.attn_mask;
  mha.attn_mask_shape = o.attn_mask_shape;
  mha.bool_mask = o.bool_mask;
  mha.bool_mask_shape = o.bool_mask_shape;
  mha.kv_lengths = o.kv_lengths;
  return mha;
}

std::vector<float> PositionalEncoding(size_t t, size_t d_model, const ArgNames& names) {
  CheckPositive("t", t);
  CheckPositive(names.d_model, d_model);
  std::vector<float> pe(CheckedCount("output", {{"t", t}, {names.d_model, d_model}}));
  for (size_t p = 0; p < t; ++p) {
    for (size_t i = 0; i < d_model; ++i) {
      const double rate = std::pow(10000.0, -double(i - i % 2) / double(d_model));
      const double angle = double(p) * rate;
      pe[p * d_model + i] = float(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return pe;
}

#if !SA_TRAINING
// A build without training links no backward and no optimizer, so nothing
// calls these; defined here, they keep the training code's out of the
// layers' vtables (a training build's are in
// training/transformer_layers_backward.cc).
void TransformerEncoderLayer::TrainableParameters(std::vector<Parameter>&, std::string_view) {
  RefuseTrainingInThisBuild();
}
void TransformerEncoderLayer::ParametersUpdated() {}
void TransformerDecoderLayer::TrainableParameters(std::vector<Parameter>&, std::string_view) {
  RefuseTrainingInThisBuild();
}
void TransformerDecoderLayer::ParametersUpdated() {}
#endif

}  // namespace simd_attention
