// The public C++ API: multi-head self- and cross-attention.
//
// Weights use the X @ W layout (rows = inputs), the transpose of
// torch.nn.Linear.weight. Head h owns columns h*d_k..(h+1)*d_k-1 of w_q and
// w_k, columns h*d_v.. of w_v and rows h*d_v.. of w_o.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "simd_attention/arg_names.h"
#include "simd_attention/backend.h"
#include "simd_attention/causal_alignment.h"
#include "simd_attention/kv_cache.h"
#include "simd_attention/norm_kind.h"
#include "simd_attention/packed_matrix.h"
#include "simd_attention/scores_stage.h"
#include "simd_attention/trainable.h"
#include "simd_attention/training_only.h"
#include "simd_attention/tensor.h"
#include "simd_attention/weight_type.h"

namespace simd_attention {

class AttentionCall;
class ThreadPool;
class ComputedScan;
struct GemmEpilogue;
struct KernelTable;
class Optimizer;
class TinyTransformer;

// Rotary position embedding of each head's projected queries and keys
// (after the bias, before the scores): feature pairs rotated by
// pos * base^(-2i / rotary_dim); features from rotary_dim on stay as they are.
enum class RopeStyle {
  kNone,
  kHalf,         // pairs i and i + rotary_dim / 2 (GPT-NeoX, Llama)
  kInterleaved,  // pairs 2i and 2i + 1 (GPT-J)
};
struct RopeConfig {
  RopeStyle style = RopeStyle::kNone;
  double base = 10000.0;
  size_t rotary_dim = 0;  // even, <= head_dim; 0 = head_dim
};

// QK-norm (Qwen3, Gemma 3, OLMo 2): each head of the projected queries and
// keys normalized over its head_dim features (RMSNorm, times
// MhaWeights::q_norm or k_norm), after the bias and before the rotary
// embedding.
struct QkNormConfig {
  bool enabled = false;
  NormKind kind = NormKind::kRmsNorm;  // an RMSNorm kind
  double eps = 1e-6;                    // a double for the reason LayerConfig::eps is
};

struct MhaConfig {
  size_t d_model = 0;
  size_t num_heads = 0;
  size_t kdim = 0;        // features of the keys; 0 = d_model
  size_t vdim = 0;        // features of the values; 0 = d_model
  // d_k; 0 = d_model / num_heads. Any width otherwise: an attention may own
  // some heads of a wider model (a worker of a head-sharded pool), so
  // num_heads * head_dim need not be d_model.
  size_t head_dim = 0;
  size_t head_dim_v = 0;  // d_v; 0 = head_dim
  // Key/value heads (grouped-query attention): divides num_heads; query head
  // h reads key/value head h / (num_heads / num_kv_heads); w_k, w_v, the KV
  // cache and precomputed K/V hold only these. 0 = num_heads.
  size_t num_kv_heads = 0;
  RopeConfig rope;
  QkNormConfig qk_norm;
  bool bias = true;
  Backend backend = Backend::kHighway;
  // Threads a forward runs on, the caller's included: a pool shared by
  // every object asking for the same count. 0 = ThreadPool::DefaultThreads()
  // (the physical cores, at most 16). Each loop wakes as many as its work
  // pays for, at most one per processor. Results are bit-identical for
  // every count.
  size_t threads = 1;
  // How W_Q, W_K, W_V and W_O are held (kernels/gemm.h widens them as it
  // loads them; the arithmetic stays float32).
  WeightType weights = WeightType::kF32;
  // How KV caches and precomputed K/V of this attention hold keys and
  // values: float32, float16 or bfloat16 (not int8); the attention kernel
  // widens them a key block at a time.
  WeightType cache_type = WeightType::kF32;
  // How error messages name arguments; nullptr = CppArgNames(). A binding
  // passes its language's names (see arg_names.h).
  const ArgNames* names = nullptr;
};

struct MhaWeights {
  std::span<const float> w_q;  // [d_model, H * d_k]
  std::span<const float> w_k;  // [kdim, H * d_k]
  std::span<const float> w_v;  // [vdim, H * d_v]
  std::span<const float> w_o;  // [H * d_v, d_model]
  std::span<const float> b_q;  // [H * d_k]; all four empty when !bias
  std::span<const float> b_k;  // [H * d_k]
  std::span<const float> b_v;  // [H * d_v]
  std::span<const float> b_o;  // [d_model]
  // Or W_Q, W_K, W_V, W_O already in config.weights' type (a float16,
  // bfloat16 or int8 checkpoint), each in place of its float32 field above.
  StoredMatrix stored_w_q, stored_w_k, stored_w_v, stored_w_o;
  // QK-norm's scales, [head_dim] each, shared by every head (as stored:
  // gamma - 1 for kGemmaRmsNorm); empty unless config.qk_norm.enabled.
  std::span<const float> q_norm, k_norm;
};

struct MhaOptions {
  // Query i attends to keys j <= i + (Tk - Tq): bottom-right aligned, as
  // when decoding with a cache; or j <= i with causal_alignment kTopLeft
  // (PyTorch's is_causal). ForwardIncremental is always bottom-right.
  bool causal = false;
  CausalAlignment causal_alignment = CausalAlignment::kBottomRight;
  std::span<const uint8_t> key_padding_mask;  // [B, Tk], nonzero = real token
  // Or the number of real keys of each batch item, [B]: keys j >=
  // kv_lengths[b] are masked (combined with key_padding_mask if both).
  std::span<const size_t> kv_lengths;
  // Added to the scaled scores; may hold -inf. Without a shape: [Tq, Tk] or
  // [B, H, Tq, Tk] by its length; with one, any shape that broadcasts to
  // [B, H, Tq, Tk]: [Tq, Tk], [B, 1, Tq, Tk], [1, H, Tq, Tk], [B, H, Tq, Tk].
  std::span<const float> attn_mask;
  std::vector<size_t> attn_mask_shape;
  // 1 = may attend, 0 = masked; shapes as attn_mask's.
  std::span<const uint8_t> bool_mask;
  std::vector<size_t> bool_mask_shape;
  bool need_weights = false;          // fill MhaResult::attn_weights
  bool need_scores = false;           // fill MhaResult::scores, at scores_stage
  ScoresStage scores_stage = ScoresStage::kMasked;
  bool need_per_head_output = false;  // fill MhaResult::per_head_output
  // Fill MhaResult::q, k, v and head_output: the intermediate per-head
  // tensors, for inspecting and teaching (copies; the fast path never
  // keeps them in this layout).
  bool need_intermediates = false;
  // Key window [left, right] around each query's diagonal (i + Tk - Tq when
  // causal, else i): key j is visible iff i' - left <= j <= i' + right; -1 =
  // unbounded. Key blocks outside are never computed.
  std::array<int64_t, 2> window{-1, -1};
  // Query i at key position i' = query_offset + i for the causal mask and
  // the window, in place of the alignment's (one value, or one per batch
  // item; see SdpaOptions::query_offset).
  std::span<const int64_t> query_offset;
  std::optional<double> scale;    // default 1 / sqrt(head_dim)
  std::optional<double> softcap;  // c > 0: scores -> c * tanh(scores / c)
  // Rotary positions of the first query (and, in self-attention, key):
  // as after this many earlier tokens. ForwardIncremental uses the cache's
  // length instead.
  size_t position_offset = 0;
  // Training: keep what Backward needs (copies of the inputs and masks, the
  // projected Q, K, V, the attention output and each query's log-sum-exp)
  // until the next forward or ReleaseTraining(). Forward(x) and
  // Forward(query, key, value) only.
  bool training = false;
};

// A query row whose every key is masked gets all-zero probabilities and a
// zero attention output (so its output row is b_o), never NaN. Every mask
// combines: a key is attended only if every mask allows it.
struct MhaResult {
  size_t batch = 0, tq = 0, tk = 0;
  std::vector<float> output;           // [B, Tq, d_model]
  std::vector<float> attn_weights;     // [B, H, Tq, Tk], if requested
  // [B, H, Tq, Tk], if requested, at options.scores_stage: by default the
  // scaled, capped and masked scores the softmax takes (-inf where masked).
  std::vector<float> scores;
  std::vector<float> q;                // [B, H, Tq, d_k], if intermediates
  std::vector<float> k;                // [B, H_kv, Tk, d_k]
  std::vector<float> v;                // [B, H_kv, Tk, d_v]
  std::vector<float> head_output;      // [B, H, Tq, d_v]: z_h = P_h V_h
  std::vector<float> per_head_output;  // [B, H, Tq, d_model], if requested:
                                       // z_h W_O^h, output = sum_h + b_o
};

// Gradients of a loss L with respect to a training forward's inputs and to
// every weight and bias, given dL/d(output): each in the shape of what it
// differentiates (weights in the X @ W layout).
struct MhaGradients {
  std::vector<float> d_query;  // [B, Tq, d_model]
  std::vector<float> d_key;    // [B, Tk, kdim]
  std::vector<float> d_value;  // [B, Tk, vdim]
  // Self-attention (query, key and value were one tensor, Forward(x)): its
  // gradient, d_query + d_key + d_value; else empty.
  std::vector<float> d_input;
  std::vector<float> d_w_q, d_w_k, d_w_v, d_w_o;
  std::vector<float> d_b_q, d_b_k, d_b_v, d_b_o;  // empty when !config.bias
  // QK-norm's scales' [head_dim] (as stored: also the gradient of
  // gamma - 1); empty without config.qk_norm.
  std::vector<float> d_q_norm, d_k_norm;
};

class MultiHeadAttention : public Trainable {
 public:
  // Throws std::invalid_argument for an invalid config (message names it).
  explicit MultiHeadAttention(const MhaConfig& config);
  // Runs on the given kernels (one target of one backend) instead of the
  // backend's best, for tests and benchmarks that compare targets; and on
  // the given pool if not null (config.threads is then pool->threads()),
  // e.g. one pool an application shares between its own work and these
  // objects.
  MultiHeadAttention(const MhaConfig& config, const KernelTable& kernels,
                     std::shared_ptr<ThreadPool> pool = nullptr);

  // Copies and packs the weights; throws std::invalid_argument on a wrong
  // length or a non-finite value.
  void SetWeights(const MhaWeights& weights);

  MhaResult Forward(const Tensor3& x, const MhaOptions& options = {});
  MhaResult Forward(const Tensor3& query, const Tensor3& key,
                    const Tensor3& value, const MhaOptions& options = {});

  // Cross-attention on keys and values projected once by
  // PrecomputeKeyValue (e.g. an encoder memory reused by every decoding
  // step). Without options.key_padding_mask, the mask given to
  // PrecomputeKeyValue applies. Stale after a later SetWeights.
  MhaResult Forward(const Tensor3& query, const PrecomputedKV& kv,
                    const MhaOptions& options = {});
  PrecomputedKV PrecomputeKeyValue(
      const Tensor3& memory, std::span<const uint8_t> key_padding_mask = {});

  // A cache for up to max_length tokens of this attention's keys/values.
  KVCache CreateKVCache(size_t batch, size_t max_length) const;
  // Self-attention of n new tokens x [B, n, d_model]: projects their keys
  // and values into the cache, then attends causally over all it holds.
  // options.causal is implied; a key_padding_mask covers [B, length + n].
  // Throws std::length_error if the cache is full; on any error the cache
  // keeps the tokens it had.
  MhaResult ForwardIncremental(const Tensor3& x, KVCache& cache,
                               const MhaOptions& options = {});

  // The gradients of the last forward, which must have been a training one
  // (MhaOptions::training), given d_output = dL/d(output) of the forward
  // output's shape [B, Tq, d_model]. Throws std::logic_error without one,
  // std::invalid_argument for another shape, a wrong length or a non-finite
  // value (naming d_output); the saved state stays, so Backward may be
  // called again.
  MhaGradients Backward(const Tensor3& d_output);
  // The same into `gradients`, whose vectors keep their storage when already
  // of the right size (a training loop reuses one: no allocation per step).
  // Its values are unspecified after a std::range_error.
  void Backward(const Tensor3& d_output, MhaGradients& gradients);
  // Frees what a training forward kept (as the next forward does).
  void ReleaseTraining();
  // Trainable: every weight and bias with its last Backward's gradient in
  // the packed layout, named `prefix` + config.names' name ("w_q"); after
  // an update, W^T and the training state are stale. (A program without the
  // training library refuses: RefuseTrainingInThisBuild.)
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) override;
  void ParametersUpdated() override;

  // The config with defaults resolved (kdim, vdim, head_dim, head_dim_v,
  // threads and names filled in).
  const MhaConfig& config() const { return config_; }
  size_t head_dim() const { return config_.head_dim; }
  size_t head_dim_v() const { return config_.head_dim_v; }
  const KernelTable& kernels() const override { return *kernels_; }
  ThreadPool& pool() const override { return *pool_; }
  // Bytes of W_Q, W_K, W_V and W_O as held (config.weights; int8 with its
  // scales), biases apart.
  size_t WeightBytes() const {
    return q_.WeightBytes() + k_.WeightBytes() + v_.WeightBytes() + o_.WeightBytes();
  }
  const std::shared_ptr<ThreadPool>& shared_pool() const { return pool_; }

 private:
  // Projected keys/values in the padded layout, where their strides say:
  // token-major as projected (TokenMajor) or a cache's head-major rows.
  struct KVView {
    const void* k;  // of `type` elements
    const void* v;
    WeightType type;
    size_t tk;
    KVStrides k_at, v_at;
    double max_abs_key;  // largest |k|, bounds the scores (CheckScoreRange)
    // int8: the scales of the rows at k and v (KVRows::scale_at), one per
    // head row; else nullptr.
    const float* k_scales = nullptr;
    const float* v_scales = nullptr;
  };
  // The strides of token-major padded rows, rows_per_batch rows a batch
  // item: keys (key_row, dk_pad) or values (value_row, dv_pad).
  static KVStrides TokenMajor(size_t rows_per_batch, size_t row, size_t head_pad) {
    return {rows_per_batch * row, head_pad, row};
  }

  // Keys and values of key.batch items (key, value [B, T, *]) projected
  // into kv_workspace_, the keys turned from position key_pos0, checked
  // finite and within `store`'s range (the cache they go to); messages name
  // "the key projection <key_source> W_k + b_k".
  struct ProjectedKV {
    float* k;
    float* v;
    double max_abs_key;
  };
  ProjectedKV ProjectKeysValues(const Tensor3& key, const Tensor3& value, size_t key_pos0,
                                const char* key_source, const char* value_source,
                                WeightType store);
  // A projection's weight (read and checked, see packed_weights.h) and bias
  // packed in config.weights, each head's columns padded from head_in to
  // head_out.
  PackedMatrix PackProjection(const char* name, std::span<const float> w,
                              const StoredMatrix& stored, std::span<const float> b, size_t rows,
                              size_t heads, size_t head_in, size_t head_out) const;
  // out = x W + b for `batch` items of `tokens` rows (row stride ldc). Each
  // task then, on the columns it wrote while they are in its cache, turns
  // them by QK-norm (each head times `head_norm`; nullptr: none) and the
  // rotary embedding (config.rope; token t at position *rotate_from + t;
  // nullptr: none) and scans them for `scan`.
  void Project(const float* x, size_t batch, size_t tokens, const PackedMatrix& p, float* out,
               size_t ldc, ComputedScan& scan, const size_t* rotate_from = nullptr,
               const float* head_norm = nullptr);
  // QK-norm's effective scales (1 + stored for kGemmaRmsNorm), or nullptr
  // without QK-norm.
  const float* QueryNorm() const { return q_norm_.empty() ? nullptr : q_norm_.data(); }
  const float* KeyNorm() const { return k_norm_.empty() ? nullptr : k_norm_.data(); }
  // Rotary angle rows (kernels/rope.h) of positions [pos0, pos0 + tokens).
  const float* RopeAngles(size_t pos0, size_t tokens);
  void CheckReady() const;
  // The call's scale, window and masks checked against [B, H, Tq, Tk],
  // before anything changes (ForwardIncremental: the cache).
  AttentionCall Call(const Tensor3& query, size_t tk, const MhaOptions& options) const;
  // Allocates the outputs the options ask for, before any workspace grows:
  // a request too large to allocate fails with nothing else changed.
  MhaResult PrepareResult(const Tensor3& query, size_t tk,
                          const MhaOptions& options) const;
  // The attention proper once K and V are projected.
  // The queries' rotary positions start at query_pos0.
  MhaResult Attend(const Tensor3& query, const KVView& kv, const AttentionCall& call,
                   const MhaOptions& options, size_t query_pos0, MhaResult r);

  // The record a training forward passes to Backward, which reads nothing
  // else of the forward's: views of the caller's data are copied, so
  // nothing dangles when the caller frees them.
  struct TrainingState {
    bool ready = false;  // a training forward succeeded since the last release
    bool self = false;   // query, key and value were one tensor
    size_t batch = 0, tq = 0, tk = 0;
    size_t query_pos0 = 0, key_pos0 = 0;  // rotary positions of the first rows
    std::vector<float> query, key, value;  // key, value empty when self
    std::vector<float> softmax_stats;      // [B, H, Tq, 2], the kernel's
    // The forward's Q and Z, and K and V (the padded head layout of its
    // workspaces, rotated and normalized as the attention took them).
    AlignedVector<float> projected, projected_kv;  // swapped with the workspaces
    MhaOptions options;                    // spans empty; the masks below
    std::vector<float> attn_mask;
    std::vector<uint8_t> bool_mask, key_padding_mask;
    std::vector<size_t> kv_lengths;
    std::vector<int64_t> query_offset;
  };
  // Keeps the inputs and masks of a training forward (before it runs).
  void SaveForBackward(const Tensor3& query, const Tensor3& key, const Tensor3& value,
                       const MhaOptions& options);
  // Backward's parts: RoPE's backward of d [batch * tokens rows, ld] in
  // place (row t of each batch item turned back from position pos0 + t),
  // and QK-norm's, whose result (the gradient before the norm, in
  // backward_) it returns; the scales' gradient into both vectors.
  void UnrotateGradient(float* d, size_t batch, size_t tokens, size_t heads, size_t ld,
                        size_t pos0);
  const float* NormBackward(const float* x, size_t rows, const PackedMatrix& projection,
                            size_t heads, size_t ld, const std::vector<float>& scales,
                            const float* d_normed, std::vector<float>& packed_d_scales,
                            std::vector<float>& d_scales);
  // Refuses options.training in a forward that cannot keep its state.
  [[noreturn]] static void RefuseTraining(const char* forward);
  // A model of these (tiny_model.h) reads their packed weights back.
  friend class TinyTransformer;

  MhaConfig config_;  // threads resolved (never 0)
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  KVLayout layout_;  // head widths padded to whole vectors
  bool has_weights_ = false;
  PackedMatrix q_, k_, v_, o_;
  std::vector<float> q_norm_, k_norm_;  // QK-norm's effective scales
  // As given, for a kind stored as gamma - 1 (what an optimizer updates;
  // q_norm_ and k_norm_ follow them); else empty.
  std::vector<float> stored_q_norm_, stored_k_norm_;
  AlignedVector<float> kv_workspace_;  // K, V projected by Forward; grows
  AlignedVector<float> workspace_;     // Q, Z and attention scratch; grows
  // Rotary angles of positions [0, rope_positions_), kept: a decoder steps
  // through them one token at a time. A call far past them gets its own
  // rows in rope_call_angles_.
  std::vector<float> rope_angles_;
  size_t rope_positions_ = 0;
  std::vector<float> rope_call_angles_;
  // What Backward keeps between calls, made by the first one.
  struct BackwardState {
    // W_Q^T, W_K^T, W_V^T, W_O^T packed for dX = dY W^T; stale once the
    // weights change.
    bool has_transposed = false;
    PackedMatrix q_t, k_t, v_t, o_t;
    std::vector<float> grad_workspace;    // dZ, dQ, dK, dV; grows
    std::vector<float> weight_workspace;  // WeightGradients'; grows
    // QK-norm's: Q or K before it (projected again), the gradient before
    // it, and d_y * xhat; grow.
    std::vector<float> pre_norm, d_pre_norm, norm_dy_xhat;
    std::vector<float> grad_q_norm, grad_k_norm;  // the last Backward's
    // The last Backward's weight and bias gradients, packed as q_ ... o_.
    bool has_gradients = false;
    PackedMatrix grad_q, grad_k, grad_v, grad_o;
  };
  // Both held apart: a program that never trains (the package's inference
  // builds) carries none of their members' construction, moves or copies.
  TrainingOnly<TrainingState> training_;
  TrainingOnly<BackwardState> backward_;
};

}  // namespace simd_attention
