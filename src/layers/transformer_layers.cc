#include "simd_attention/transformer_layers.h"

#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "dispatch/dispatch.h"
#include "kernels/powers.h"
#include "kernels/sin_cos.h"
#include "storage/packed_weights.h"
#include "layers/residual.h"
#include "simd_attention/config_fields.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_block.h"
#include "threading/parallel.h"
#include "training/training_hooks.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

// The config's own checks (the block checks d_model and num_heads), and
// its names resolved. Runs before any part is built from it.
LayerConfig Resolve(LayerConfig c) {
  const ArgNames& n = ResolveNames(c);
  CheckPositive(ConfigName(n.ffn_dim), c.ffn_dim);
  CheckEps(ConfigName(n.eps), c.eps);
  CheckedCount("ffn.w1", {{n.d_model, c.d_model}, {n.ffn_dim, c.ffn_dim}});
  return c;
}

// The layer as a block of LayerNorm sublayers with `mixers`, named in
// messages as the layers have always named their parts.
BlockConfig LayerBlock(const LayerConfig& c, std::initializer_list<MixerKind> mixers) {
  BlockConfig b;
  CopySharedFields(c, b);
  b.norm = NormKind::kLayerNorm;
  for (MixerKind m : mixers) {
    b.sublayers.push_back({m, c.norm_first ? NormPlacement::kPre : NormPlacement::kPost});
  }
  return b;
}

// What a layer's LayerNorms name in their range checks, before or after
// the residual sum.
constexpr char kNormInput[] = "the LayerNorm input";

// The block's options of a layer's (EncoderOptions, DecoderOptions).
template <class LayerOptions>
BlockOptions ToBlock(const LayerOptions& o) {
  std::span<const uint8_t> memory_key_padding_mask;
  if constexpr (requires { o.memory_key_padding_mask; }) {
    memory_key_padding_mask = o.memory_key_padding_mask;
  }
  return {.causal = o.causal,
          .causal_alignment = o.causal_alignment,
          .key_padding_mask = o.key_padding_mask,
          .self_attention = o.self_attention,
          .memory_key_padding_mask = memory_key_padding_mask,
          .position_offset = 0,
          .attn_weights = nullptr,
          .training = o.training};
}

// A layer's sublayer: its norm's weights, and its mixer's, which `mixer`
// names the member of.
template <class MixerWeights>
SublayerWeights LayerSublayer(const NormWeights& norm, MixerWeights SublayerWeights::*mixer,
                              const MixerWeights& weights) {
  SublayerWeights s;
  s.norm = norm;
  s.*mixer = weights;
  return s;
}

}  // namespace

FeedForward::FeedForward(size_t d_model, size_t ffn_dim, Activation activation,
                         const KernelTable& kernels, std::shared_ptr<ThreadPool> pool,
                         WeightType weights)
    : FfnMixerShape(d_model, ffn_dim, activation, kernels, std::move(pool), weights) {}

FeedForward::FeedForward(size_t d_model, size_t ffn_dim, Activation activation,
                         const KernelTable& kernels)
    : FeedForward(d_model, ffn_dim, activation, kernels, SharedThreadPool(1)) {}

LayerNorm::LayerNorm(size_t d_model, float eps, const KernelTable& kernels,
                     std::shared_ptr<ThreadPool> pool)
    : d_model_(d_model),
      eps_((CheckEps("eps", eps), eps)),
      kernels_(&kernels),
      pool_(std::move(pool)) {}

LayerNorm::LayerNorm(size_t d_model, float eps, const KernelTable& kernels)
    : LayerNorm(d_model, eps, kernels, SharedThreadPool(1)) {}

void FeedForward::SetWeights(const FfnWeights& w) {
  const std::vector<float> b1 = BiasOrZeros("ffn.b1", w.b1, ffn_dim_);
  const std::vector<float> b2 = BiasOrZeros("ffn.b2", w.b2, d_model_);
  const std::string config_name = ConfigName(CppArgNames().weights);
  const WeightValues w1 =
      ReadWeight("ffn.w1", w.w1, w.stored_w1, weights_, d_model_, ffn_dim_, config_name);
  const WeightValues w2 =
      ReadWeight("ffn.w2", w.w2, w.stored_w2, weights_, ffn_dim_, d_model_, config_name);
  w1_ = PackWeights(*kernels_, w1.values, w1.scales, b1, d_model_, ffn_dim_, weights_);
  w2_ = PackWeights(*kernels_, w2.values, w2.scales, b2, ffn_dim_, d_model_, weights_);
  // W^T, gradients and saved activations belonged to the old weights (a
  // program that never trains never makes them: only a training Forward
  // does).
  DropTraining(training_);
}

void FeedForward::Forward(const float* x, size_t rows, float* out, FfnRecord* record) {
  if (w1_.empty()) throw std::logic_error("FeedForward: forward before SetWeights");
  const size_t hidden = CheckedCount("feed-forward hidden units",
                                     {{"batch * tokens", rows}, {"ffn_dim", ffn_dim_}});
  if (hidden_.size() < hidden) hidden_.resize(hidden);
  ParallelMultiplyPacked(*pool_, *kernels_, x, rows, w1_, hidden_.data(), ffn_dim_);
  if (record != nullptr) {
    record->input.assign(x, x + rows * d_model_);
    record->pre_activation.assign(hidden_.begin(), hidden_.begin() + hidden);
  }
  // The activation at ~0.5 ns an element (GELU's exp), element-wise.
  ParallelElementwise(*pool_, rows * ffn_dim_, 0.5, [&](size_t begin, size_t end) {
    kernels_->activation(activation_, hidden_.data() + begin, end - begin);
  });
  if (record != nullptr) record->hidden.assign(hidden_.begin(), hidden_.begin() + hidden);
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
}

void LayerNorm::Forward(const float* x, size_t rows, float* out) const {
  if (gamma_.empty()) throw std::logic_error("LayerNorm: forward before SetWeights");
  CheckNormRange("the LayerNorm input", {x, rows * d_model_}, d_model_);
  // Rows are independent; ~0.5 ns an element over its two passes.
  const Split split = SplitWork(*pool_, 0.5 * double(rows * d_model_), rows);
  ParallelRanges(*pool_, rows, split, [&](size_t begin, size_t end) {
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

BlockLayer::BlockLayer(const LayerConfig& config, Form form)
    : BlockLayer(config, form, BestKernels(config.backend), nullptr) {}

BlockLayer::BlockLayer(const LayerConfig& config, Form form, const KernelTable& kernels,
                       std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)) {
  const ArgNames& n = *config_.names;
  block_.reset(
      form == Form::kEncoder
          ? new TransformerBlock(
                LayerBlock(config_, {MixerKind::kSelfAttention, MixerKind::kFeedForward}),
                kernels, std::move(pool),
                {{"the self-attention sublayer", "attention.", "norm1", {}, kNormInput,
                  kNormInput},
                 {"the feed-forward sublayer", "", "norm2", {}, kNormInput, kNormInput}},
                true)
          : new TransformerBlock(
                LayerBlock(config_, {MixerKind::kSelfAttention, MixerKind::kCrossAttention,
                                     MixerKind::kFeedForward}),
                kernels, std::move(pool),
                {{"the self-attention sublayer", Cat({n.self_attention, "."}), "norm1", {},
                  kNormInput, kNormInput},
                 {"the cross-attention sublayer", Cat({n.cross_attention, "."}), "norm2", {},
                  kNormInput, kNormInput},
                 {"the feed-forward sublayer", "", "norm3", {}, kNormInput, kNormInput}},
                true));
}
BlockLayer::BlockLayer(BlockLayer&&) noexcept = default;
BlockLayer& BlockLayer::operator=(BlockLayer&&) noexcept = default;
BlockLayer::~BlockLayer() = default;

// The block's own: its stand-ins refuse in a build without training.
void BlockLayer::TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) {
  block_->TrainableParameters(out, prefix);
}
void BlockLayer::ParametersUpdated() { block_->ParametersUpdated(); }
const KernelTable& BlockLayer::kernels() const { return block_->kernels(); }
ThreadPool& BlockLayer::pool() const { return block_->pool(); }
size_t BlockLayer::WeightBytes() const { return block_->WeightBytes(); }

void TransformerEncoderLayer::SetWeights(const MhaWeights& attention, const FfnWeights& ffn,
                                         const NormWeights& norm1, const NormWeights& norm2) {
  const SublayerWeights w[] = {LayerSublayer(norm1, &SublayerWeights::attention, attention),
                               LayerSublayer(norm2, &SublayerWeights::ffn, ffn)};
  block_->SetWeights(w);
}

std::vector<float> TransformerEncoderLayer::Forward(const Tensor3& x,
                                                    const EncoderOptions& options) {
  return block_->Forward(x, ToBlock(options));
}

void TransformerDecoderLayer::SetWeights(const MhaWeights& self_attention,
                                         const MhaWeights& cross_attention,
                                         const FfnWeights& ffn, const NormWeights& norm1,
                                         const NormWeights& norm2, const NormWeights& norm3) {
  const SublayerWeights w[] = {LayerSublayer(norm1, &SublayerWeights::attention, self_attention),
                               LayerSublayer(norm2, &SublayerWeights::attention, cross_attention),
                               LayerSublayer(norm3, &SublayerWeights::ffn, ffn)};
  block_->SetWeights(w);
}

std::vector<float> TransformerDecoderLayer::Forward(const Tensor3& x, const Tensor3& memory,
                                                    const DecoderOptions& options) {
  const ArgNames& n = *config_.names;
  CheckTensor("memory", memory, config_.d_model, n.d_model);
  CheckEqual("memory.batch", memory.batch, x.batch, "x.batch");
  if (!options.memory_key_padding_mask.empty()) {
    CheckLength(n.memory_key_padding_mask, options.memory_key_padding_mask.size(),
                {memory.batch, memory.tokens});
  }
  // A training forward attends to the memory itself, whose gradient it
  // returns; any other to its keys and values projected once, held in
  // config.cache_type as a decoding loop's are.
  if (TrainingRequested(options.training)) return block_->Forward(x, memory, ToBlock(options));
  const PrecomputedKV kv = PrecomputeMemory(memory, options.memory_key_padding_mask);
  return Forward(x, kv, options);
}

PrecomputedKV TransformerDecoderLayer::PrecomputeMemory(
    const Tensor3& memory, std::span<const uint8_t> key_padding_mask) {
  return block_->PrecomputeMemory(memory, key_padding_mask);
}

std::vector<float> TransformerDecoderLayer::Forward(const Tensor3& x,
                                                    const PrecomputedKV& memory,
                                                    const DecoderOptions& options) {
  return block_->Forward(x, memory, ToBlock(options));
}

std::vector<float> TransformerDecoderLayer::ForwardIncremental(
    const Tensor3& x, KVCache& cache, const PrecomputedKV& memory,
    const SelfAttentionOptions& self_attention) {
  return block_->ForwardIncremental(x, cache, self_attention, &memory);
}

MultiHeadAttention& TransformerDecoderLayer::self_attention() { return block_->attention(0); }
MultiHeadAttention& TransformerDecoderLayer::cross_attention() { return block_->attention(1); }

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
  // 10000^(-2j / d_model) for the pair j = i / 2: q^j, q the d_model-th
  // root of 10000^-2.
  const double q = RootOf(1e-8, d_model);
  for (size_t p = 0; p < t; ++p) {
    for (size_t i = 0; i < d_model; ++i) {
      const double rate = Power(q, i / 2);
      const double angle = double(p) * rate;
      double sin_angle, cos_angle;
      SinCos(angle, sin_angle, cos_angle);
      pe[p * d_model + i] = float(i % 2 == 0 ? sin_angle : cos_angle);
    }
  }
  return pe;
}

}  // namespace simd_attention
