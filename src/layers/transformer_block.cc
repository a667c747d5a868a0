#include "simd_attention/transformer_block.h"

#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "checks/validate.h"
#include "dispatch/dispatch.h"
#include "layers/gated_feed_forward.h"
#include "layers/norms.h"
#include "layers/residual.h"

namespace simd_attention {

struct TransformerBlock::Part {
  Sublayer sublayer;
  std::string name;  // "sublayers[1] (gated_ffn)", for messages
  BlockNorm norm;
  std::unique_ptr<BlockNorm> output_norm;  // kSandwich
  std::unique_ptr<MultiHeadAttention> attention;
  std::unique_ptr<FeedForward> ffn;
  std::unique_ptr<GatedFeedForward> gated_ffn;
};

namespace {

BlockConfig Resolve(BlockConfig c) {
  if (c.names == nullptr) c.names = &CppArgNames();
  const ArgNames& n = *c.names;
  CheckPositive(ConfigName(n.d_model), c.d_model);
  CheckPositive(ConfigName(n.num_heads), c.num_heads);
  CheckEps(ConfigName(n.eps), c.eps);
  if (c.sublayers.empty()) {
    throw std::invalid_argument("config.sublayers: expected at least one sublayer, got none");
  }
  bool ffn = false;
  for (size_t i = 0; i < c.sublayers.size(); ++i) {
    const Sublayer& s = c.sublayers[i];
    const std::string at = "config.sublayers[" + std::to_string(i) + "]";
    if (s.parallel && i == 0) {
      throw std::invalid_argument(at + ".parallel: the first sublayer has none before it to run "
                                  "beside, expected false, got true");
    }
    if (s.parallel && (s.norm == NormPlacement::kPost ||
                       c.sublayers[i - 1].norm == NormPlacement::kPost)) {
      throw std::invalid_argument(at + ".parallel: sublayers side by side add to one input, "
                                  "which a post norm would normalize between them; expected "
                                  "'pre' or 'sandwich' norms, got 'post'");
    }
    ffn = ffn || !Traits(s.mixer).attention;
  }
  if (ffn) {
    CheckPositive(ConfigName(n.ffn_dim), c.ffn_dim);
    CheckedCount("ffn weights", {{n.d_model, c.d_model}, {n.ffn_dim, c.ffn_dim}, {"2", 2}});
  }
  return c;
}

MhaConfig AttentionConfig(const BlockConfig& c, MixerKind mixer) {
  MhaConfig m;
  m.d_model = c.d_model;
  m.num_heads = c.num_heads;
  m.num_kv_heads = c.num_kv_heads;
  m.head_dim = c.head_dim;
  m.backend = c.backend;
  m.threads = c.threads;
  m.weights = c.weights;
  m.cache_type = c.cache_type;
  m.names = c.names;
  // The memory has no positions relative to the block's tokens.
  if (mixer == MixerKind::kSelfAttention) {
    m.rope = c.rope;
    m.qk_norm = c.qk_norm;
  }
  return m;
}

// Runs f, prefixing the message of an invalid argument with `part`.
// (What the caller gave is a std::invalid_argument; a size too large to
// allocate names its own computation.)
template <class F>
void InPart(const std::string& part, F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(part + ": " + e.what());
  }
}

std::vector<float> ZerosIfEmpty(std::span<const float> b, size_t n) {
  return b.empty() ? std::vector<float>(n, 0.0f) : std::vector<float>(b.begin(), b.end());
}

}  // namespace

TransformerBlock::TransformerBlock(const BlockConfig& config)
    : TransformerBlock(config, BestKernels(config.backend), nullptr) {}

TransformerBlock::TransformerBlock(const BlockConfig& config, const KernelTable& kernels,
                                   std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)), kernels_(&kernels) {
  pool_ = pool != nullptr ? std::move(pool) : SharedThreadPool(config_.threads);
  for (size_t i = 0; i < config_.sublayers.size(); ++i) {
    const Sublayer& s = config_.sublayers[i];
    Part part{s,
              "sublayers[" + std::to_string(i) + "] (" + Traits(s.mixer).name + ")",
              BlockNorm(config_.norm, config_.d_model, float(config_.eps), kernels, pool_),
              nullptr, nullptr, nullptr, nullptr};
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
    Part part{old.sublayer, old.name,
              BlockNorm(config_.norm, d, float(config_.eps), *kernels_, pool_),
              nullptr, nullptr, nullptr, nullptr};
    InPart(old.name, [&] {
      part.norm.SetWeights("norm", w.norm.gamma, w.norm.beta);
      if (old.output_norm != nullptr) {
        part.output_norm =
            std::make_unique<BlockNorm>(config_.norm, d, float(config_.eps), *kernels_, pool_);
        part.output_norm->SetWeights("output_norm", w.output_norm.gamma, w.output_norm.beta);
      }
      if (old.attention != nullptr) {
        part.attention = std::make_unique<MultiHeadAttention>(old.attention->config(), *kernels_,
                                                              pool_);
        const MhaConfig& c = old.attention->config();
        const size_t hk = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
        const std::vector<float> b_q = ZerosIfEmpty(w.attention.b_q, hk);
        const std::vector<float> b_k = ZerosIfEmpty(w.attention.b_k, kv);
        const std::vector<float> b_v = ZerosIfEmpty(w.attention.b_v, kv);
        const std::vector<float> b_o = ZerosIfEmpty(w.attention.b_o, d);
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
        const std::vector<float> b1 = ZerosIfEmpty(w.ffn.b1, config_.ffn_dim);
        const std::vector<float> b2 = ZerosIfEmpty(w.ffn.b2, d);
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
    });
    fresh.push_back(std::move(part));
  }
  parts_ = std::move(fresh);
  has_weights_ = true;
}

template <class Attend>
void TransformerBlock::Run(std::vector<float>& h, size_t batch, size_t tokens,
                           const Attend& attend) {
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
      const bool post = p.sublayer.norm == NormPlacement::kPost;
      const float* in = h.data();
      if (!post) {
        p.norm.Forward("the input of a sublayer's norm", h.data(), rows, normed.data());
        in = normed.data();
      }
      if (p.attention != nullptr) {
        out = attend(k, Tensor3{{in, rows * d}, batch, tokens, d});
      } else if (p.ffn != nullptr) {
        p.ffn->Forward(in, rows, out.data());
      } else {
        p.gated_ffn->Forward(in, rows, out.data());
      }
      if (p.output_norm != nullptr) {
        p.output_norm->Forward("the output of a sublayer", out.data(), rows, out.data());
      }
      AddResidual(p.name.c_str(), *pool_, *kernels_, target, out);
      if (post) p.norm.Forward("the residual sum of a sublayer", target.data(), rows,
                               target.data());
    }
    if (end - i > 1) h.swap(sum);
    i = end;
  }
}

std::vector<float> TransformerBlock::Forward(const Tensor3& x, const BlockOptions& options) {
  for (const Part& p : parts_) {
    if (p.sublayer.mixer == MixerKind::kCrossAttention) {
      throw std::invalid_argument("memory: the block's " + p.name + " attends to a memory, so "
                                  "forward expects one, got none");
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
  MhaOptions self = SelfAttentionMhaOptions(options.self_attention);
  self.causal = options.causal;
  self.causal_alignment = options.causal_alignment;
  self.key_padding_mask = options.key_padding_mask;
  self.position_offset = options.position_offset;
  MhaOptions across;
  across.key_padding_mask = options.memory_key_padding_mask;
  std::vector<float> h(x.data.begin(), x.data.end());
  Run(h, x.batch, x.tokens, [&](size_t k, const Tensor3& in) {
    MultiHeadAttention& a = *parts_[k].attention;
    return parts_[k].sublayer.mixer == MixerKind::kSelfAttention
               ? a.Forward(in, self).output
               : a.Forward(in, memory, memory, across).output;
  });
  return h;
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
  if (!has_weights_) throw std::logic_error("TransformerBlock: forward before SetWeights");
  SelfAttention("ForwardIncremental");
  CheckTensor("x", x, config_.d_model, config_.names->d_model);
  for (const Part& p : parts_) {
    if (p.sublayer.mixer == MixerKind::kCrossAttention && memory == nullptr) {
      throw std::invalid_argument("memory: the block's " + p.name + " attends to a memory, so "
                                  "ForwardIncremental expects its precomputed keys and values, "
                                  "got none");
    }
  }
  const MhaOptions self = SelfAttentionMhaOptions(self_attention);
  const size_t before = cache.length();
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
  }
  return bytes;
}

}  // namespace simd_attention
