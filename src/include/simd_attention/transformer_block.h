// A transformer block as an ordered list of sublayers: each a mixer
// (self-attention, cross-attention, an FFN, a gated FFN or a sparse mixture
// of gated-FFN experts) with its norm
// placement, its output added to the residual stream. The blocks of today's
// models are lists of these: Llama's is [pre-norm self-attention, pre-norm
// gated FFN] with RMSNorm; Gemma 2 norms before and after both; GPT-J runs
// its attention and MLP side by side from one input; a post-LN encoder
// layer is [post-norm self-attention, post-norm FFN]. TransformerStack is N
// blocks with one KV cache per layer, trained as its blocks are.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "simd_attention/activation.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/norm_kind.h"
#include "simd_attention/trainable.h"
#include "simd_attention/traits_table.h"
#include "simd_attention/training_only.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention {

enum class MixerKind {
  kSelfAttention,   // MultiHeadAttention over the block's input
  kCrossAttention,  // MultiHeadAttention of the input over a memory
  kFeedForward,     // act(x W1 + b1) W2 + b2
  kGatedFeedForward,  // (act(x W_gate + b_gate) * (x W_up + b_up)) W_down + b_down
  kMixtureOfExperts,  // sum of the router's top k gated FFN experts, weighted (Mixtral)
};

struct MixerKindTraits {
  MixerKind value;
  const char* name;  // its name in JavaScript
  bool attention;    // holds a MultiHeadAttention
};

inline constexpr MixerKindTraits kMixerKinds[] = {
    {MixerKind::kSelfAttention, "self_attention", true},
    {MixerKind::kCrossAttention, "cross_attention", true},
    {MixerKind::kFeedForward, "ffn", false},
    {MixerKind::kGatedFeedForward, "gated_ffn", false},
    {MixerKind::kMixtureOfExperts, "moe", false},
};

constexpr const MixerKindTraits& Traits(MixerKind m) { return RowFor(kMixerKinds, m); }
static_assert(RowsDistinct(kMixerKinds), "kMixerKinds: one row per MixerKind and name");

// Where a sublayer's norm sits, h being the residual stream:
enum class NormPlacement {
  kPre,       // h + f(norm(h))            (pre-LN: GPT-2, Llama)
  kPost,      // norm(h + f(h))            (post-LN: BERT, torch's default)
  kSandwich,  // h + norm_out(f(norm(h)))  (Gemma 2's four norms)
  kNone,      // h + f(h)                  (no norm: the tiny model's layers)
};

struct NormPlacementTraits {
  NormPlacement value;
  const char* name;  // its name in JavaScript
  bool input_norm;   // normalizes the mixer's input h
  bool output_norm;  // has a second norm after the mixer
  bool sum_norm;     // normalizes the residual sum h + f(h)
};

inline constexpr NormPlacementTraits kNormPlacements[] = {
    {NormPlacement::kPre, "pre", true, false, false},
    {NormPlacement::kPost, "post", false, false, true},
    {NormPlacement::kSandwich, "sandwich", true, true, false},
    {NormPlacement::kNone, "none", false, false, false},
};

constexpr const NormPlacementTraits& Traits(NormPlacement p) { return RowFor(kNormPlacements, p); }
// Whether a sublayer of placement p has its norm (all but kNone).
constexpr bool HasNorm(NormPlacement p) {
  const NormPlacementTraits& t = Traits(p);
  return t.input_norm || t.sum_norm;
}
static_assert(RowsDistinct(kNormPlacements), "kNormPlacements: one row per placement and name");

struct Sublayer {
  MixerKind mixer = MixerKind::kSelfAttention;
  NormPlacement norm = NormPlacement::kPre;
  // Reads the same input as the sublayer before it, both outputs added to
  // that input: h + f(norm1(h)) + g(norm2(h)) (GPT-J, GPT-NeoX with
  // use_parallel_residual, Phi-2). Not with kPost.
  bool parallel = false;
};

struct BlockConfig {
  size_t d_model = 0;
  size_t num_heads = 0;
  size_t num_kv_heads = 0;  // as MhaConfig's; 0 = num_heads
  size_t head_dim = 0;      // as MhaConfig's; 0 = d_model / num_heads
  size_t ffn_dim = 0;       // hidden units of the FFN, gated FFN and each expert
  // The moe sublayers' (MixtralSparseMoeBlock's): each row goes to the
  // experts_per_token of num_experts experts its router scores highest, its
  // output their outputs weighted by their softmax probabilities, which
  // normalize_top_k divides by their sum (Mixtral; Qwen2-MoE and OLMoE's
  // norm_topk_prob false do not).
  size_t num_experts = 0;        // E >= 1 with a moe sublayer
  size_t experts_per_token = 2;  // k in 1..E; Mixtral's 2
  bool normalize_top_k = true;   // Mixtral's
  Activation activation = Activation::kRelu;  // the FFN's, or the gated FFN's gate's
  NormKind norm = NormKind::kLayerNorm;       // every sublayer's norm
  double eps = 1e-5;                          // a double as LayerConfig::eps
  RopeConfig rope;                            // the self-attentions' (not cross)
  QkNormConfig qk_norm;                       // the self-attentions'
  std::vector<Sublayer> sublayers;            // in order; at least one
  Backend backend = Backend::kHighway;
  size_t threads = 1;  // as MhaConfig::threads
  WeightType weights = WeightType::kF32;     // every weight matrix, as MhaConfig::weights
  WeightType cache_type = WeightType::kF32;  // KV caches, as MhaConfig::cache_type
  const ArgNames* names = nullptr;
};

// A gated FFN's weights (X @ W layout): W_gate and W_up [d_model, ffn_dim],
// W_down [ffn_dim, d_model]; biases optional (empty: zero), as most gated
// MLPs have none.
struct GatedFfnWeights {
  std::span<const float> w_gate, w_up, w_down;
  std::span<const float> b_gate, b_up, b_down;
  StoredMatrix stored_w_gate, stored_w_up, stored_w_down;
};

// A gated FFN's gradients, named like its weights (X @ W layout).
struct GatedFfnGradients {
  std::vector<float> d_w_gate, d_w_up, d_w_down;
  std::vector<float> d_b_gate, d_b_up, d_b_down;
};

// A mixture of experts' weights: the router W_router [d_model, num_experts]
// (X @ W layout, no bias; float32 whatever config.weights, as it decides
// the routing) and one gated FFN per expert, in config.weights.
struct MoeWeights {
  std::span<const float> router;
  std::span<const GatedFfnWeights> experts;  // num_experts
};

// A mixture of experts' gradients, the routing taken as fixed: its router's
// and each expert's (an expert that no row chose: zeros).
struct MoeGradients {
  std::vector<float> d_router;
  std::vector<GatedFfnGradients> experts;
};

// One sublayer's weights: its norm (beta only for LayerNorm), the norm
// after its mixer for kSandwich, and the weights of its mixer's kind. A
// bias left empty is zero (Hugging Face checkpoints omit many).
struct SublayerWeights {
  NormWeights norm;
  NormWeights output_norm;
  MhaWeights attention;
  FfnWeights ffn;
  GatedFfnWeights gated_ffn;
  MoeWeights moe;
};

// One sublayer's gradients, named like SublayerWeights: its norms' (d_beta
// empty for the RMSNorm kinds; d_gamma that of the stored gamma, which
// Gemma's kind adds 1 to) and its mixer's, the others left empty. A bias
// the weights left empty is trained as the zeros it stands for.
struct SublayerGradients {
  NormGradients norm;
  NormGradients output_norm;  // kSandwich
  MhaGradients attention;     // its d_input (self) or d_query (cross) included
  FfnGradients ffn;
  GatedFfnGradients gated_ffn;
  MoeGradients moe;
};

struct BlockGradients {
  std::vector<float> d_input;   // [B, T, d_model]
  std::vector<float> d_memory;  // [B, S, d_model], of every cross-attention; else empty
  std::vector<SublayerGradients> sublayers;  // one per sublayer
};

struct BlockOptions {
  // The self-attentions' (causal and key padding as EncoderOptions').
  bool causal = false;
  CausalAlignment causal_alignment = CausalAlignment::kBottomRight;
  std::span<const uint8_t> key_padding_mask;  // [B, T]
  SelfAttentionOptions self_attention;
  std::span<const uint8_t> memory_key_padding_mask;  // [B, S] of the memory
  // Rotary positions of the first token (as MhaOptions::position_offset).
  size_t position_offset = 0;
  // When given, the self-attention sublayer's attention weights [B, H, T, T]
  // (as MhaOptions::need_weights; the last one's, if several), by Forward(x)
  // and Forward(x, memory).
  std::vector<float>* attn_weights = nullptr;
  // Keep what Backward needs (each sublayer's record: its norms' inputs
  // and its mixer's), until the next forward, SetWeights or optimizer step.
  // Float32 weights only (MhaOptions::training).
  bool training = false;
};

class BlockNorm;
class GatedFeedForward;

class TransformerBlock : public Trainable {
 public:
  explicit TransformerBlock(const BlockConfig& config);
  TransformerBlock(const BlockConfig& config, const KernelTable& kernels,
                   std::shared_ptr<ThreadPool> pool);
  TransformerBlock(TransformerBlock&&) noexcept;
  TransformerBlock& operator=(TransformerBlock&&) noexcept;
  ~TransformerBlock();

  // One entry per sublayer, in order. All or nothing: after an error the
  // block keeps its old weights.
  void SetWeights(std::span<const SublayerWeights> weights);
  // x [B, T, d_model] -> [B, T, d_model]; `memory` [B, S, d_model] for the
  // cross-attention sublayers (required when there are any).
  std::vector<float> Forward(const Tensor3& x, const BlockOptions& options = {});
  std::vector<float> Forward(const Tensor3& x, const Tensor3& memory,
                             const BlockOptions& options = {});
  // A cache for the block's one self-attention sublayer.
  KVCache CreateKVCache(size_t batch, size_t max_length) const;
  // n new tokens x [B, n, d_model] through the block, the self-attention
  // attending causally over `cache` and the new tokens (positions from the
  // cache's length); a memory's precomputed K/V for cross-attention
  // sublayers. On any error the cache keeps the tokens it had.
  std::vector<float> ForwardIncremental(const Tensor3& x, KVCache& cache,
                                        const SelfAttentionOptions& self_attention = {},
                                        const PrecomputedKV* memory = nullptr);
  // The gradients of the last forward, a training one, given d_output =
  // dL/d(output) [B, T, d_model]: back through the sublayers in reverse,
  // each from its record. Throws std::logic_error without one,
  // std::invalid_argument for another shape or a non-finite value (naming
  // d_output), std::range_error when the gradients overflow; the record
  // stays, so Backward may be called again.
  BlockGradients Backward(const Tensor3& d_output);
  // The same into `gradients`, reused: its vectors keep their storage.
  void Backward(const Tensor3& d_output, BlockGradients& gradients);
  // Trainable: every sublayer's parameters, its mixer's then its norms',
  // named as SetWeights' messages name them ("sublayers[0] (self_attention):
  // w_q", "sublayers[1] (gated_ffn): norm.gamma"; W_gate and W_up one
  // parameter, as they are packed); Gemma's norms update the stored gamma.
  // After an update the record and the transposes are stale.
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) override;
  void ParametersUpdated() override;
  const KernelTable& kernels() const override { return *kernels_; }
  ThreadPool& pool() const override { return *pool_; }

  // x through the block with the cross-attention sublayers' memory given as
  // its precomputed keys and values (PrecomputeMemory: once for many
  // calls); its padding mask applies unless options.memory_key_padding_mask
  // is given. Not a training forward (options.training is refused).
  std::vector<float> Forward(const Tensor3& x, const PrecomputedKV& memory,
                             const BlockOptions& options = {});
  // The memory's keys and values for the cross-attention sublayer.
  PrecomputedKV PrecomputeMemory(const Tensor3& memory,
                                 std::span<const uint8_t> key_padding_mask = {});

  // The config with defaults resolved (num_kv_heads, head_dim, threads,
  // names).
  const BlockConfig& config() const { return config_; }
  // Bytes of the weight matrices as held, biases apart.
  size_t WeightBytes() const;

 private:
  struct Part;
  struct Record;
  // The sublayers over h in place: `attend(i, in)` runs attention sublayer
  // i on its normed input. With a record (a training forward), each
  // sublayer's into it.
  template <class Attend>
  void Run(std::vector<float>& h, size_t batch, size_t tokens, const Attend& attend,
           Record* record = nullptr);
  // How a sublayer names itself in messages and parameter names: a block's
  // sublayer k as "sublayers[k] (<mixer>)"; the encoder and decoder layers,
  // instances of the block, give the names they have always had.
  struct PartNames {
    std::string name;          // "sublayers[1] (ffn)"; "the feed-forward sublayer"
    std::string mixer;         // its mixer's weights' prefix: "sublayers[1] (ffn): ", "attention."
    std::string norm, output_norm;  // its norms': "sublayers[1] (ffn): norm", "norm2"
    const char* norm_input;    // its norm's input in a range check (pre, sandwich)
    const char* norm_sum;      // the residual sum a post norm takes
    const char* ffn = "ffn.";  // its FFN's parameters' prefix, after `mixer`
  };
  friend class BlockLayer;
  friend class TransformerEncoderLayer;
  friend class TransformerDecoderLayer;
  friend class TinyTransformer;
  // The layers' form: their names, and every bias required (given, not
  // zero when empty), as their SetWeights has always asked.
  TransformerBlock(const BlockConfig& config, const KernelTable& kernels,
                   std::shared_ptr<ThreadPool> pool, std::vector<PartNames> names,
                   bool biases_required);
  // The attention of an attention sublayer.
  MultiHeadAttention& attention(size_t sublayer) const;
  // A training forward's record, sized for x [batch, tokens]; refuses
  // weights the optimizers cannot update.
  Record& StartRecord(size_t batch, size_t tokens);
  // d = dL/d(mixer output) of sublayer k to dx = dL/d(mixer input); a
  // cross-attention adds its memory's gradient to g.d_memory.
  void MixerBackward(size_t k, const std::vector<float>& d, std::vector<float>& dx,
                     BlockGradients& g);
  const MultiHeadAttention& SelfAttention(const char* where) const;

  BlockConfig config_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<Part> parts_;
  bool biases_required_ = false;
  bool has_weights_ = false;
  // The last training forward's record (a program that never trains makes
  // none: training_only.h).
  TrainingOnly<Record> record_;
};

// N blocks of one config in order, with an optional final norm (a decoder
// model's last norm), and one KV cache per layer for decoding.
struct StackConfig {
  BlockConfig block;
  size_t num_layers = 0;
  // Each layer's self-attention key window ([left, right], -1 unbounded),
  // e.g. Gemma 2's sliding layers; empty = every layer unbounded (or the
  // call's window).
  std::vector<std::array<int64_t, 2>> layer_windows;
  bool final_norm = false;
};

// A stack's gradients, grouped as SetWeights takes its weights.
struct StackGradients {
  std::vector<float> d_input;                          // [B, T, d_model]
  std::vector<std::vector<SublayerGradients>> layers;  // layers[i]: layer i's, per sublayer
  NormGradients final_norm;                            // config.final_norm; else empty
};

class TransformerStack : public Trainable {
 public:
  explicit TransformerStack(const StackConfig& config);
  // Every layer on these kernels and this pool (null: config.block.threads').
  TransformerStack(const StackConfig& config, const KernelTable& kernels,
                   std::shared_ptr<ThreadPool> pool);
  TransformerStack(TransformerStack&&) noexcept;
  TransformerStack& operator=(TransformerStack&&) noexcept;
  ~TransformerStack() override;
  // layers[i]: layer i's sublayer weights; final_norm when config.final_norm.
  void SetWeights(std::span<const std::vector<SublayerWeights>> layers,
                  const NormWeights& final_norm = {});
  // options.training: each layer keeps its own record (as
  // TransformerBlock's training forward) and the stack the final norm's
  // input, until the next forward, SetWeights or optimizer step.
  std::vector<float> Forward(const Tensor3& x, const BlockOptions& options = {});
  // The gradients of the last forward, a training one, given d_output
  // [B, T, d_model]: back through the final norm and the layers in
  // reverse, each from its own record. Errors as TransformerBlock's
  // Backward; the records stay.
  StackGradients Backward(const Tensor3& d_output);
  // The same into `gradients`, reused: its vectors keep their storage.
  void Backward(const Tensor3& d_output, StackGradients& gradients);
  // Trainable: every layer's parameters, named as SetWeights' messages name
  // them ("layers[1].sublayers[0] (self_attention): w_q"), then the final
  // norm's ("final_norm.gamma").
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) override;
  void ParametersUpdated() override;
  const KernelTable& kernels() const override { return *kernels_; }
  ThreadPool& pool() const override { return *pool_; }
  // One cache per layer.
  std::vector<KVCache> CreateKVCaches(size_t batch, size_t max_length) const;
  // n new tokens through every layer, each with its own cache. On any error
  // every cache keeps the tokens it had.
  std::vector<float> ForwardIncremental(const Tensor3& x, std::span<KVCache> caches,
                                        const SelfAttentionOptions& self_attention = {});
  // The same with the caches held elsewhere (a binding's objects).
  std::vector<float> ForwardIncremental(const Tensor3& x, std::span<KVCache* const> caches,
                                        const SelfAttentionOptions& self_attention = {});
  const StackConfig& config() const { return config_; }
  TransformerBlock& layer(size_t i) { return layers_[i]; }
  size_t WeightBytes() const;

 private:
  struct Record;
  // A training forward's record, sized for x [batch, tokens] (the layers
  // start theirs).
  Record& StartRecord(size_t batch, size_t tokens);
  // The call's options for layer i (its own window where it has one).
  SelfAttentionOptions LayerOptions(size_t i, const SelfAttentionOptions& given) const;
  void FinalNorm(std::vector<float>& h) const;
  void CheckReady() const;

  StackConfig config_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<TransformerBlock> layers_;
  std::unique_ptr<BlockNorm> final_norm_;  // with its weights, once set
  // The last training forward's record (training_only.h).
  TrainingOnly<Record> record_;
};

}  // namespace simd_attention
