// A tiny trainable language model around the attention: token embedding +
// sinusoidal positions, a stack of causal self-attention layers (each a
// TransformerBlock of [self-attention, optional FFN] with residual sums and
// norm placement 'none'), a projection to the vocabulary and softmax
// cross-entropy, with its backward. It exists to show
// attention learning small tasks (copy the previous token, reverse a
// sequence, induction) where a visitor can watch: every step is the fast
// forward and backward kernels, and Optimizer::Step(model) updates all of
// it in place.
//
//   x = E[token] + PE[position]                      E [vocab, d_model]
//   per layer: x += MHA(x) (causal, with bias); x += FFN(x) if ffn_dim > 0
//   logits = x U + c                                 U [d_model, vocab]
//   loss = mean over scored positions of -log softmax(logits)[target]
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "simd_attention/activation.h"
#include "simd_attention/backend.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/packed_matrix.h"
#include "simd_attention/trainable.h"
#include "simd_attention/transformer_block.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention {

struct TinyModelConfig {
  size_t vocab = 0;
  size_t d_model = 0;
  size_t num_heads = 0;  // divides d_model
  size_t num_layers = 0;
  size_t max_tokens = 0;  // longest row Forward takes (positions 0 .. max_tokens - 1)
  size_t ffn_dim = 0;     // 0: attention-only layers
  Activation activation = Activation::kRelu;  // the FFN's
  uint64_t seed = 0;      // of the initial weights (Reset)
  std::optional<Backend> backend;  // empty: Highway, which every build has
  size_t threads = 1;     // as MhaConfig::threads; 0 = ThreadPool::DefaultThreads()
  const ArgNames* names = &CppArgNames();  // for messages, as MhaConfig::names
};

struct TinyForwardOptions {
  // Keep what Backward needs, until the next forward or optimizer step.
  bool training = false;
  bool need_weights = false;  // fill TinyModelResult::attn_weights
};

struct TinyModelResult {
  double loss = 0;      // mean cross-entropy over the scored positions; 0 if none
  double accuracy = 0;  // share of scored positions whose argmax logit is the target
  size_t counted = 0;   // scored positions (targets != -1)
  std::vector<float> logits;  // [B, T, vocab]
  std::vector<std::vector<float>> attn_weights;  // per layer [B, H, T, T], if requested
};

// Every parameter, in the X @ W layout (rows = inputs) as MhaWeights.
struct TinyLayerWeights {
  std::vector<float> w_q, w_k, w_v, w_o;  // [d_model, d_model]
  std::vector<float> b_q, b_k, b_v, b_o;  // [d_model]
  std::vector<float> w1, b1, w2, b2;      // [d_model, ffn_dim] ...; empty without an FFN

  // Views of the layer's parts, as its attention and FFN take them.
  MhaWeights Attention() const {
    return {.w_q = w_q, .w_k = w_k, .w_v = w_v, .w_o = w_o,
            .b_q = b_q, .b_k = b_k, .b_v = b_v, .b_o = b_o,
            .stored_w_q = {}, .stored_w_k = {}, .stored_w_v = {}, .stored_w_o = {},
            .q_norm = {}, .k_norm = {}};
  }
  FfnWeights Ffn() const { return {w1, b1, w2, b2, {}, {}}; }
};
struct TinyModelWeights {
  std::vector<float> embedding;  // [vocab, d_model]
  std::vector<TinyLayerWeights> layers;
  std::vector<float> unembedding;       // [d_model, vocab]
  std::vector<float> unembedding_bias;  // [vocab]
};

class TinyTransformer : public Trainable {
 public:
  // Throws std::invalid_argument naming the config field (a size 0,
  // num_heads not dividing d_model, ...), SizeLimitError for sizes that do
  // not fit. The weights start as Reset(config.seed) sets them.
  explicit TinyTransformer(const TinyModelConfig& config);
  // On the given kernels (one target of one backend), for tests and
  // benchmarks that compare targets; config.backend is then ignored. On the
  // given pool if not null (config.threads is then pool->threads()).
  TinyTransformer(const TinyModelConfig& config, const KernelTable& kernels,
                  std::shared_ptr<ThreadPool> pool = nullptr);
  ~TinyTransformer();
  TinyTransformer(const TinyTransformer&) = delete;
  TinyTransformer& operator=(const TinyTransformer&) = delete;

  // tokens and targets [batch, tokens_per_row], row-major: token ids in
  // [0, vocab), targets in [0, vocab) or -1 (not scored). Throws
  // std::invalid_argument naming the argument for a wrong length, an id out
  // of range or tokens_per_row outside [1, max_tokens].
  TinyModelResult Forward(std::span<const int32_t> tokens, std::span<const int32_t> targets,
                          size_t batch, size_t tokens_per_row,
                          const TinyForwardOptions& options = {});
  // The gradients of the last forward's loss (a training one) into every
  // parameter, for Optimizer::Step and Gradients(). Throws std::logic_error
  // without a training forward since the last step, Reset or SetWeights.
  void Backward();

  // Re-initializes every weight from `seed`, as torch initializes its
  // modules (see tiny_model.cc), from a generator that gives the same
  // numbers on every platform; drops the training state (an optimizer
  // keeps its moments for this object until Forget(model)).
  void Reset(uint64_t seed);
  // The weights as the model computes with them (after any optimizer steps).
  TinyModelWeights Weights() const;
  // Replaces every weight; throws std::invalid_argument naming the field
  // ("weights.layers[1].w_q: ...") for a wrong length or layer count or a
  // non-finite value, leaving the model as it was.
  void SetWeights(const TinyModelWeights& weights);
  // The last Backward's gradients in the weights' layout; std::logic_error
  // without one.
  TinyModelWeights Gradients() const;

  // Trainable: every parameter with its last Backward's gradient, packed as
  // the model computes with it (the embedding, each layer's attention and
  // FFN, the unembedding and its bias), named as SetWeights names them
  // ("weights.layers[0].w_q"); after an update the transposes and the
  // training state are stale.
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) override;
  void ParametersUpdated() override;

  // The config with defaults resolved (backend, threads).
  const TinyModelConfig& config() const { return config_; }
  const KernelTable& kernels() const override { return *kernels_; }
  ThreadPool& pool() const override { return *pool_; }

 private:
  TinyModelConfig config_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<float> positions_;  // PE [max_tokens, d_model]
  std::vector<float> embedding_;  // [vocab, d_model]
  // Each [self-attention, FFN if ffn_dim > 0], causal, no norms: the
  // layers' forward, training record, backward and parameters.
  std::vector<TransformerBlock> layers_;
  PackedMatrix unembedding_;  // U with c as its bias
  // Training: the last training forward's final x and dL/dlogits, its
  // tokens and shape; Backward's U^T and the gradients (the embedding's
  // [vocab, d_model], U's packed as unembedding_ and unpacked).
  struct Training;
  std::unique_ptr<Training> training_;
};

}  // namespace simd_attention
