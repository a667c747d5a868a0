// TinyTransformer: its config, weights (initialized, read back, replaced)
// and forward with the cross-entropy loss; the backward is
// tiny_model_backward.cc.
#include "simd_attention/tiny_model.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <numbers>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "dispatch/dispatch.h"
#include "kernels/sin_cos.h"
#include "training/gradients.h"
#include "storage/packed_weights.h"
#include "layers/transformer_block_parts.h"
#include "simd_attention/thread_pool.h"
#include "threading/parallel.h"
#include "threading/runs_on.h"
#include "training/tiny_model_parts.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

// The config's own checks, before anything is built from it (each attention
// checks that num_heads divides d_model when it is built).
TinyModelConfig Resolve(TinyModelConfig c) {
  const ArgNames& n = *c.names;
  CheckPositive(ConfigName(n.vocab), c.vocab);
  CheckPositive(ConfigName(n.d_model), c.d_model);
  CheckPositive(ConfigName(n.num_heads), c.num_heads);
  CheckPositive(ConfigName(n.num_layers), c.num_layers);
  CheckPositive(ConfigName(n.max_tokens), c.max_tokens);
  CheckedCount("embedding", {{n.vocab, c.vocab}, {n.d_model, c.d_model}});
  CheckedCount("positional encoding", {{n.max_tokens, c.max_tokens}, {n.d_model, c.d_model}});
  if (c.ffn_dim > 0) CheckedCount("ffn.w1", {{n.d_model, c.d_model}, {n.ffn_dim, c.ffn_dim}});
  return c;
}

// splitmix64 (Steele, Lea and Flood, 2014): integer arithmetic only, so
// every platform draws the same sequence, unlike the standard library's
// distributions (libstdc++ and emscripten's libc++ turn the same engine
// into different numbers).
class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), 53 bits.
  double Uniform() { return double(Next() >> 11) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one of each pair). log in double may
  // differ by an ulp between C libraries, cos (SinCos) from the C
  // library's; rounded to float, the weights agree but for a chance of
  // about 2^-29 per value.
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]: log is finite
    const double u2 = Uniform();
    double sin_angle, cos_angle;
    SinCos(2.0 * std::numbers::pi * u2, sin_angle, cos_angle);
    return std::sqrt(-2.0 * std::log(u1)) * cos_angle;
  }
  std::vector<float> UniformVector(size_t n, double bound) {
    std::vector<float> v(n);
    for (float& x : v) x = float((2.0 * Uniform() - 1.0) * bound);
    return v;
  }

 private:
  uint64_t state_;
};

// nn.Linear's default: weight and bias uniform in +-1/sqrt(fan_in).
std::vector<float> LinearInit(SeededRandom& random, size_t fan_in, size_t n) {
  return random.UniformVector(n, 1.0 / std::sqrt(double(fan_in)));
}

// Each layer: a causal self-attention with biases and an FFN if ffn_dim >
// 0, each added to the residual stream without a norm; the rest as
// BlockConfig's defaults (the pool given sets the threads).
BlockConfig LayerBlockConfig(const TinyModelConfig& c, Backend backend) {
  BlockConfig b;
  b.d_model = c.d_model;
  b.num_heads = c.num_heads;
  b.ffn_dim = c.ffn_dim;
  b.activation = c.activation;
  b.backend = backend;
  b.names = c.names;
  b.sublayers.push_back({MixerKind::kSelfAttention, NormPlacement::kNone});
  if (c.ffn_dim > 0) b.sublayers.push_back({MixerKind::kFeedForward, NormPlacement::kNone});
  return b;
}

std::string LayerField(size_t layer, const char* field) {
  return Cat({"weights.layers[", std::to_string(layer), "].", field});
}

// Token ids of `what` in [low, vocab) (low -1: a target may be -1).
void CheckIds(const char* what, std::span<const int32_t> ids, int32_t low, size_t vocab,
              const ArgNames& names) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < low || int64_t(ids[i]) >= int64_t(vocab)) {
      throw std::invalid_argument(Cat(
          {what, ": element ", std::to_string(i), " is ", std::to_string(ids[i]), ", expected ",
           low < 0 ? "-1 (not scored) or " : "", "a token id in [0, ", std::to_string(vocab),
           ") (", ConfigName(names.vocab), ")"}));
    }
  }
}

struct CrossEntropy {
  double loss = 0, accuracy = 0;
  size_t counted = 0;
};

// The mean softmax cross-entropy of logits [rows, vocab] over the rows with
// a target (targets[r] >= 0) and the share of them whose first largest
// logit is the target; with d_logits, its gradient: (softmax - onehot) /
// counted in those rows, zero in the others. Sums in double.
CrossEntropy SoftmaxCrossEntropy(const std::vector<float>& logits,
                                 std::span<const int32_t> targets, size_t vocab,
                                 std::vector<float>* d_logits) {
  CrossEntropy out;
  out.counted = size_t(std::count_if(targets.begin(), targets.end(),
                                     [](int32_t t) { return t >= 0; }));
  if (d_logits != nullptr) d_logits->assign(logits.size(), 0.0f);
  if (out.counted == 0) return out;
  const double per_scored = 1.0 / double(out.counted);
  std::vector<double> e(vocab);
  double loss = 0;
  size_t correct = 0;
  for (size_t r = 0; r < targets.size(); ++r) {
    if (targets[r] < 0) continue;
    const size_t target = size_t(targets[r]);
    const float* z = logits.data() + r * vocab;
    const size_t best = size_t(std::max_element(z, z + vocab) - z);
    double sum = 0;
    for (size_t i = 0; i < vocab; ++i) sum += e[i] = std::exp(double(z[i]) - double(z[best]));
    loss += std::log(sum) - (double(z[target]) - double(z[best]));
    correct += best == target ? 1 : 0;
    if (d_logits != nullptr) {
      float* g = d_logits->data() + r * vocab;
      for (size_t i = 0; i < vocab; ++i) {
        g[i] = float((e[i] / sum - (i == target ? 1.0 : 0.0)) * per_scored);
      }
    }
  }
  out.loss = loss * per_scored;
  out.accuracy = double(correct) / double(out.counted);
  return out;
}

// A weight's length and values, before anything changes.
void CheckWeight(std::string_view name, const std::vector<float>& w,
                 std::initializer_list<size_t> shape) {
  CheckLength(name, w.size(), shape);
  CheckFinite(name, w);
}

}  // namespace

TinyTransformer::TinyTransformer(const TinyModelConfig& config)
    : TinyTransformer(config, BestKernels(config.backend.value_or(Backend::kHighway))) {}

TinyTransformer::TinyTransformer(const TinyModelConfig& config, const KernelTable& kernels,
                                 std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)), kernels_(&kernels), pool_(std::move(pool)) {
  pool_ = RunsOn(config_, kernels, std::move(pool_));
  positions_ = PositionalEncoding(config_.max_tokens, config_.d_model);
  // The sublayers' residual sums named in messages as the model has always
  // named them; no norms to name; parameters named by TrainableParameters'
  // prefix ("weights.layers[0].") and their own names, as SetWeights
  // names them.
  const std::vector<TransformerBlock::PartNames> names = {
      {"the attention sublayer", "", "", "", "", "", ""},
      {"the feed-forward sublayer", "", "", "", "", "", ""}};
  const BlockConfig layer = LayerBlockConfig(config_, kernels.backend);
  for (size_t l = 0; l < config_.num_layers; ++l) {
    layers_.push_back(TransformerBlock(layer, kernels, pool_, names, true));
  }
  Reset(config_.seed);
}

TinyTransformer::~TinyTransformer() = default;

void TinyTransformer::Reset(uint64_t seed) {
  const TinyModelConfig& c = config_;
  const size_t d = c.d_model, v = c.vocab, f = c.ffn_dim;
  SeededRandom random(seed);
  TinyModelWeights w;
  // nn.Embedding's N(0, 1): of the standard deviations tried against the
  // sinusoidal positions (entries in [-1, 1]), with Adam at lr 3e-3 over 3
  // seeds, it trained fastest: the copy task (vocab 16, d_model 32, 1 layer)
  // in 180-240 steps at 1, 250-340 at 0.5, 280-320 at 0.2, 210-360 at 2;
  // the induction task (vocab 32, d_model 64, 2 layers) in 270-310 steps at
  // 1, 320-340 at 0.5, 580 at 0.2 and about 1950 at 2, where the tokens
  // drown the positions.
  w.embedding.resize(v * d);
  for (float& x : w.embedding) x = float(random.Normal());
  for (size_t l = 0; l < c.num_layers; ++l) {
    TinyLayerWeights& lw = w.layers.emplace_back();
    for (std::vector<float>* m : {&lw.w_q, &lw.w_k, &lw.w_v, &lw.w_o}) {
      *m = LinearInit(random, d, d * d);
    }
    for (std::vector<float>* b : {&lw.b_q, &lw.b_k, &lw.b_v, &lw.b_o}) {
      *b = LinearInit(random, d, d);
    }
    if (f > 0) {
      lw.w1 = LinearInit(random, d, d * f);
      lw.b1 = LinearInit(random, d, f);
      lw.w2 = LinearInit(random, f, f * d);
      lw.b2 = LinearInit(random, f, d);
    }
  }
  w.unembedding = LinearInit(random, d, d * v);
  w.unembedding_bias = LinearInit(random, d, v);
  SetWeights(w);
}

void TinyTransformer::SetWeights(const TinyModelWeights& w) {
  const TinyModelConfig& c = config_;
  const size_t d = c.d_model, v = c.vocab, f = c.ffn_dim;
  // Every check first: a weight refused leaves the model as it was.
  CheckWeight("weights.embedding", w.embedding, {v, d});
  const ArgNames& n = *c.names;
  CheckEqual("weights.layers", w.layers.size(), c.num_layers, ConfigName(n.num_layers));
  for (size_t l = 0; l < c.num_layers; ++l) {
    const TinyLayerWeights& lw = w.layers[l];
    for (auto [name, m] : {std::pair{n.w_q, &lw.w_q}, {n.w_k, &lw.w_k}, {n.w_v, &lw.w_v},
                           {n.w_o, &lw.w_o}}) {
      CheckWeight(LayerField(l, name), *m, {d, d});
    }
    for (auto [name, b] : {std::pair{n.b_q, &lw.b_q}, {n.b_k, &lw.b_k}, {n.b_v, &lw.b_v},
                           {n.b_o, &lw.b_o}}) {
      CheckWeight(LayerField(l, name), *b, {d});
    }
    // Without an FFN (config.ffn_dim 0) its weights are empty.
    CheckWeight(LayerField(l, "w1"), lw.w1, {d, f});
    CheckWeight(LayerField(l, "b1"), lw.b1, {f});
    CheckWeight(LayerField(l, "w2"), lw.w2, {f, d});
    CheckWeight(LayerField(l, "b2"), lw.b2, {f > 0 ? d : 0});
  }
  CheckWeight("weights.unembedding", w.unembedding, {d, v});
  CheckWeight(Cat({"weights.", n.unembedding_bias}), w.unembedding_bias, {v});

  embedding_ = w.embedding;
  std::vector<SublayerWeights> sublayers(layers_.empty() ? 0 : layers_[0].parts_.size());
  for (size_t l = 0; l < c.num_layers; ++l) {
    const TinyLayerWeights& lw = w.layers[l];
    sublayers[kAttentionSublayer].attention = lw.Attention();
    if (f > 0) sublayers[kFfnSublayer].ffn = lw.Ffn();
    layers_[l].SetWeights(sublayers);
  }
  unembedding_ = PackWeights(*kernels_, w.unembedding, {}, w.unembedding_bias, d, v,
                             WeightType::kF32);
  training_.reset();  // its state and gradients belonged to the old weights
}

TinyModelWeights TinyTransformer::Weights() const {
  const TinyModelConfig& c = config_;
  const size_t d = c.d_model, f = c.ffn_dim;
  const HeadDims model{1, d, d};
  TinyModelWeights w;
  w.embedding = embedding_;
  for (const TransformerBlock& layer : layers_) {
    TinyLayerWeights& lw = w.layers.emplace_back();
    const MultiHeadAttention& a = layer.attention(kAttentionSublayer);
    const HeadDims q{c.num_heads, a.layout_.dk, a.layout_.dk_pad};
    const HeadDims v{c.num_heads, a.layout_.dv, a.layout_.dv_pad};
    UnpackPadded(*kernels_, a.q_, model, q, lw.w_q, lw.b_q);
    UnpackPadded(*kernels_, a.k_, model, q, lw.w_k, lw.b_k);
    UnpackPadded(*kernels_, a.v_, model, v, lw.w_v, lw.b_v);
    UnpackPadded(*kernels_, a.o_, v, model, lw.w_o, lw.b_o);
    if (f > 0) {
      const FeedForward& ffn = *layer.parts_[kFfnSublayer].ffn;
      const HeadDims hidden{1, f, f};
      UnpackPadded(*kernels_, ffn.w1_, model, hidden, lw.w1, lw.b1);
      UnpackPadded(*kernels_, ffn.w2_, hidden, model, lw.w2, lw.b2);
    }
  }
  UnpackPadded(*kernels_, unembedding_, model, {1, c.vocab, c.vocab}, w.unembedding,
               w.unembedding_bias);
  return w;
}

TinyModelResult TinyTransformer::Forward(std::span<const int32_t> tokens,
                                         std::span<const int32_t> targets, size_t batch,
                                         size_t tokens_per_row,
                                         const TinyForwardOptions& options) {
  const TinyModelConfig& c = config_;
  const size_t d = c.d_model, v = c.vocab, t_max = c.max_tokens;
  CheckPositive("batch", batch);
  if (tokens_per_row == 0 || tokens_per_row > t_max) {
    ThrowInvalidArgument({c.names->tokens_per_row, ": expected 1 .. ", std::to_string(t_max), " (",
                          ConfigName(c.names->max_tokens), "), got ",
                          std::to_string(tokens_per_row)});
  }
  CheckLength("tokens", tokens.size(), {batch, tokens_per_row});
  CheckLength("targets", targets.size(), {batch, tokens_per_row});
  CheckIds("tokens", tokens, 0, v, *c.names);
  CheckIds("targets", targets, -1, v, *c.names);
  const size_t rows = batch * tokens_per_row;
  if (training_ != nullptr) training_->ready = false;  // until this forward succeeds

  // x = E[token] + PE[position].
  std::vector<float> x(CheckedCount("activations", {{"batch * tokens_per_row", rows},
                                                    {"d_model", d}}));
  for (size_t r = 0; r < rows; ++r) {
    kernels_->add(embedding_.data() + size_t(tokens[r]) * d,
                  positions_.data() + r % tokens_per_row * d, d, x.data() + r * d);
  }
  TinyModelResult result;
  const bool training = options.training;
  if (training && training_ == nullptr) training_ = std::make_unique<Training>();
  BlockOptions layer_options;
  layer_options.causal = true;
  layer_options.training = training;
  if (options.need_weights) result.attn_weights.resize(layers_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (options.need_weights) layer_options.attn_weights = &result.attn_weights[l];
    x = layers_[l].Forward({x, batch, tokens_per_row, d}, layer_options);
  }
  result.logits.resize(CheckedCount("logits", {{"batch * tokens_per_row", rows}, {"vocab", v}}));
  ParallelMultiplyPacked(*pool_, *kernels_, x.data(), rows, unembedding_, result.logits.data(), v);
  CheckComputed("the logits", result.logits, kTooLarge);

  Training* t = training ? training_.get() : nullptr;
  const CrossEntropy loss = SoftmaxCrossEntropy(result.logits, targets, v,
                                                t != nullptr ? &t->d_logits : nullptr);
  result.loss = loss.loss;
  result.accuracy = loss.accuracy;
  result.counted = loss.counted;
  if (t != nullptr) {
    t->x = std::move(x);
    t->tokens.assign(tokens.begin(), tokens.end());
    t->rows = rows;
    t->tokens_per_row = tokens_per_row;
    t->ready = true;
  }
  return result;
}

}  // namespace simd_attention
