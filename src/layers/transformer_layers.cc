#include "simd_attention/transformer_layers.h"

#include <cmath>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "dispatch/dispatch.h"
#include "storage/packed_weights.h"
#include "layers/residual.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_block.h"
#include "threading/parallel.h"
#include "training/training_build.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

// The config's own checks (the block checks d_model and num_heads), and
// its names resolved. Runs before any part is built from it.
LayerConfig Resolve(LayerConfig c) {
  if (c.names == nullptr) c.names = &CppArgNames();
  const ArgNames& n = *c.names;
  CheckPositive(ConfigName(n.ffn_dim), c.ffn_dim);
  CheckEps(ConfigName(n.eps), c.eps);
  CheckedCount("ffn.w1", {{n.d_model, c.d_model}, {n.ffn_dim, c.ffn_dim}});
  return c;
}

// The layer as a block of LayerNorm sublayers with `mixers`, named in
// messages as the layers have always named their parts.
BlockConfig LayerBlock(const LayerConfig& c, std::initializer_list<MixerKind> mixers) {
  BlockConfig b;
  b.d_model = c.d_model;
  b.num_heads = c.num_heads;
  b.num_kv_heads = c.num_kv_heads;
  b.ffn_dim = c.ffn_dim;
  b.activation = c.activation;
  b.norm = NormKind::kLayerNorm;
  b.eps = c.eps;
  b.rope = c.rope;
  b.backend = c.backend;
  b.threads = c.threads;
  b.weights = c.weights;
  b.cache_type = c.cache_type;
  b.names = c.names;
  for (MixerKind m : mixers) {
    b.sublayers.push_back({m, c.norm_first ? NormPlacement::kPre : NormPlacement::kPost});
  }
  return b;
}

// What a layer's LayerNorms name in their range checks, before or after
// the residual sum.
constexpr char kNormInput[] = "the LayerNorm input";

BlockOptions ToBlock(const EncoderOptions& o) {
  BlockOptions b;
  b.causal = o.causal;
  b.causal_alignment = o.causal_alignment;
  b.key_padding_mask = o.key_padding_mask;
  b.self_attention = o.self_attention;
  b.training = o.training;
  return b;
}

BlockOptions ToBlock(const DecoderOptions& o) {
  BlockOptions b;
  b.causal = o.causal;
  b.causal_alignment = o.causal_alignment;
  b.key_padding_mask = o.key_padding_mask;
  b.memory_key_padding_mask = o.memory_key_padding_mask;
  b.self_attention = o.self_attention;
  b.training = o.training;
  return b;
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

TransformerEncoderLayer::TransformerEncoderLayer(const LayerConfig& config)
    : TransformerEncoderLayer(config, BestKernels(config.backend)) {}

TransformerEncoderLayer::TransformerEncoderLayer(const LayerConfig& config,
                                                 const KernelTable& kernels)
    : TransformerEncoderLayer(config, kernels, nullptr) {}

TransformerEncoderLayer::TransformerEncoderLayer(const LayerConfig& config,
                                                 const KernelTable& kernels,
                                                 std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)),
      block_(new TransformerBlock(
          LayerBlock(config_, {MixerKind::kSelfAttention, MixerKind::kFeedForward}), kernels,
          std::move(pool),
          {{"the self-attention sublayer", "attention.", "norm1", {}, kNormInput, kNormInput},
           {"the feed-forward sublayer", "", "norm2", {}, kNormInput, kNormInput}},
          true)) {}

TransformerEncoderLayer::TransformerEncoderLayer(TransformerEncoderLayer&&) noexcept = default;
TransformerEncoderLayer& TransformerEncoderLayer::operator=(TransformerEncoderLayer&&) noexcept =
    default;
TransformerEncoderLayer::~TransformerEncoderLayer() = default;

void TransformerEncoderLayer::SetWeights(const MhaWeights& attention, const FfnWeights& ffn,
                                         const NormWeights& norm1, const NormWeights& norm2) {
  SublayerWeights w[2];
  w[0].attention = attention;
  w[0].norm = norm1;
  w[1].ffn = ffn;
  w[1].norm = norm2;
  block_->SetWeights(w);
}

std::vector<float> TransformerEncoderLayer::Forward(const Tensor3& x,
                                                    const EncoderOptions& options) {
  return block_->Forward(x, ToBlock(options));
}

const KernelTable& TransformerEncoderLayer::kernels() const { return block_->kernels(); }
ThreadPool& TransformerEncoderLayer::pool() const { return block_->pool(); }
size_t TransformerEncoderLayer::WeightBytes() const { return block_->WeightBytes(); }

TransformerDecoderLayer::TransformerDecoderLayer(const LayerConfig& config)
    : TransformerDecoderLayer(config, BestKernels(config.backend)) {}

TransformerDecoderLayer::TransformerDecoderLayer(const LayerConfig& config,
                                                 const KernelTable& kernels)
    : TransformerDecoderLayer(config, kernels, nullptr) {}

TransformerDecoderLayer::TransformerDecoderLayer(const LayerConfig& config,
                                                 const KernelTable& kernels,
                                                 std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)),
      block_(new TransformerBlock(
          LayerBlock(config_, {MixerKind::kSelfAttention, MixerKind::kCrossAttention,
                               MixerKind::kFeedForward}),
          kernels, std::move(pool),
          {{"the self-attention sublayer", Cat({config_.names->self_attention, "."}), "norm1",
            {}, kNormInput, kNormInput},
           {"the cross-attention sublayer", Cat({config_.names->cross_attention, "."}), "norm2",
            {}, kNormInput, kNormInput},
           {"the feed-forward sublayer", "", "norm3", {}, kNormInput, kNormInput}},
          true)) {}

TransformerDecoderLayer::TransformerDecoderLayer(TransformerDecoderLayer&&) noexcept = default;
TransformerDecoderLayer& TransformerDecoderLayer::operator=(TransformerDecoderLayer&&) noexcept =
    default;
TransformerDecoderLayer::~TransformerDecoderLayer() = default;

void TransformerDecoderLayer::SetWeights(const MhaWeights& self_attention,
                                         const MhaWeights& cross_attention,
                                         const FfnWeights& ffn, const NormWeights& norm1,
                                         const NormWeights& norm2, const NormWeights& norm3) {
  SublayerWeights w[3];
  w[0].attention = self_attention;
  w[0].norm = norm1;
  w[1].attention = cross_attention;
  w[1].norm = norm2;
  w[2].ffn = ffn;
  w[2].norm = norm3;
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

const KernelTable& TransformerDecoderLayer::kernels() const { return block_->kernels(); }
ThreadPool& TransformerDecoderLayer::pool() const { return block_->pool(); }
size_t TransformerDecoderLayer::WeightBytes() const { return block_->WeightBytes(); }
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
