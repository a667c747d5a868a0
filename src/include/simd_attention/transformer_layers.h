// The layers around attention: position-wise FFN, LayerNorm, the encoder
// and decoder layers (torch.nn.TransformerEncoderLayer / DecoderLayer
// semantics, dropout 0; each an instance of TransformerBlock), and
// sinusoidal positional encoding.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "simd_attention/activation.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/packed_matrix.h"
#include "simd_attention/trainable.h"
#include "simd_attention/weight_type.h"

namespace simd_attention {

struct LayerConfig {
  size_t d_model = 0;
  size_t num_heads = 0;
  size_t ffn_dim = 0;
  bool norm_first = false;  // pre-LN; default post-LN as torch
  Activation activation = Activation::kRelu;
  // A double, so that a value float32 cannot hold (1e40) is refused, not
  // rounded to +inf; the LayerNorms compute with it as a float.
  double eps = 1e-5;
  Backend backend = Backend::kHighway;
  size_t threads = 1;  // as MhaConfig::threads; 0 = ThreadPool::DefaultThreads()
  const ArgNames* names = nullptr;  // as MhaConfig::names
  // The attentions' key/value heads and rotary positions, as MhaConfig's
  // (the decoder's cross-attention takes the kv heads but no rotary
  // positions: the memory has none relative to the decoder's tokens).
  size_t num_kv_heads = 0;
  RopeConfig rope;
  // How the attentions' and the FFN's weight matrices are held, as
  // MhaConfig::weights (biases and LayerNorm parameters stay float32).
  WeightType weights = WeightType::kF32;
  // How the decoder's KV caches and precomputed memory K/V hold keys and
  // values, as MhaConfig::cache_type.
  WeightType cache_type = WeightType::kF32;
};

struct NormWeights {
  std::span<const float> gamma;  // [d_model]
  std::span<const float> beta;   // [d_model]
};

struct FfnWeights {
  std::span<const float> w1;  // [d_model, ffn_dim], X @ W layout
  std::span<const float> b1;  // [ffn_dim]
  std::span<const float> w2;  // [ffn_dim, d_model]
  std::span<const float> b2;  // [d_model]
  // Or W1, W2 already in the storage type, as MhaWeights' stored_w_q.
  StoredMatrix stored_w1, stored_w2;
};

// Gradients named like the weights they belong to (X @ W layout).
struct NormGradients {
  std::vector<float> d_gamma, d_beta;  // [d_model]
};
struct FfnGradients {
  std::vector<float> d_w1, d_b1, d_w2, d_b2;
};

// What a training forward of a feed-forward mixer (FeedForward,
// GatedFeedForward) keeps for its backward, held by its caller (a layer's
// record of its sublayers), so that the backward reads nothing of the
// mixer's workspaces.
struct FfnRecord {
  std::vector<float> input;           // [rows, d_model]
  std::vector<float> pre_activation;  // [rows, ffn_dim]; gated: [rows, 2 ffn_dim], gate then up
  std::vector<float> hidden;          // [rows, ffn_dim]: what W2 (W_down) took
};

// What a feed-forward mixer (FeedForward, GatedFeedForward) is made of:
// its widths, activation, kernels, pool and how its matrices are held.
class FfnMixerShape {
 protected:
  FfnMixerShape(size_t d_model, size_t ffn_dim, Activation activation,
                const KernelTable& kernels, std::shared_ptr<ThreadPool> pool, WeightType weights)
      : d_model_(d_model),
        ffn_dim_(ffn_dim),
        activation_(activation),
        kernels_(&kernels),
        pool_(std::move(pool)),
        weights_(weights) {}

  size_t d_model_, ffn_dim_;
  Activation activation_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  WeightType weights_;
};

// act(x W1 + b1) W2 + b2 on rows of width d_model.
class FeedForward : private FfnMixerShape {
 public:
  // On the given pool, or on the calling thread alone.
  // W1 and W2 held as `weights` (see WeightType).
  FeedForward(size_t d_model, size_t ffn_dim, Activation activation,
              const KernelTable& kernels, std::shared_ptr<ThreadPool> pool,
              WeightType weights = WeightType::kF32);
  FeedForward(size_t d_model, size_t ffn_dim, Activation activation,
              const KernelTable& kernels);
  void SetWeights(const FfnWeights& w);
  // With a record (a training forward): x and the hidden units before and
  // after the activation into it, for Backward.
  void Forward(const float* x, size_t rows, float* out, FfnRecord* record = nullptr);
  // d_x [rows, d_model] and the weights' gradients given d_out, from the
  // record of a training Forward of `rows` rows with the current weights
  // (the caller, a layer, checks both).
  void Backward(const FfnRecord& record, const float* d_out, size_t rows, float* d_x,
                FfnGradients& g);
  // Bytes of W1 and W2 as held (biases apart).
  size_t WeightBytes() const { return w1_.WeightBytes() + w2_.WeightBytes(); }

 private:
  // The objects made of these list their parameters (trainable.h).
  friend class TinyTransformer;
  friend class TransformerBlock;
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix);
  void WeightsUpdated();

  PackedMatrix w1_, w2_;  // with b1, b2
  std::vector<float> hidden_;             // [rows, ffn_dim]; grows
  // Training: W1^T and W2^T packed by the first Backward after the weights
  // changed; the gradients packed as the weights; workspaces. Held apart,
  // made by the first Backward: a program that never trains carries none
  // of its members' construction, moves or copies.
  struct Training {
    PackedMatrix w1_t, w2_t;
    std::vector<float> d_w1, d_b1, d_w2, d_b2;
    std::vector<float> d_hidden, weight_workspace;
    bool has_gradients = false;
  };
  TrainingOnly<Training> training_;
};

class LayerNorm {
 public:
  // On the given pool, or on the calling thread alone. Throws
  // std::invalid_argument naming eps unless it is finite and > 0.
  LayerNorm(size_t d_model, float eps, const KernelTable& kernels,
            std::shared_ptr<ThreadPool> pool);
  LayerNorm(size_t d_model, float eps, const KernelTable& kernels);
  void SetWeights(const char* name, const NormWeights& w);
  void Forward(const float* x, size_t rows, float* out) const;

 private:
  size_t d_model_;
  float eps_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<float> gamma_, beta_;
};

// LayerNorm over the last dimension of x (rows of x.features floats) on the
// given kernels, without a LayerNorm object: out = (x - mean) / sqrt(var +
// eps) * gamma + beta. Throws std::invalid_argument naming x, gamma, beta or
// eps when a length does not fit, a value is not finite or eps is not a
// positive float32; std::range_error when x is so large that the variance
// would overflow float32. eps is a double so that one too large for float32
// is refused, not rounded to +inf.
std::vector<float> LayerNormForward(const Tensor3& x, const NormWeights& w,
                                    double eps, const KernelTable& kernels,
                                    const ArgNames& names = CppArgNames());

// A layer's self-attention options besides causal and key padding, with
// MhaOptions' meaning: the key window, scale, soft-capping, additive and
// boolean masks (with the shapes they broadcast from) and valid key lengths.
struct SelfAttentionOptions {
  std::array<int64_t, 2> window{-1, -1};
  std::optional<double> scale;
  std::optional<double> softcap;
  std::span<const float> attn_mask;
  std::vector<size_t> attn_mask_shape;
  std::span<const uint8_t> bool_mask;
  std::vector<size_t> bool_mask_shape;
  std::span<const size_t> kv_lengths;
};

// The attention options a layer's self-attention runs with (causal and key
// padding are the layer's to add).
MhaOptions SelfAttentionMhaOptions(const SelfAttentionOptions& options);

struct EncoderOptions {
  std::span<const uint8_t> key_padding_mask;  // [B, T], nonzero = real
  bool causal = false;
  // As MhaOptions::causal_alignment (over T queries and T keys both
  // alignments are j <= i; taken for one set of values everywhere).
  CausalAlignment causal_alignment = CausalAlignment::kBottomRight;
  SelfAttentionOptions self_attention;
  // Keep what Backward needs (as MhaOptions::training), until the next
  // forward or SetWeights.
  bool training = false;
};

// An encoder layer's gradients, named like SetWeights' arguments.
struct EncoderGradients {
  std::vector<float> d_input;  // [B, T, d_model]
  MhaGradients attention;      // its d_input: of the attention's own input
  FfnGradients ffn;
  NormGradients norm1, norm2;
};

class TransformerBlock;

// What the encoder and decoder layers share: their config, and the block of
// LayerNorm sublayers (transformer_block.h) each is an instance of, which
// they run, train and report on.
class BlockLayer : public Trainable {
 public:
  // The layers' blocks: [self-attention, FFN] and [self-attention,
  // cross-attention, FFN], their parts named as the layers name them.
  enum class Form { kEncoder, kDecoder };

  BlockLayer(BlockLayer&&) noexcept;
  BlockLayer& operator=(BlockLayer&&) noexcept;
  ~BlockLayer() override;
  // Trainable: its parts' parameters, named as SetWeights names them
  // ("attention.w_q", "ffn.w1", "norm1.gamma"; the decoder's
  // "self_attention.w_q", "cross_attention.w_q", ...).
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) override;
  void ParametersUpdated() override;
  const KernelTable& kernels() const override;
  ThreadPool& pool() const override;

  // The config with threads and names resolved.
  const LayerConfig& config() const { return config_; }
  // Bytes of the weight matrices as held (config.weights), biases apart.
  size_t WeightBytes() const;

 protected:
  // On the config's backend's best kernels and the shared pool of its
  // threads, or on the kernels and (if not null) pool given.
  BlockLayer(const LayerConfig& config, Form form);
  BlockLayer(const LayerConfig& config, Form form, const KernelTable& kernels,
             std::shared_ptr<ThreadPool> pool);

  LayerConfig config_;
  std::unique_ptr<TransformerBlock> block_;
};

// The constructors of the layer of form kForm.
template <BlockLayer::Form kForm>
class BlockLayerOf : public BlockLayer {
 public:
  explicit BlockLayerOf(const LayerConfig& config) : BlockLayer(config, kForm) {}
  // On the given pool if not null (config.threads is then ignored).
  BlockLayerOf(const LayerConfig& config, const KernelTable& kernels,
               std::shared_ptr<ThreadPool> pool = nullptr)
      : BlockLayer(config, kForm, kernels, std::move(pool)) {}
};

// The block [self-attention, FFN], each sublayer with its LayerNorm after
// its residual sum (post-LN) or before it (pre-LN).
class TransformerEncoderLayer : public BlockLayerOf<BlockLayer::Form::kEncoder> {
 public:
  using BlockLayerOf::BlockLayerOf;
  void SetWeights(const MhaWeights& attention, const FfnWeights& ffn,
                  const NormWeights& norm1, const NormWeights& norm2);
  // [B, T, d_model] -> [B, T, d_model].
  std::vector<float> Forward(const Tensor3& x, const EncoderOptions& options = {});
  // The gradients of the last forward, a training one, given d_output =
  // dL/d(output) of the output's shape [B, T, d_model]. Throws
  // std::logic_error without one, std::invalid_argument for another shape, a
  // wrong length or a non-finite value (naming d_output); the saved state
  // stays.
  EncoderGradients Backward(const Tensor3& d_output);
  // The same into `gradients`, reused: its vectors keep their storage.
  void Backward(const Tensor3& d_output, EncoderGradients& gradients);
};

struct DecoderOptions {
  bool causal = true;                                // self-attention
  CausalAlignment causal_alignment = CausalAlignment::kBottomRight;  // as EncoderOptions'
  std::span<const uint8_t> key_padding_mask;         // [B, T] of x
  std::span<const uint8_t> memory_key_padding_mask;  // [B, S] of memory
  SelfAttentionOptions self_attention;
  // Keep what Backward needs, until the next forward or SetWeights; only
  // Forward(x, memory) (a precomputed memory keeps no memory to
  // differentiate).
  bool training = false;
};

// A decoder layer's gradients, named like SetWeights' arguments.
struct DecoderGradients {
  std::vector<float> d_input;   // [B, T, d_model]
  std::vector<float> d_memory;  // [B, S, d_model]
  MhaGradients self_attention, cross_attention;
  FfnGradients ffn;
  NormGradients norm1, norm2, norm3;
};

// The block [self-attention, cross-attention, FFN], LayerNorms as the
// encoder's.
class TransformerDecoderLayer : public BlockLayerOf<BlockLayer::Form::kDecoder> {
 public:
  using BlockLayerOf::BlockLayerOf;
  void SetWeights(const MhaWeights& self_attention,
                  const MhaWeights& cross_attention, const FfnWeights& ffn,
                  const NormWeights& norm1, const NormWeights& norm2,
                  const NormWeights& norm3);
  // x [B, T, d_model], memory [B, S, d_model] -> [B, T, d_model].
  std::vector<float> Forward(const Tensor3& x, const Tensor3& memory,
                             const DecoderOptions& options = {});
  // Same, with the memory's cross-attention K/V projected once
  // (cross_attention().PrecomputeKeyValue); its padding mask applies.
  std::vector<float> Forward(const Tensor3& x, const PrecomputedKV& memory,
                             const DecoderOptions& options = {});
  // The memory's keys and values for the cross-attention, projected once
  // (as cross_attention().PrecomputeKeyValue, the memory named as the
  // layer's): for Forward and ForwardIncremental.
  PrecomputedKV PrecomputeMemory(const Tensor3& memory,
                                 std::span<const uint8_t> key_padding_mask = {});
  // One decoding step: n new tokens x [B, n, d_model] against the
  // self-attention cache (self_attention().CreateKVCache) and the memory;
  // masks in `self_attention` cover the cache's length + n keys.
  // On any error the cache keeps the tokens it had.
  std::vector<float> ForwardIncremental(const Tensor3& x, KVCache& cache,
                                        const PrecomputedKV& memory,
                                        const SelfAttentionOptions& self_attention = {});
  // As TransformerEncoderLayer::Backward, with the memory's gradient too.
  DecoderGradients Backward(const Tensor3& d_output);
  void Backward(const Tensor3& d_output, DecoderGradients& gradients);
  MultiHeadAttention& self_attention();
  MultiHeadAttention& cross_attention();
};

// Sinusoidal positional encoding [t, d_model]: PE[p, 2i] = sin(p / 10000^(2i/d)),
// PE[p, 2i+1] = cos(p / 10000^(2i/d)).
std::vector<float> PositionalEncoding(size_t t, size_t d_model,
                                      const ArgNames& names = CppArgNames());

}  // namespace simd_attention
