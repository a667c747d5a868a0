// The layers around attention beyond what the PyTorch golden cases cover:
// pre-LN and GELU layers against the double-precision layer reference, the
// element-wise kernels (activation, LayerNorm, residual add) directly on
// every table, incremental decoding through a whole decoder layer, and
// configuration and weight errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "golden.h"
#include "incremental_util.h"
#include "random_mha.h"
#include "reference/layers_reference.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// Float kernels against the double reference through a whole layer.
constexpr double kLayerTol = 1e-4;
// One float path against another (same kernels, other tiling or caching).
constexpr double kTol = 1e-5;

// Every activation, with the name a failing check reports it by.
struct NamedActivation {
  Activation activation;
  const char* name;
};
constexpr NamedActivation kActivations[] = {{Activation::kRelu, "relu"},
                                            {Activation::kGeluTanh, "gelu_tanh"},
                                            {Activation::kGeluErf, "gelu_erf"}};

// Every weight of an encoder or decoder layer, owned; torch-like scales so
// activations stay O(1), and gamma/beta away from 1/0 so that a swapped or
// ignored norm weight shows.
struct LayerWeights {
  OwnedWeights self_attention, cross_attention;
  std::vector<float> w1, b1, w2, b2;
  std::vector<float> gamma[3], beta[3];

  FfnWeights Ffn() const { return {w1, b1, w2, b2}; }
  NormWeights Norm(int i) const { return {gamma[i - 1], beta[i - 1]}; }

  void SetOn(TransformerEncoderLayer& layer) const {
    layer.SetWeights(self_attention.View(), Ffn(), Norm(1), Norm(2));
  }
  void SetOn(TransformerDecoderLayer& layer) const {
    layer.SetWeights(self_attention.View(), cross_attention.View(), Ffn(), Norm(1), Norm(2),
                     Norm(3));
  }
  std::vector<float> ReferenceEncoder(const LayerConfig& c, const Tensor3& x,
                                      const EncoderOptions& o) const {
    return ReferenceEncoderLayer(c, self_attention.View(), Ffn(), Norm(1), Norm(2), x, o);
  }
  std::vector<float> ReferenceDecoder(const LayerConfig& c, const Tensor3& x,
                                      const Tensor3& memory, const DecoderOptions& o) const {
    return ReferenceDecoderLayer(c, self_attention.View(), cross_attention.View(), Ffn(),
                                 Norm(1), Norm(2), Norm(3), x, memory, o);
  }
};

LayerWeights RandomLayerWeights(const LayerConfig& c, std::mt19937& rng) {
  MhaConfig m;
  m.d_model = c.d_model;
  m.num_heads = c.num_heads;
  m.num_kv_heads = c.num_kv_heads;
  m = Resolve(m);
  LayerWeights w;
  w.self_attention = RandomWeights(m, rng);
  w.cross_attention = RandomWeights(m, rng);
  const float s1 = 1.0f / std::sqrt(float(c.d_model));
  const float s2 = 1.0f / std::sqrt(float(c.ffn_dim));
  w.w1 = RandomVector(c.d_model * c.ffn_dim, s1, rng);
  w.b1 = RandomVector(c.ffn_dim, s1, rng);
  w.w2 = RandomVector(c.ffn_dim * c.d_model, s2, rng);
  w.b2 = RandomVector(c.d_model, s2, rng);
  for (int i = 0; i < 3; ++i) {
    w.gamma[i] = RandomVector(c.d_model, 0.3f, rng);
    for (float& g : w.gamma[i]) g += 1.0f;
    w.beta[i] = RandomVector(c.d_model, 0.3f, rng);
  }
  return w;
}

// A decoder layer's weights, tokens [batch, t, d_model] and encoder memory
// [batch, s, d_model], drawn in that order.
struct DecoderProblem {
  LayerWeights w;
  OwnedTensor x, memory;
};

DecoderProblem RandomDecoderProblem(const LayerConfig& c, size_t batch, size_t t, size_t s,
                                    std::mt19937& rng) {
  DecoderProblem p;
  p.w = RandomLayerWeights(c, rng);
  p.x = RandomTensor(batch, t, c.d_model, rng);
  p.memory = RandomTensor(batch, s, c.d_model, rng);
  return p;
}

// x through `layer` one token at a time into `cache`, against the memory's
// keys and values `kv`: each step's [batch, 1, d_model] output.
std::vector<std::vector<float>> DecodeTokenByToken(TransformerDecoderLayer& layer,
                                                   const Tensor3& x, KVCache& cache,
                                                   const PrecomputedKV& kv) {
  std::vector<std::vector<float>> steps;
  for (size_t t = 0; t < x.tokens; ++t) {
    steps.push_back(layer.ForwardIncremental(Tokens(x, t, 1).View(), cache, kv));
  }
  return steps;
}

// ---------------------------------------------------------------------------
// Whole layers against the reference, every norm placement and activation.

struct LayerShape {
  size_t d_model, num_heads, ffn_dim;
};
// d_k 8 (whole vectors on narrow targets) and d_k 5 with an odd FFN width
// (padding and row tails everywhere).
constexpr LayerShape kShapes[] = {{24, 3, 40}, {20, 4, 33}};

// Every shape with every norm placement and activation, each named for the
// failure messages.
struct NamedLayerConfig {
  LayerConfig config;
  std::string name;
};

std::vector<NamedLayerConfig> EveryLayerConfig() {
  std::vector<NamedLayerConfig> configs;
  for (const LayerShape& shape : kShapes) {
    for (const bool norm_first : {true, false}) {
      for (const auto& [act, act_name] : kActivations) {
        configs.push_back({{.d_model = shape.d_model, .num_heads = shape.num_heads,
                            .ffn_dim = shape.ffn_dim, .norm_first = norm_first,
                            .activation = act},
                           "d_model " + std::to_string(shape.d_model) +
                               (norm_first ? " pre-LN " : " post-LN ") + act_name});
      }
    }
  }
  return configs;
}

class LayersVsReference : public TableTest {};

TEST_P(LayersVsReference, EncoderLayer) {
  constexpr size_t kBatch = 2, kT = 6;
  std::mt19937 rng(100);
  for (const auto& [config, name] : EveryLayerConfig()) {
    const LayerWeights w = RandomLayerWeights(config, rng);
    const OwnedTensor x = RandomTensor(kBatch, kT, config.d_model, rng);
    const std::vector<uint8_t> padding = RandomKeyPadding(kBatch, kT, 0.6, rng);
    for (const int variant : {0, 1, 2, 3}) {
      EncoderOptions options;
      if (variant & 1) options.key_padding_mask = padding;
      options.causal = (variant & 2) != 0;
      SCOPED_TRACE(name + ((variant & 1) ? " padded" : "") + (options.causal ? " causal" : ""));
      const std::vector<float> expected = w.ReferenceEncoder(config, x.View(), options);
      TransformerEncoderLayer layer(config, table());
      w.SetOn(layer);
      EXPECT_TRUE(AllNear(layer.Forward(x.View(), options), expected,
                          ScaledTolerance(expected, kLayerTol)));
    }
  }
}

TEST_P(LayersVsReference, DecoderLayer) {
  constexpr size_t kBatch = 2, kT = 5, kS = 7;
  std::mt19937 rng(200);
  for (const auto& [config, name] : EveryLayerConfig()) {
    const auto [w, x, memory] = RandomDecoderProblem(config, kBatch, kT, kS, rng);
    const std::vector<uint8_t> padding = RandomKeyPadding(kBatch, kT, 0.6, rng);
    const std::vector<uint8_t> memory_padding = RandomKeyPadding(kBatch, kS, 0.6, rng);
    for (const int variant : {0, 1, 2}) {
      DecoderOptions options;  // causal by default, as torch's decoder use
      if (variant == 1) {
        options.key_padding_mask = padding;
        options.memory_key_padding_mask = memory_padding;
      }
      if (variant == 2) options.causal = false;
      SCOPED_TRACE(name + (variant == 1 ? " padded" : "") + (options.causal ? " causal" : ""));
      const std::vector<float> expected =
          w.ReferenceDecoder(config, x.View(), memory.View(), options);
      TransformerDecoderLayer layer(config, table());
      w.SetOn(layer);
      EXPECT_TRUE(AllNear(layer.Forward(x.View(), memory.View(), options), expected,
                          ScaledTolerance(expected, kLayerTol)));
    }
  }
}

TEST_P(LayersVsReference, FeedForwardEveryActivation) {
  // Inputs up to +-3 so the hidden pre-activations reach GELU's curved part
  // on both sides, not just its near-linear middle.
  constexpr size_t kD = 24, kFfn = 37, kRows = 5;
  std::mt19937 rng(300);
  const LayerConfig shape = {.d_model = kD, .num_heads = 3, .ffn_dim = kFfn};
  const LayerWeights w = RandomLayerWeights(shape, rng);
  const std::vector<float> x = RandomVector(kRows * kD, 3.0f, rng);
  for (const auto& [act, act_name] : kActivations) {
    SCOPED_TRACE(act_name);
    const std::vector<float> expected = ReferenceFeedForward(x, kD, kFfn, act, w.Ffn());
    FeedForward ffn(kD, kFfn, act, table());
    ffn.SetWeights(w.Ffn());
    std::vector<float> out(kRows * kD);
    ffn.Forward(x.data(), kRows, out.data());
    EXPECT_TRUE(AllNear(out, expected, ScaledTolerance(expected, kTol)));
  }
  // The activations must differ on these inputs, or the loop above proves
  // nothing about which one the FFN applies.
  const std::vector<float> relu = ReferenceFeedForward(x, kD, kFfn, Activation::kRelu, w.Ffn());
  const std::vector<float> tanh_form =
      ReferenceFeedForward(x, kD, kFfn, Activation::kGeluTanh, w.Ffn());
  const std::vector<float> erf_form =
      ReferenceFeedForward(x, kD, kFfn, Activation::kGeluErf, w.Ffn());
  EXPECT_FALSE(AllNear(relu, erf_form, 1e-2));
  EXPECT_FALSE(AllNear(tanh_form, erf_form, 1e-5));
}

// A checkpoint made without the FFN's biases (nn.Linear(bias=False)) gives
// none: the FFN takes them as zeros, as the gated FFN and the attention do.
TEST_P(LayersVsReference, FeedForwardWithoutBiasesAddsZeros) {
  constexpr size_t kD = 16, kFfn = 24, kRows = 3;
  std::mt19937 rng(301);
  LayerWeights w = RandomLayerWeights({.d_model = kD, .num_heads = 2, .ffn_dim = kFfn}, rng);
  const std::vector<float> x = RandomVector(kRows * kD, 1.0f, rng);
  std::fill(w.b1.begin(), w.b1.end(), 0.0f);
  std::fill(w.b2.begin(), w.b2.end(), 0.0f);
  const std::vector<float> expected =
      ReferenceFeedForward(x, kD, kFfn, Activation::kRelu, w.Ffn());
  FeedForward ffn(kD, kFfn, Activation::kRelu, table());
  ffn.SetWeights({w.w1, {}, w.w2, {}});
  std::vector<float> out(kRows * kD);
  ffn.Forward(x.data(), kRows, out.data());
  EXPECT_TRUE(AllNear(out, expected, ScaledTolerance(expected, kTol)));
  EXPECT_FALSE(AllNear(expected, std::vector<float>(expected.size(), 0.0f), 1e-3));
}

// A LayerNorm without a shift (PyTorch's LayerNorm(bias=False)): zeros.
TEST_P(LayersVsReference, LayerNormWithoutShiftAddsZeros) {
  constexpr size_t kD = 16, kTokens = 3;
  std::mt19937 rng(302);
  const LayerConfig config = {.d_model = kD, .num_heads = 2, .ffn_dim = 24};
  LayerWeights w = RandomLayerWeights(config, rng);
  for (auto& beta : w.beta) std::fill(beta.begin(), beta.end(), 0.0f);
  const OwnedTensor x = RandomTensor(1, kTokens, kD, rng);
  TransformerEncoderLayer zeros(config, table());
  w.SetOn(zeros);
  TransformerEncoderLayer absent(config, table());
  absent.SetWeights(w.self_attention.View(), w.Ffn(), {w.gamma[0], {}}, {w.gamma[1], {}});
  EXPECT_EQ(absent.Forward(x.View(), {}), zeros.Forward(x.View(), {}));
}

// ---------------------------------------------------------------------------
// Element-wise kernels, straight through the table.

// Inputs covering 0, both saturated tails (where a naive tanh via
// exp(2y) overflows and erf's exp(-x^2) underflows) and the curved middle,
// with the extremes both first (vector body) and last (scalar tail).
std::vector<float> ActivationInputs() {
  const std::vector<float> extremes = {0.0f,  -0.0f,  20.0f,   -20.0f, 10.5f,  -10.5f,
                                       13.01f, -13.01f, 100.0f, -100.0f, 9.0f, -9.0f};
  std::vector<float> x = extremes;
  for (int i = -80; i <= 80; ++i) x.push_back(0.1f * float(i) + 0.013f);
  x.insert(x.end(), extremes.rbegin(), extremes.rend());
  return x;
}

class ElementwiseKernels : public TableTest {};

TEST_P(ElementwiseKernels, ActivationMatchesClosedForms) {
  const std::vector<float> inputs = ActivationInputs();
  // 1: tail only; 37: vectors plus a ragged tail on every width; all.
  for (const size_t n : {size_t{1}, size_t{37}, inputs.size()}) {
    for (const auto& [act, act_name] : kActivations) {
      SCOPED_TRACE(std::string(act_name) + " n=" + std::to_string(n));
      // Start one float into the buffer: the kernel must not assume
      // vector-aligned rows. The sentinels around it must survive.
      std::vector<float> buffer(n + 2, 1234.5f);
      std::copy_n(inputs.end() - n, n, buffer.begin() + 1);
      table().activation(act, buffer.data() + 1, n);
      EXPECT_EQ(buffer.front(), 1234.5f);
      EXPECT_EQ(buffer.back(), 1234.5f);
      for (size_t i = 0; i < n; ++i) {
        const float x = inputs[inputs.size() - n + i];
        const double expected = ReferenceActivation(act, x);
        // A&S erf is good to 1.5e-7 absolute; times 0.5|x| through the
        // GELU, plus float rounding of values up to |x|.
        const double tol = 2e-6 * std::max(1.0, std::fabs(double(x)));
        EXPECT_NEAR(buffer[i + 1], expected, tol) << "x = " << x;
      }
    }
  }
}

TEST_P(ElementwiseKernels, LayerNormMatchesReferenceInAndOutOfPlace) {
  constexpr size_t kRows = 3;
  constexpr float kEps = 1e-5f;
  std::mt19937 rng(400);
  for (const size_t d : {size_t{1}, size_t{7}, size_t{40}, size_t{64}, size_t{100}}) {
    std::vector<float> x = RandomVector(kRows * d, 2.0f, rng);
    // A row far from zero mean: a one-pass E[x^2] - E[x]^2 variance would
    // lose it to cancellation.
    for (size_t i = 0; i < d; ++i) x[d + i] += 50.0f;
    const std::vector<float> gamma = RandomVector(d, 1.5f, rng);
    const std::vector<float> beta = RandomVector(d, 0.5f, rng);
    const NormWeights w{gamma, beta};
    const std::vector<float> expected = ReferenceLayerNorm(x, d, w, kEps);
    SCOPED_TRACE("d=" + std::to_string(d));
    std::vector<float> out(x.size());
    table().layer_norm(x.data(), kRows, d, gamma.data(), beta.data(), kEps, out.data());
    EXPECT_TRUE(AllNear(out, expected, ScaledTolerance(expected, kTol)));
    std::vector<float> in_place = x;
    table().layer_norm(in_place.data(), kRows, d, gamma.data(), beta.data(), kEps,
                      in_place.data());
    // Aliasing changes nothing: the statistics are read before any write.
    EXPECT_TRUE(AllNear(in_place, out, 0));
  }
}

TEST_P(ElementwiseKernels, LayerNormOfConstantRowIsBeta) {
  // Zero variance: eps keeps it finite and the centred values are exactly 0.
  constexpr size_t kD = 37;
  std::mt19937 rng(401);
  const std::vector<float> x(kD, 3.25f);
  const std::vector<float> gamma = RandomVector(kD, 1.0f, rng);
  const std::vector<float> beta = RandomVector(kD, 1.0f, rng);
  std::vector<float> out(kD);
  table().layer_norm(x.data(), 1, kD, gamma.data(), beta.data(), 1e-5f, out.data());
  EXPECT_TRUE(AllNear(out, beta, 0));
}

TEST_P(ElementwiseKernels, ResidualAddWithAliasing) {
  constexpr size_t kN = 37;
  std::mt19937 rng(500);
  const std::vector<float> x = RandomVector(kN, 4.0f, rng);
  const std::vector<float> y = RandomVector(kN, 4.0f, rng);
  std::vector<float> sum(kN);
  for (size_t i = 0; i < kN; ++i) sum[i] = x[i] + y[i];  // one rounding: exact match
  std::vector<float> out(kN);
  table().add(x.data(), y.data(), kN, out.data());
  EXPECT_TRUE(AllNear(out, sum, 0)) << "separate output";
  std::vector<float> into_x = x;
  table().add(into_x.data(), y.data(), kN, into_x.data());
  EXPECT_TRUE(AllNear(into_x, sum, 0)) << "out == x";
  std::vector<float> into_y = y;
  table().add(x.data(), into_y.data(), kN, into_y.data());
  EXPECT_TRUE(AllNear(into_y, sum, 0)) << "out == y";
}

// ---------------------------------------------------------------------------
// Decoding through a decoder layer.

// The golden decoder_layer_small case (post-LN, ReLU, causal) as weights and
// data only; its PyTorch output pins the full Forward.
class DecoderGolden : public TableTest {
 protected:
  void SetUp() override {
    c_ = LoadGoldenCase("decoder_layer_small");
    ASSERT_EQ(c_.config_text.at("norm"), "post");
    ASSERT_EQ(c_.config_text.at("activation"), "relu");
    ASSERT_EQ(c_.Config("self_attention_causal"), 1u);
    config_ = {.d_model = c_.Config("d_model"), .num_heads = c_.Config("num_heads"),
               .ffn_dim = c_.Config("ffn_dim")};
    config_.eps = static_cast<float>(c_.config.at("layer_norm_eps"));
  }

  std::span<const float> F(const std::string& name) const { return c_.Tensor(name).f32; }
  MhaWeights Attention(const std::string& p) const {
    return {F(p + "w_q"), F(p + "w_k"), F(p + "w_v"), F(p + "w_o"),
            F(p + "b_q"), F(p + "b_k"), F(p + "b_v"), F(p + "b_o")};
  }
  NormWeights Norm(int i) const {
    const std::string n = "ln" + std::to_string(i);
    return {F(n + "_gamma"), F(n + "_beta")};
  }
  Tensor3 Input(const std::string& name) const {
    const GoldenTensor& t = c_.Tensor(name);
    return {t.f32, t.shape[0], t.shape[1], t.shape[2]};
  }
  TransformerDecoderLayer Make(const KernelTable& table) const {
    TransformerDecoderLayer layer(config_, table);
    layer.SetWeights(Attention("self_"), Attention("cross_"),
                     {F("ffn_w1"), F("ffn_b1"), F("ffn_w2"), F("ffn_b2")}, Norm(1), Norm(2),
                     Norm(3));
    return layer;
  }

  GoldenCase c_;
  LayerConfig config_;
};

TEST_P(DecoderGolden, IncrementalEqualsFullCausalForward) {
  const Tensor3 x = Input("input"), memory = Input("memory");
  const size_t d = config_.d_model;
  TransformerDecoderLayer layer = Make(table());
  DecoderOptions causal;
  causal.causal = true;
  const std::vector<float> full = layer.Forward(x, memory, causal);
  ASSERT_TRUE(AllNear(full, F("output"), c_.tolerance));

  const PrecomputedKV kv = layer.cross_attention().PrecomputeKeyValue(memory);
  {
    SCOPED_TRACE("token by token");
    KVCache cache = layer.self_attention().CreateKVCache(x.batch, x.tokens);
    const std::vector<std::vector<float>> steps = DecodeTokenByToken(layer, x, cache, kv);
    for (size_t t = 0; t < x.tokens; ++t) {
      SCOPED_TRACE("token " + std::to_string(t));
      EXPECT_TRUE(AllNear(steps[t], TokenRows(full, x.batch, x.tokens, d, t, 1), kTol));
      EXPECT_TRUE(AllNear(steps[t], TokenRows(F("output"), x.batch, x.tokens, d, t, 1),
                          c_.tolerance));
    }
    EXPECT_EQ(cache.length(), x.tokens);
  }
  {
    SCOPED_TRACE("prompt of 3, then 2");
    KVCache cache = layer.self_attention().CreateKVCache(x.batch, x.tokens);
    const std::vector<float> prompt = layer.ForwardIncremental(Tokens(x, 0, 3).View(), cache, kv);
    const std::vector<float> rest = layer.ForwardIncremental(Tokens(x, 3, 2).View(), cache, kv);
    EXPECT_TRUE(AllNear(prompt, TokenRows(full, x.batch, x.tokens, d, 0, 3), kTol));
    EXPECT_TRUE(AllNear(rest, TokenRows(full, x.batch, x.tokens, d, 3, 2), kTol));
  }
}

class DecoderIncremental : public TableTest {};

TEST_P(DecoderIncremental, PreLnGeluTokenByTokenEqualsReference) {
  // The same through the other norm placement and a GELU, against the
  // double reference: incremental decoding must not depend on post-LN.
  constexpr size_t kBatch = 2, kT = 6, kS = 4;
  const LayerConfig config = {.d_model = 20, .num_heads = 4, .ffn_dim = 33, .norm_first = true,
                               .activation = Activation::kGeluTanh};
  std::mt19937 rng(600);
  const auto [w, x, memory] = RandomDecoderProblem(config, kBatch, kT, kS, rng);
  const std::vector<float> expected = w.ReferenceDecoder(config, x.View(), memory.View(), {});
  TransformerDecoderLayer layer(config, table());
  w.SetOn(layer);
  const PrecomputedKV kv = layer.cross_attention().PrecomputeKeyValue(memory.View());
  KVCache cache = layer.self_attention().CreateKVCache(kBatch, kT);
  const std::vector<std::vector<float>> steps = DecodeTokenByToken(layer, x.View(), cache, kv);
  for (size_t t = 0; t < kT; ++t) {
    SCOPED_TRACE("token " + std::to_string(t));
    const std::vector<float> row = TokenRows(expected, kBatch, kT, config.d_model, t, 1);
    EXPECT_TRUE(AllNear(steps[t], row, ScaledTolerance(row, kLayerTol)));
  }
}

class LayerVariants : public TableTest {};

// Grouped-query heads and rotary positions reach both layers' attentions:
// the encoder against the reference, and the decoder token by token through
// a cache of the key/value heads against its full causal forward.
TEST_P(LayerVariants, GroupedQueryHeadsAndRotaryPositions) {
  constexpr size_t kBatch = 2, kT = 5, kS = 4;
  for (const RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
    SCOPED_TRACE(style == RopeStyle::kHalf ? "half" : "interleaved");
    const LayerConfig config = {.d_model = 24, .num_heads = 6, .ffn_dim = 40,
                                .norm_first = style == RopeStyle::kHalf,
                                .activation = Activation::kGeluTanh, .num_kv_heads = 2,
                                .rope = {.style = style, .base = 500.0, .rotary_dim = 2}};
    std::mt19937 rng(800);
    const auto [w, x, memory] = RandomDecoderProblem(config, kBatch, kT, kS, rng);
    ASSERT_EQ(w.self_attention.w_k.size(), 24u * 2 * 4) << "w_k holds the 2 kv heads";
    EncoderOptions causal;
    causal.causal = true;
    TransformerEncoderLayer encoder(config, table());
    w.SetOn(encoder);
    const std::vector<float> expected = w.ReferenceEncoder(config, x.View(), causal);
    EXPECT_TRUE(AllNear(encoder.Forward(x.View(), causal), expected,
                        ScaledTolerance(expected, kLayerTol)));

    TransformerDecoderLayer decoder(config, table());
    w.SetOn(decoder);
    const std::vector<float> full = decoder.Forward(x.View(), memory.View());
    const std::vector<float> reference = w.ReferenceDecoder(config, x.View(), memory.View(), {});
    EXPECT_TRUE(AllNear(full, reference, ScaledTolerance(reference, kLayerTol)));
    const PrecomputedKV kv = decoder.PrecomputeMemory(memory.View());
    KVCache cache = decoder.self_attention().CreateKVCache(kBatch, kT);
    const std::vector<std::vector<float>> steps = DecodeTokenByToken(decoder, x.View(), cache, kv);
    for (size_t t = 0; t < kT; ++t) {
      SCOPED_TRACE("token " + std::to_string(t));
      EXPECT_TRUE(AllNear(steps[t], TokenRows(full, kBatch, kT, config.d_model, t, 1), kTol));
    }
  }
}

// The self-attention options reach both layers: against the reference
// (window, scale, soft-cap, a boolean mask broadcast over the batch, valid
// lengths), and a decoder with a window, token by token through its cache,
// equals its full causal forward with that window.
TEST_P(LayerVariants, SelfAttentionOptions) {
  constexpr size_t kBatch = 2, kT = 6, kS = 3, kHeads = 4;
  const LayerConfig config = {.d_model = 16, .num_heads = kHeads, .ffn_dim = 24,
                              .norm_first = true, .num_kv_heads = 2};
  std::mt19937 rng(900);
  const auto [w, x, memory] = RandomDecoderProblem(config, kBatch, kT, kS, rng);
  std::vector<uint8_t> allowed(kHeads * kT * kT);
  for (uint8_t& a : allowed) a = rng() % 4 != 0;
  const std::vector<size_t> lengths = {kT, 4};
  SelfAttentionOptions options{.window = {2, -1}, .scale = 0.4, .softcap = 3.0,
                               .bool_mask = allowed, .bool_mask_shape = {1, kHeads, kT, kT},
                               .kv_lengths = lengths};

  TransformerEncoderLayer encoder(config, table());
  w.SetOn(encoder);
  const EncoderOptions encoder_options{.self_attention = options};
  const std::vector<float> expected = w.ReferenceEncoder(config, x.View(), encoder_options);
  const std::vector<float> got = encoder.Forward(x.View(), encoder_options);
  EXPECT_TRUE(AllNear(got, expected, ScaledTolerance(expected, kLayerTol)));
  EXPECT_FALSE(AllNear(got, encoder.Forward(x.View()), kLayerTol)) << "the options had no effect";

  TransformerDecoderLayer decoder(config, table());
  w.SetOn(decoder);
  const DecoderOptions decoder_options{.self_attention = options};
  const std::vector<float> reference =
      w.ReferenceDecoder(config, x.View(), memory.View(), decoder_options);
  EXPECT_TRUE(AllNear(decoder.Forward(x.View(), memory.View(), decoder_options), reference,
                      ScaledTolerance(reference, kLayerTol)));

  const SelfAttentionOptions window{.window = {2, -1}};
  const std::vector<float> full =
      decoder.Forward(x.View(), memory.View(), DecoderOptions{.self_attention = window});
  const PrecomputedKV kv = decoder.PrecomputeMemory(memory.View());
  KVCache cache = decoder.self_attention().CreateKVCache(kBatch, kT);
  for (size_t t = 0; t < kT; ++t) {
    SCOPED_TRACE("token " + std::to_string(t));
    EXPECT_TRUE(AllNear(decoder.ForwardIncremental(Tokens(x.View(), t, 1).View(), cache, kv,
                                                   window),
                        TokenRows(full, kBatch, kT, config.d_model, t, 1), kTol));
  }
}

INSTANTIATE_ON_EVERY_TABLE(LayerVariants);

class DecoderPrecomputed : public TableTest {};

TEST_P(DecoderPrecomputed, EqualsForwardWithMemoryTensor) {
  constexpr size_t kBatch = 2, kT = 5, kS = 6;
  const LayerConfig config = {.d_model = 24, .num_heads = 3, .ffn_dim = 40,
                               .activation = Activation::kGeluErf};
  std::mt19937 rng(700);
  const auto [w, x, memory] = RandomDecoderProblem(config, kBatch, kT, kS, rng);
  // Two different memory masks, key 0 real in each row.
  const std::vector<uint8_t> mask_a = {1, 1, 0, 1, 1, 0, /**/ 1, 0, 0, 1, 1, 1};
  const std::vector<uint8_t> mask_b = {1, 0, 1, 1, 0, 1, /**/ 1, 1, 1, 1, 0, 0};
  DecoderOptions plain, with_a, with_b;
  with_a.memory_key_padding_mask = mask_a;
  with_b.memory_key_padding_mask = mask_b;
  TransformerDecoderLayer layer(config, table());
  w.SetOn(layer);
  const std::vector<float> direct = layer.Forward(x.View(), memory.View(), plain);
  const std::vector<float> direct_a = layer.Forward(x.View(), memory.View(), with_a);
  const std::vector<float> direct_b = layer.Forward(x.View(), memory.View(), with_b);
  ASSERT_FALSE(AllNear(direct_a, direct_b, 1e-3)) << "masks make no difference";
  const std::vector<float> expected_a = w.ReferenceDecoder(config, x.View(), memory.View(), with_a);
  EXPECT_TRUE(AllNear(direct_a, expected_a, ScaledTolerance(expected_a, kLayerTol)));

  const PrecomputedKV unmasked = layer.cross_attention().PrecomputeKeyValue(memory.View());
  EXPECT_TRUE(AllNear(layer.Forward(x.View(), unmasked, plain), direct, kTol)) << "no mask";
  EXPECT_TRUE(AllNear(layer.Forward(x.View(), unmasked, with_a), direct_a, kTol))
      << "mask from options";
  const PrecomputedKV masked = layer.cross_attention().PrecomputeKeyValue(memory.View(), mask_a);
  EXPECT_TRUE(AllNear(layer.Forward(x.View(), masked, plain), direct_a, kTol))
      << "mask from PrecomputeKeyValue";
  EXPECT_TRUE(AllNear(layer.Forward(x.View(), masked, with_b), direct_b, kTol))
      << "options' mask overrides";
}

// ---------------------------------------------------------------------------
// Positional encoding, and errors with messages naming the argument.

TEST(PositionalEncodingTest, ValuesFollowTheSinusoidForOddWidth) {
  // The golden case is even-width; an odd d_model ends on a sine column.
  constexpr size_t kT = 4, kD = 7;
  const std::vector<float> pe = PositionalEncoding(kT, kD);
  ASSERT_EQ(pe.size(), kT * kD);
  for (size_t p = 0; p < kT; ++p) {
    for (size_t i = 0; i < kD; ++i) {
      const double angle = double(p) / std::pow(10000.0, double(i / 2 * 2) / double(kD));
      EXPECT_NEAR(pe[p * kD + i], i % 2 == 0 ? std::sin(angle) : std::cos(angle), 1e-6)
          << "p " << p << ", i " << i;
    }
  }
}

TEST(PositionalEncodingTest, RejectsEmptyShapes) {
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { PositionalEncoding(0, 8); },
                                                {"t: must be > 0, got 0"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { PositionalEncoding(5, 0); },
                                                {"d_model: must be > 0, got 0"}));
}

class LayerErrors : public TableTest {};

TEST_P(LayerErrors, BadConfig) {
  const LayerConfig no_ffn = {.d_model = 16, .num_heads = 2, .ffn_dim = 0};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { TransformerEncoderLayer layer(no_ffn, table()); }, {"config.ffn_dim", "got 0"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { TransformerDecoderLayer layer(no_ffn, table()); }, {"config.ffn_dim", "got 0"}));
  const LayerConfig no_eps = {.d_model = 16, .num_heads = 2, .ffn_dim = 32, .eps = 0.0};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { TransformerEncoderLayer layer(no_eps, table()); }, {"config.eps"}));
  const LayerConfig indivisible = {.d_model = 18, .num_heads = 4, .ffn_dim = 32};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { TransformerDecoderLayer layer(indivisible, table()); },
      {"config.d_model", "num_heads (4)", "got 18"}));
}

class LayerWeightErrors : public TableTest {
 protected:
  // d_model 16, ffn 24: every wrong length below is unambiguous.
  void SetUp() override {
    std::mt19937 rng(800);
    config_ = {.d_model = 16, .num_heads = 2, .ffn_dim = 24, .norm_first = true,
               .activation = Activation::kGeluErf};
    w_ = RandomLayerWeights(config_, rng);
  }

  // Each table's encoder and decoder reject the weights with the fragments.
  void ExpectRejected(const LayerWeights& bad,
                      std::initializer_list<std::string_view> fragments,
                      bool decoder_only = false) {
    if (!decoder_only) {
      TransformerEncoderLayer encoder(config_, table());
      EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
          [&] {
            encoder.SetWeights(bad.self_attention.View(), bad.Ffn(), bad.Norm(1),
                               bad.Norm(2));
          },
          fragments))
          << "encoder";
    }
    TransformerDecoderLayer decoder(config_, table());
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        [&] {
          decoder.SetWeights(bad.self_attention.View(), bad.cross_attention.View(),
                             bad.Ffn(), bad.Norm(1), bad.Norm(2), bad.Norm(3));
        },
        fragments))
        << "decoder";
  }

  LayerConfig config_;
  LayerWeights w_;
};

TEST_P(LayerWeightErrors, FfnWeightsOfWrongLength) {
  LayerWeights bad = w_;
  bad.w1.pop_back();
  ExpectRejected(bad, {"ffn.w1", "expected 384", "[16, 24]", "got 383"});
  bad = w_;
  bad.b1.push_back(0.0f);
  ExpectRejected(bad, {"ffn.b1", "expected 24", "got 25"});
  bad = w_;
  // w2 given in w1's layout: right count only if ffn_dim == d_model.
  bad.w2.resize(16 * 16);
  ExpectRejected(bad, {"ffn.w2", "[24, 16]", "got 256"});
  bad = w_;
  bad.b2.resize(15);
  ExpectRejected(bad, {"ffn.b2", "expected 16", "got 15"});
}

TEST_P(LayerWeightErrors, NonFiniteFfnWeight) {
  LayerWeights bad = w_;
  bad.b2[3] = std::numeric_limits<float>::infinity();
  ExpectRejected(bad, {"ffn.b2", "element 3", "Infinity"});
}

TEST_P(LayerWeightErrors, NormWeightsOfWrongLength) {
  LayerWeights bad = w_;
  bad.gamma[1].pop_back();
  ExpectRejected(bad, {"norm2.gamma", "expected 16", "got 15"});
  bad = w_;
  bad.beta[0].push_back(0.0f);
  ExpectRejected(bad, {"norm1.beta", "expected 16", "got 17"});
  bad = w_;
  bad.beta[2].resize(15);
  ExpectRejected(bad, {"norm3.beta", "expected 16", "got 15"}, /*decoder_only=*/true);
  bad = w_;
  bad.gamma[2][0] = std::nanf("");
  ExpectRejected(bad, {"norm3.gamma", "element 0", "NaN"}, /*decoder_only=*/true);
}

TEST_P(LayerErrors, EncoderInputOfWrongLength) {
  std::mt19937 rng(900);
  const LayerConfig config = {.d_model = 16, .num_heads = 2, .ffn_dim = 24};
  const LayerWeights w = RandomLayerWeights(config, rng);
  TransformerEncoderLayer layer(config, table());
  w.SetOn(layer);
  const std::vector<float> data(2 * 3 * 16 - 1, 0.5f);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { layer.Forward(Tensor3{data, 2, 3, 16}); }, {"x", "[2, 3, 16]", "got 95"}));
}

TEST_P(LayerErrors, ForwardBeforeSetWeights) {
  const LayerConfig config = {.d_model = 16, .num_heads = 2, .ffn_dim = 24};
  std::mt19937 rng(901);
  const OwnedTensor x = RandomTensor(1, 2, 16, rng);
  TransformerEncoderLayer layer(config, table());
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { layer.Forward(x.View()); },
                                           {"SetWeights"}));
}

INSTANTIATE_ON_EVERY_TABLE(LayersVsReference);
INSTANTIATE_ON_EVERY_TABLE(ElementwiseKernels);
INSTANTIATE_ON_EVERY_TABLE(DecoderGolden);
INSTANTIATE_ON_EVERY_TABLE(DecoderIncremental);
INSTANTIATE_ON_EVERY_TABLE(DecoderPrecomputed);
INSTANTIATE_ON_EVERY_TABLE(LayerErrors);
INSTANTIATE_ON_EVERY_TABLE(LayerWeightErrors);

}  // namespace
}  // namespace simd_attention::testing
