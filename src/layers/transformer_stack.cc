#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "checks/validate.h"
#include "layers/norms.h"
#include "layers/transformer_block_parts.h"
#include "simd_attention/transformer_block.h"
#include "training/training_hooks.h"
#include "training/training_module.h"

namespace simd_attention {
namespace {

StackConfig Resolve(const StackConfig& c) {
  const ArgNames& n = c.block.names == nullptr ? CppArgNames() : *c.block.names;
  CheckPositive(ConfigName(n.num_layers), c.num_layers);
  // Refused as a size (SizeLimitError naming it) where the blocks alone
  // could not exist, rather than by the vector's length check.
  CheckedCount("layers", {{n.num_layers, c.num_layers}}, sizeof(TransformerBlock));
  if (!c.layer_windows.empty()) {
    CheckEqual(ConfigName(n.layer_windows) + ".length", c.layer_windows.size(), c.num_layers,
               ConfigName(n.num_layers));
  }
  return c;
}

}  // namespace

TransformerStack::TransformerStack(const StackConfig& config)
    : TransformerStack(config, BestKernels(config.block.backend), nullptr) {}

TransformerStack::TransformerStack(const StackConfig& config, const KernelTable& kernels,
                                   std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)),
      kernels_(&kernels),
      // One pool for every layer, as a block makes its own.
      pool_(pool != nullptr ? std::move(pool) : SharedThreadPool(config.block.threads)) {
  layers_.reserve(config_.num_layers);
  layers_.emplace_back(config_.block, kernels, pool_);
  config_.block = layers_[0].config();
  for (size_t i = 1; i < config_.num_layers; ++i) {
    layers_.emplace_back(config_.block, kernels, pool_);
  }
}

TransformerStack::TransformerStack(TransformerStack&&) noexcept = default;
TransformerStack& TransformerStack::operator=(TransformerStack&&) noexcept = default;
TransformerStack::~TransformerStack() = default;

void TransformerStack::SetWeights(std::span<const std::vector<SublayerWeights>> layers,
                                  const NormWeights& final_norm) {
  const BlockConfig& b = config_.block;
  CheckEqual("layers.length", layers.size(), config_.num_layers, ConfigName(b.names->num_layers));
  std::unique_ptr<BlockNorm> norm;
  if (config_.final_norm) {
    norm = std::make_unique<BlockNorm>(b.norm, b.d_model, float(b.eps), *kernels_, pool_);
    norm->SetWeights(b.names->final_norm, final_norm.gamma, final_norm.beta);
  } else if (!final_norm.gamma.empty() || !final_norm.beta.empty()) {
    ThrowInvalidArgument({b.names->final_norm, ": ", ConfigName(b.names->final_norm),
                          " is false, so none may be given"});
  }
  // All or nothing: each layer's weights set on a copy of its config first.
  std::vector<TransformerBlock> fresh;
  fresh.reserve(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    TransformerBlock& block = fresh.emplace_back(config_.block, *kernels_, pool_);
    try {
      block.SetWeights(layers[i]);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("layers[" + std::to_string(i) + "]." + e.what());
    }
  }
  layers_ = std::move(fresh);
  final_norm_ = std::move(norm);
  DropTraining(record_);  // it belonged to the old weights
}

SelfAttentionOptions TransformerStack::LayerOptions(size_t i,
                                                    const SelfAttentionOptions& given) const {
  SelfAttentionOptions o = given;
  if (!config_.layer_windows.empty()) o.window = config_.layer_windows[i];
  return o;
}

void TransformerStack::FinalNorm(std::vector<float>& h) const {
  if (final_norm_ != nullptr) {
    final_norm_->Forward("the final norm's input", h.data(), h.size() / config_.block.d_model,
                         h.data());
  }
}

void TransformerStack::CheckReady() const {
  if (config_.final_norm && final_norm_ == nullptr) {
    throw std::logic_error("TransformerStack: forward before SetWeights");
  }
}

std::vector<float> TransformerStack::Forward(const Tensor3& x, const BlockOptions& options) {
  CheckReady();
  const bool training = TrainingRequested(options.training);
  if (Record* kept = TrainingKept(record_)) kept->ready = false;  // what Backward reads
  Record* record = training ? &StartRecord(x.batch, x.tokens) : nullptr;
  std::vector<float> h(x.data.begin(), x.data.end());
  for (size_t i = 0; i < layers_.size(); ++i) {
    BlockOptions o = options;
    o.self_attention = LayerOptions(i, options.self_attention);
    o.training = training;
    h = layers_[i].Forward(Tensor3{h, x.batch, x.tokens, x.features}, o);
  }
  if (record != nullptr) {
    if (final_norm_ != nullptr) record->final_norm_input = h;
    record->ready = true;
  }
  FinalNorm(h);
  return h;
}

std::vector<KVCache> TransformerStack::CreateKVCaches(size_t batch, size_t max_length) const {
  // The training module makes no cache (so the rest folds away there).
  if constexpr (kTrainingModule) RefuseInTrainingModule("KV caches");
  std::vector<KVCache> caches;
  caches.reserve(layers_.size());
  for (const TransformerBlock& layer : layers_) {
    caches.push_back(layer.CreateKVCache(batch, max_length));
  }
  return caches;
}

std::vector<float> TransformerStack::ForwardIncremental(const Tensor3& x,
                                                        std::span<KVCache> caches,
                                                        const SelfAttentionOptions& options) {
  std::vector<KVCache*> each;
  for (KVCache& c : caches) each.push_back(&c);
  return ForwardIncremental(x, std::span<KVCache* const>(each), options);
}

std::vector<float> TransformerStack::ForwardIncremental(const Tensor3& x,
                                                        std::span<KVCache* const> caches,
                                                        const SelfAttentionOptions& options) {
  if constexpr (kTrainingModule) RefuseInTrainingModule("KV caches");
  CheckReady();
  if (Record* kept = TrainingKept(record_)) kept->ready = false;
  CheckEqual("caches.length", caches.size(), layers_.size(),
             ConfigName(config_.block.names->num_layers));
  for (size_t i = 0; i < caches.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (caches[i] == caches[j]) {
        ThrowInvalidArgument({"caches[", std::to_string(i), "]: the same cache as caches[",
                              std::to_string(j), "], expected one cache per layer"});
      }
    }
  }
  std::vector<size_t> before(caches.size());
  for (size_t i = 0; i < caches.size(); ++i) before[i] = caches[i]->length();
  std::vector<float> h(x.data.begin(), x.data.end());
  try {
    for (size_t i = 0; i < layers_.size(); ++i) {
      h = layers_[i].ForwardIncremental(Tensor3{h, x.batch, x.tokens, x.features}, *caches[i],
                                        LayerOptions(i, options));
    }
    FinalNorm(h);
  } catch (...) {
    for (size_t i = 0; i < caches.size(); ++i) {
      if (caches[i]->length() > before[i]) caches[i]->Truncate(before[i]);
    }
    throw;
  }
  return h;
}

size_t TransformerStack::WeightBytes() const {
  size_t bytes = 0;
  for (const TransformerBlock& layer : layers_) bytes += layer.WeightBytes();
  return bytes;
}

}  // namespace simd_attention
