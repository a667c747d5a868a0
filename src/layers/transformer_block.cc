#include "simd_attention/transformer_block.h"

#include <stdexcept>
#include <string>

#include "simd_attention/config_fields.h"

#include "checks/checked_size.h"
#include "checks/validate.h"
#include "dispatch/dispatch.h"
#include "layers/residual.h"
#include "layers/transformer_block_parts.h"
#include "training/training_hooks.h"
#include "training/training_module.h"

namespace simd_attention {
namespace {

BlockConfig Resolve(BlockConfig c) {
  const ArgNames& n = ResolveNames(c);
  CheckPositive(ConfigName(n.d_model), c.d_model);
  CheckPositive(ConfigName(n.num_heads), c.num_heads);
  CheckEps(ConfigName(n.eps), c.eps);
  if (c.sublayers.empty()) {
    throw std::invalid_argument("config.sublayers: expected at least one sublayer, got none");
  }
  bool ffn = false, moe = false;
  for (size_t i = 0; i < c.sublayers.size(); ++i) {
    const Sublayer& s = c.sublayers[i];
    const std::string at = "config.sublayers[" + std::to_string(i) + "]";
    if (s.parallel && i == 0) {
      throw std::invalid_argument(at + ".parallel: the first sublayer has none before it to run "
                                  "beside, expected false, got true");
    }
    if (s.parallel && (Traits(s.norm).sum_norm || Traits(c.sublayers[i - 1].norm).sum_norm)) {
      throw std::invalid_argument(at + ".parallel: sublayers side by side add to one input, "
                                  "which a post norm would normalize between them; expected "
                                  "'pre' or 'sandwich' norms, got 'post'");
    }
    ffn = ffn || !Traits(s.mixer).attention;
    moe = moe || s.mixer == MixerKind::kMixtureOfExperts;
  }
  if (moe) {
    CheckPositive(ConfigName(n.num_experts), c.num_experts);
    if (c.experts_per_token == 0 || c.experts_per_token > c.num_experts) {
      throw std::invalid_argument(Cat({ConfigName(n.experts_per_token), ": expected 1 to ",
                                       ConfigName(n.num_experts), " (",
                                       std::to_string(c.num_experts), "), got ",
                                       std::to_string(c.experts_per_token)}));
    }
  }
  if (ffn) {
    CheckPositive(ConfigName(n.ffn_dim), c.ffn_dim);
    CheckedCount("ffn weights", {{n.d_model, c.d_model}, {n.ffn_dim, c.ffn_dim}, {"2", 2}});
  }
  return c;
}

MhaConfig AttentionConfig(const BlockConfig& c, MixerKind mixer) {
  MhaConfig m;
  CopySharedFields(c, m);
  // The memory has no positions relative to the block's tokens.
  if (mixer != MixerKind::kSelfAttention) {
    m.rope = {};
    m.qk_norm = {};
  }
  return m;
}

// Runs f, prefixing the message of an invalid argument with `prefix`.
// (What the caller gave is a std::invalid_argument; a size too large to
// allocate names its own computation.) Without a prefix, f's own.
template <class F>
void Prefixed(const std::string& prefix, F&& f) {
  if (prefix.empty()) return f();
  try {
    f();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(prefix + e.what());
  }
}

// The self-attentions' options of a forward.
MhaOptions SelfOptions(const BlockOptions& o, bool training) {
  MhaOptions self = SelfAttentionMhaOptions(o.self_attention);
  self.causal = o.causal;
  self.causal_alignment = o.causal_alignment;
  self.key_padding_mask = o.key_padding_mask;
  self.position_offset = o.position_offset;
  self.training = training;
  return self;
}

std::vector<float> ZerosIfEmpty(std::span<const float> b, size_t n) {
  return b.empty() ? std::vector<float>(n, 0.0f) : std::vector<float>(b.begin(), b.end());
}

}  // namespace

TransformerBlock::TransformerBlock(const BlockConfig& config)
    : TransformerBlock(config, BestKernels(config.backend), nullptr) {}

TransformerBlock::TransformerBlock(const BlockConfig& config, const KernelTable& kernels,
                                   std::shared_ptr<ThreadPool> pool)
    : TransformerBlock(config, kernels, std::move(pool), {}, false) {}

TransformerBlock::TransformerBlock(const BlockConfig& config, const KernelTable& kernels,
                                   std::shared_ptr<ThreadPool> pool,
                                   std::vector<PartNames> names, bool biases_required)
    : config_(Resolve(config)), kernels_(&kernels), biases_required_(biases_required) {
  pool_ = pool != nullptr ? std::move(pool) : SharedThreadPool(config_.threads);
  for (size_t i = 0; i < config_.sublayers.size(); ++i) {
    const Sublayer& s = config_.sublayers[i];
    if (names.size() <= i) {  // a block's own
      const std::string name =
          Cat({"sublayers[", std::to_string(i), "] (", Traits(s.mixer).name, ")"});
      names.push_back({name, name + ": ", name + ": norm", name + ": output_norm",
                       "the input of a sublayer's norm", "the residual sum of a sublayer"});
    }
    Part part{s, std::move(names[i]),
              BlockNorm(config_.norm, config_.d_model, float(config_.eps), kernels, pool_),
              nullptr, nullptr, nullptr, nullptr, nullptr};
    if (Traits(s.norm).output_norm) {
      part.output_norm = std::make_unique<BlockNorm>(config_.norm, config_.d_model,
                                                     float(config_.eps), kernels, pool_);
    }
    switch (s.mixer) {
      case MixerKind::kSelfAttention:
      case MixerKind::kCrossAttention:
        part.attention =
            std::make_unique<MultiHeadAttention>(AttentionConfig(config_, s.mixer), kernels, pool_);
        break;
      case MixerKind::kFeedForward:
        part.ffn = std::make_unique<FeedForward>(config_.d_model, config_.ffn_dim,
                                                 config_.activation, kernels, pool_,
                                                 config_.weights);
        break;
      case MixerKind::kGatedFeedForward:
        part.gated_ffn = std::make_unique<GatedFeedForward>(config_.d_model, config_.ffn_dim,
                                                            config_.activation, kernels, pool_,
                                                            config_.weights);
        break;
      case MixerKind::kMixtureOfExperts:
        part.moe = std::make_unique<MixtureOfExperts>(config_, kernels, pool_);
        break;
    }
    parts_.push_back(std::move(part));
  }
  // The resolved head layout, as the attentions resolved it.
  for (const Part& p : parts_) {
    if (p.attention != nullptr) {
      config_.num_kv_heads = p.attention->config().num_kv_heads;
      config_.head_dim = p.attention->config().head_dim;
      config_.threads = p.attention->config().threads;
      break;
    }
  }
  if (config_.threads == 0) config_.threads = pool_->threads();
}

TransformerBlock::TransformerBlock(TransformerBlock&&) noexcept = default;
TransformerBlock& TransformerBlock::operator=(TransformerBlock&&) noexcept = default;
TransformerBlock::~TransformerBlock() = default;

void TransformerBlock::SetWeights(std::span<const SublayerWeights> weights) {
  CheckEqual("weights (one entry per sublayer)", weights.size(), parts_.size(),
             "config.sublayers.length");
  const size_t d = config_.d_model;
  // All or nothing: every part is built aside, then swapped in.
  std::vector<Part> fresh;
  fresh.reserve(parts_.size());
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Part& old = parts_[i];
    const SublayerWeights& w = weights[i];
    Part part{old.sublayer, old.names,
              BlockNorm(config_.norm, d, float(config_.eps), *kernels_, pool_),
              nullptr, nullptr, nullptr, nullptr, nullptr};
    const PartNames& n = old.names;
    // Biases left empty are zero, unless the layers' form requires them.
    const auto bias = [&](std::span<const float> b, size_t size) {
      return biases_required_ ? std::vector<float>(b.begin(), b.end()) : ZerosIfEmpty(b, size);
    };
    Prefixed(n.mixer, [&] {
      if (old.attention != nullptr) {
        part.attention = std::make_unique<MultiHeadAttention>(old.attention->config(), *kernels_,
                                                              pool_);
        const MhaConfig& c = old.attention->config();
        const size_t hk = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
        const std::vector<float> b_q = bias(w.attention.b_q, hk);
        const std::vector<float> b_k = bias(w.attention.b_k, kv);
        const std::vector<float> b_v = bias(w.attention.b_v, kv);
        const std::vector<float> b_o = bias(w.attention.b_o, d);
        MhaWeights a = w.attention;
        a.b_q = b_q;
        a.b_k = b_k;
        a.b_v = b_v;
        a.b_o = b_o;
        part.attention->SetWeights(a);
      }
      if (old.ffn != nullptr) {
        part.ffn = std::make_unique<FeedForward>(d, config_.ffn_dim, config_.activation,
                                                 *kernels_, pool_, config_.weights);
        const std::vector<float> b1 = bias(w.ffn.b1, config_.ffn_dim);
        const std::vector<float> b2 = bias(w.ffn.b2, d);
        FfnWeights f = w.ffn;
        f.b1 = b1;
        f.b2 = b2;
        part.ffn->SetWeights(f);
      }
      if (old.gated_ffn != nullptr) {
        part.gated_ffn = std::make_unique<GatedFeedForward>(
            d, config_.ffn_dim, config_.activation, *kernels_, pool_, config_.weights);
        part.gated_ffn->SetWeights(w.gated_ffn);
      }
      if (old.moe != nullptr) {
        part.moe = std::make_unique<MixtureOfExperts>(config_, *kernels_, pool_);
        part.moe->SetWeights(w.moe);
      }
    });
    // A sublayer without a norm ignores its norm's weights, as one without
    // an output norm ignores those (the pool's stand-ins give both).
    if (HasNorm(part.sublayer.norm)) part.norm.SetWeights(n.norm, w.norm.gamma, w.norm.beta);
    if (old.output_norm != nullptr) {
      part.output_norm =
          std::make_unique<BlockNorm>(config_.norm, d, float(config_.eps), *kernels_, pool_);
      part.output_norm->SetWeights(n.output_norm, w.output_norm.gamma, w.output_norm.beta);
    }
    fresh.push_back(std::move(part));
  }
  parts_ = std::move(fresh);
  has_weights_ = true;
  DropTraining(record_);  // it belonged to the old weights
}

template <class Attend>
void TransformerBlock::Run(std::vector<float>& h, size_t batch, size_t tokens,
                           const Attend& attend, Record* record) {
  const size_t d = config_.d_model, rows = batch * tokens;
  std::vector<float> normed(h.size()), out(h.size()), sum;
  for (size_t i = 0; i < parts_.size();) {
    size_t end = i + 1;
    while (end < parts_.size() && parts_[end].sublayer.parallel) ++end;
    // Sublayers side by side read h and add into a copy of it.
    if (end - i > 1) sum = h;
    std::vector<float>& target = end - i > 1 ? sum : h;
    for (size_t k = i; k < end; ++k) {
      Part& p = parts_[k];
      SublayerRecord* r = record != nullptr ? &record->sublayers[k] : nullptr;
      const NormPlacementTraits& placement = Traits(p.sublayer.norm);
      const float* in = h.data();
      if (placement.input_norm) {
        if (r != nullptr) r->norm_input = h;
        p.norm.Forward(p.names.norm_input, h.data(), rows, normed.data());
        in = normed.data();
      }
      if (p.attention != nullptr) {
        out = attend(k, Tensor3{{in, rows * d}, batch, tokens, d});
      } else if (p.ffn != nullptr) {
        p.ffn->Forward(in, rows, out.data(), r != nullptr ? &r->ffn : nullptr);
      } else if (p.gated_ffn != nullptr) {
        p.gated_ffn->Forward(in, rows, out.data(), r != nullptr ? &r->ffn : nullptr);
      } else {
        p.moe->Forward(in, rows, out.data(), r != nullptr ? &r->moe : nullptr);
      }
      if (p.output_norm != nullptr) {
        if (r != nullptr) r->output_norm_input = out;
        p.output_norm->Forward("the output of a sublayer", out.data(), rows, out.data());
      }
      AddResidual(p.names.name.c_str(), *pool_, *kernels_, target, out);
      if (placement.sum_norm) {
        if (r != nullptr) r->norm_input = target;
        p.norm.Forward(p.names.norm_sum, target.data(), rows, target.data());
      }
    }
    if (end - i > 1) h.swap(sum);
    i = end;
  }
}

std::vector<float> TransformerBlock::Forward(const Tensor3& x, const BlockOptions& options) {
  for (const Part& p : parts_) {
    if (p.sublayer.mixer == MixerKind::kCrossAttention) {
      throw std::invalid_argument("memory: the block's " + p.names.name +
                                  " attends to a memory, so forward expects one, got none");
    }
  }
  return Forward(x, Tensor3{}, options);
}

std::vector<float> TransformerBlock::Forward(const Tensor3& x, const Tensor3& memory,
                                             const BlockOptions& options) {
  if (!has_weights_) throw std::logic_error("TransformerBlock: forward before SetWeights");
  CheckTensor("x", x, config_.d_model, config_.names->d_model);
  bool cross = false;
  for (const Part& p : parts_) cross = cross || p.sublayer.mixer == MixerKind::kCrossAttention;
  if (cross) {
    CheckTensor("memory", memory, config_.d_model, config_.names->d_model);
    CheckEqual("memory.batch", memory.batch, x.batch, "x.batch");
  }
  const bool training = TrainingRequested(options.training);
  MhaOptions self = SelfOptions(options, training);
  self.need_weights = options.attn_weights != nullptr;
  MhaOptions across;
  across.key_padding_mask = options.memory_key_padding_mask;
  across.training = training;
  if (Record* kept = TrainingKept(record_)) kept->ready = false;  // what Backward reads
  Record* record = training ? &StartRecord(x.batch, x.tokens) : nullptr;
  std::vector<float> h(x.data.begin(), x.data.end());
  Run(h, x.batch, x.tokens, [&](size_t k, const Tensor3& in) {
    MultiHeadAttention& a = *parts_[k].attention;
    if (parts_[k].sublayer.mixer == MixerKind::kCrossAttention) {
      return a.Forward(in, memory, memory, across).output;
    }
    MhaResult r = a.Forward(in, self);
    if (options.attn_weights != nullptr) *options.attn_weights = std::move(r.attn_weights);
    return std::move(r.output);
  }, record);
  if (record != nullptr) record->ready = true;
  return h;
}

std::vector<float> TransformerBlock::Forward(const Tensor3& x, const PrecomputedKV& memory,
                                             const BlockOptions& options) {
  if (TrainingRequested(options.training)) {
    throw std::invalid_argument(
        "options.training: a precomputed memory keeps no memory to differentiate, expected "
        "false, got true (train through Forward(x, memory))");
  }
  if (!has_weights_) throw std::logic_error("TransformerBlock: forward before SetWeights");
  const ArgNames& n = *config_.names;
  CheckTensor("x", x, config_.d_model, n.d_model);
  CheckEqual("x.batch", x.batch, memory.batch(), "batch of the precomputed memory");
  if (!options.memory_key_padding_mask.empty()) {
    CheckLength(n.memory_key_padding_mask, options.memory_key_padding_mask.size(),
                {memory.batch(), memory.tokens()});
  }
  const MhaOptions self = SelfOptions(options, false);
  MhaOptions across;
  across.key_padding_mask = options.memory_key_padding_mask;
  if (Record* kept = TrainingKept(record_)) kept->ready = false;
  std::vector<float> h(x.data.begin(), x.data.end());
  Run(h, x.batch, x.tokens, [&](size_t k, const Tensor3& in) {
    MultiHeadAttention& a = *parts_[k].attention;
    return parts_[k].sublayer.mixer == MixerKind::kSelfAttention
               ? a.Forward(in, self).output
               : a.Forward(in, memory, across).output;
  });
  return h;
}

MultiHeadAttention& TransformerBlock::attention(size_t sublayer) const {
  return *parts_[sublayer].attention;
}

const MultiHeadAttention& TransformerBlock::SelfAttention(const char* where) const {
  const MultiHeadAttention* found = nullptr;
  for (const Part& p : parts_) {
    if (p.sublayer.mixer != MixerKind::kSelfAttention) continue;
    if (found != nullptr) {
      throw std::invalid_argument(std::string(where) + ": a block with more than one "
                                  "self_attention sublayer has a cache per sublayer, which "
                                  "this block does not keep");
    }
    found = p.attention.get();
  }
  if (found == nullptr) {
    throw std::invalid_argument(std::string(where) + ": the block has no self_attention "
                                "sublayer to keep a cache for");
  }
  return *found;
}

KVCache TransformerBlock::CreateKVCache(size_t batch, size_t max_length) const {
  return SelfAttention("CreateKVCache").CreateKVCache(batch, max_length);
}

PrecomputedKV TransformerBlock::PrecomputeMemory(const Tensor3& memory,
                                                 std::span<const uint8_t> key_padding_mask) {
  CheckTensor("memory", memory, config_.d_model, config_.names->d_model);
  for (Part& p : parts_) {
    if (p.sublayer.mixer == MixerKind::kCrossAttention) {
      return p.attention->PrecomputeKeyValue(memory, key_padding_mask);
    }
  }
  throw std::invalid_argument("PrecomputeMemory: the block has no cross_attention sublayer");
}

std::vector<float> TransformerBlock::ForwardIncremental(const Tensor3& x, KVCache& cache,
                                                        const SelfAttentionOptions& self_attention,
                                                        const PrecomputedKV* memory) {
  // The training module makes no cache (so the rest folds away there).
  if constexpr (kTrainingModule) RefuseInTrainingModule("KV caches");
  if (!has_weights_) throw std::logic_error("TransformerBlock: forward before SetWeights");
  SelfAttention("ForwardIncremental");
  CheckTensor("x", x, config_.d_model, config_.names->d_model);
  for (const Part& p : parts_) {
    if (p.sublayer.mixer == MixerKind::kCrossAttention && memory == nullptr) {
      throw std::invalid_argument("memory: the block's " + p.names.name +
                                  " attends to a memory, so ForwardIncremental expects its "
                                  "precomputed keys and values, got none");
    }
  }
  if (memory != nullptr) {
    CheckEqual("x.batch", x.batch, memory->batch(), "batch of the precomputed memory");
  }
  const MhaOptions self = SelfAttentionMhaOptions(self_attention);
  const size_t before = cache.length();
  if (Record* kept = TrainingKept(record_)) kept->ready = false;
  std::vector<float> h(x.data.begin(), x.data.end());
  try {
    Run(h, x.batch, x.tokens, [&](size_t k, const Tensor3& in) {
      MultiHeadAttention& a = *parts_[k].attention;
      return parts_[k].sublayer.mixer == MixerKind::kSelfAttention
                 ? a.ForwardIncremental(in, cache, self).output
                 : a.Forward(in, *memory, MhaOptions{}).output;
    });
  } catch (...) {
    // A sublayer after the attention failed: the step did not happen.
    if (cache.length() > before) cache.Truncate(before);
    throw;
  }
  return h;
}

size_t TransformerBlock::WeightBytes() const {
  size_t bytes = 0;
  for (const Part& p : parts_) {
    if (p.attention != nullptr) bytes += p.attention->WeightBytes();
    if (p.ffn != nullptr) bytes += p.ffn->WeightBytes();
    if (p.gated_ffn != nullptr) bytes += p.gated_ffn->WeightBytes();
    if (p.moe != nullptr) bytes += p.moe->WeightBytes();
  }
  return bytes;
}

}  // namespace simd_attention
