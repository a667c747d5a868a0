// The encoder and decoder layers' Backward on every kernel table: the golden
// `encoder_layer_backward` case (PyTorch's autograd), problems of our own
// (pre-LN, both GELUs, the decoder with its memory, causal and padding masks)
// against the float64 layer reference (reference/layers_backward_reference),
// which central differences check in turn; 1, 2 and 3 threads bit-identical;
// errors.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "golden.h"
#include "gradient_util.h"
#include "random_mha.h"
#include "reference/layers_backward_reference.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// The longest chain of a layer's backward (the float32 bound of
// gradient_util.h): per sublayer, LayerNorm's backward reduces over d_model
// twice (its mean and variance) and again for mean(g) and mean(g xhat); the
// FFN's dH over d_model and dX over ffn_dim; the attentions' own chain;
// every weight gradient over B T rows. The cross-attention's chain runs
// over the memory's tokens.
size_t LayerChainLength(const LayerConfig& c, const MhaConfig& attention, size_t sublayers,
                        size_t batch, size_t tokens, size_t memory_tokens) {
  return sublayers * 4 * c.d_model + c.d_model + c.ffn_dim +
         MhaChainLength(attention, batch, tokens, std::max(tokens, memory_tokens)) +
         batch * std::max(tokens, memory_tokens);
}

// ---------------------------------------------------------------------------
// A layer's weights, inputs and d_output, owned, in float and double.

struct LayerCase {
  const char* name;
  LayerConfig config;
  size_t batch, tokens, memory_tokens;  // memory_tokens 0: an encoder layer
  bool causal, padding;
};

struct OwnedLayer {
  LayerCase c;
  MhaConfig attention;
  OwnedWeights self, cross;
  std::vector<float> w1, b1, w2, b2;
  std::vector<float> gamma[3], beta[3];
  OwnedTensor x, memory;
  std::vector<uint8_t> key_padding, memory_padding;
  std::vector<float> d_output;
  LayerProblem64 doubles;
  // d_output in the output's shape [B, T, d_model].
  Tensor3 DOutput() const { return {d_output, x.batch, x.tokens, x.features}; }
  MhaOptions self_options, cross_options;  // as the layer passes them on

  bool decoder() const { return c.memory_tokens != 0; }
  size_t sublayers() const { return decoder() ? 3 : 2; }
  FfnWeights Ffn() const { return {w1, b1, w2, b2}; }
  NormWeights Norm(int i) const { return {gamma[i], beta[i]}; }
};

std::unique_ptr<OwnedLayer> MakeLayer(const LayerCase& c, uint32_t seed) {
  auto p = std::make_unique<OwnedLayer>();
  p->c = c;
  std::mt19937 rng(seed);
  const size_t d = c.config.d_model, f = c.config.ffn_dim;
  p->attention = MultiHeadAttention(MhaConfig{.d_model = d, .num_heads = c.config.num_heads})
                     .config();
  p->self = RandomWeights(p->attention, rng);
  p->cross = RandomWeights(p->attention, rng);
  p->w1 = RandomVector(d * f, 1.0f / std::sqrt(float(d)), rng);
  p->b1 = RandomVector(f, 1.0f / std::sqrt(float(d)), rng);
  p->w2 = RandomVector(f * d, 1.0f / std::sqrt(float(f)), rng);
  p->b2 = RandomVector(d, 1.0f / std::sqrt(float(f)), rng);
  for (int i = 0; i < 3; ++i) {
    p->gamma[i] = RandomVector(d, 0.3f, rng);
    for (float& g : p->gamma[i]) g += 1.0f;
    p->beta[i] = RandomVector(d, 0.3f, rng);
  }
  p->x = RandomTensor(c.batch, c.tokens, d, rng);
  if (p->decoder()) p->memory = RandomTensor(c.batch, c.memory_tokens, d, rng);
  p->d_output = RandomVector(c.batch * c.tokens * d, 1.0f, rng);
  p->self_options.causal = c.causal;
  if (c.padding) {
    p->key_padding = RandomKeyPadding(c.batch, c.tokens, 0.7, rng);
    p->self_options.key_padding_mask = p->key_padding;
    if (p->decoder()) {
      p->memory_padding = RandomKeyPadding(c.batch, c.memory_tokens, 0.7, rng);
      p->cross_options.key_padding_mask = p->memory_padding;
    }
  }
  SetDoubleInputs(*p);
  LayerProblem64& q = p->doubles;
  for (auto [w, m] : {std::pair{&p->self, &q.self_attention}, {&p->cross, &q.cross_attention}}) {
    *m = {0, 0, 0, {}, {}, {}, ToDouble(w->w_q), ToDouble(w->w_k), ToDouble(w->w_v),
          ToDouble(w->w_o), ToDouble(w->b_q), ToDouble(w->b_k), ToDouble(w->b_v),
          ToDouble(w->b_o)};
  }
  q.w1 = ToDouble(p->w1);
  q.b1 = ToDouble(p->b1);
  q.w2 = ToDouble(p->w2);
  q.b2 = ToDouble(p->b2);
  for (int i = 0; i < 3; ++i) {
    q.gamma[i] = ToDouble(p->gamma[i]);
    q.beta[i] = ToDouble(p->beta[i]);
  }
  return p;
}

// Every gradient a layer returns, flattened with its name: one list for
// the encoder and the decoder alike.
struct Named {
  std::string name;
  const std::vector<float>* values;
};

void AddAttention(std::vector<Named>& out, const std::string& part, const MhaGradients& g) {
  for (auto [name, v] : {std::pair{"d_w_q", &g.d_w_q}, {"d_w_k", &g.d_w_k}, {"d_w_v", &g.d_w_v},
                         {"d_w_o", &g.d_w_o}, {"d_b_q", &g.d_b_q}, {"d_b_k", &g.d_b_k},
                         {"d_b_v", &g.d_b_v}, {"d_b_o", &g.d_b_o}}) {
    out.push_back({part + "." + name, v});
  }
}

void AddFfn(std::vector<Named>& out, const FfnGradients& g) {
  for (auto [name, v] : {std::pair{"ffn.d_w1", &g.d_w1}, {"ffn.d_b1", &g.d_b1},
                         {"ffn.d_w2", &g.d_w2}, {"ffn.d_b2", &g.d_b2}}) {
    out.push_back({name, v});
  }
}

void AddNorm(std::vector<Named>& out, int i, const NormGradients& g) {
  const std::string n = "norm" + std::to_string(i + 1);
  out.push_back({n + ".d_gamma", &g.d_gamma});
  out.push_back({n + ".d_beta", &g.d_beta});
}

// The layer's outputs and gradients on one table and pool.
struct LayerRun {
  std::vector<float> output;
  EncoderGradients encoder;
  DecoderGradients decoder;
  std::vector<Named> All(bool is_decoder) const {
    std::vector<Named> out;
    if (is_decoder) {
      out.push_back({"d_input", &decoder.d_input});
      out.push_back({"d_memory", &decoder.d_memory});
      AddAttention(out, "self_attention", decoder.self_attention);
      AddAttention(out, "cross_attention", decoder.cross_attention);
      AddFfn(out, decoder.ffn);
      for (int i = 0; i < 3; ++i) {
        AddNorm(out, i, i == 0 ? decoder.norm1 : i == 1 ? decoder.norm2 : decoder.norm3);
      }
    } else {
      out.push_back({"d_input", &encoder.d_input});
      AddAttention(out, "attention", encoder.attention);
      AddFfn(out, encoder.ffn);
      AddNorm(out, 0, encoder.norm1);
      AddNorm(out, 1, encoder.norm2);
    }
    return out;
  }
};

LayerRun RunLayer(const OwnedLayer& p, const KernelTable& table,
             std::shared_ptr<ThreadPool> pool = nullptr) {
  LayerRun r;
  if (p.decoder()) {
    TransformerDecoderLayer layer(p.c.config, table, std::move(pool));
    layer.SetWeights(p.self.View(), p.cross.View(), p.Ffn(), p.Norm(0), p.Norm(1), p.Norm(2));
    DecoderOptions o;
    o.causal = p.c.causal;
    o.key_padding_mask = p.key_padding;
    o.memory_key_padding_mask = p.memory_padding;
    o.training = true;
    r.output = layer.Forward(p.x.View(), p.memory.View(), o);
    r.decoder = layer.Backward(p.DOutput());
  } else {
    TransformerEncoderLayer layer(p.c.config, table, std::move(pool));
    layer.SetWeights(p.self.View(), p.Ffn(), p.Norm(0), p.Norm(1));
    EncoderOptions o;
    o.causal = p.c.causal;
    o.key_padding_mask = p.key_padding;
    o.training = true;
    r.output = layer.Forward(p.x.View(), o);
    r.encoder = layer.Backward(p.DOutput());
  }
  return r;
}

// The reference's gradients in the order of LayerRun::All.
std::vector<std::pair<std::string, std::vector<double>>> ReferenceAll(const OwnedLayer& p,
                                                                      const LayerBackward64& e) {
  std::vector<std::pair<std::string, std::vector<double>>> out = {{"d_input", e.d_input}};
  if (p.decoder()) out.push_back({"d_memory", e.d_memory});
  auto attention = [&](const MhaBackward64& g) {
    for (const auto* v : {&g.d_w_q, &g.d_w_k, &g.d_w_v, &g.d_w_o, &g.d_b_q, &g.d_b_k, &g.d_b_v,
                          &g.d_b_o}) {
      out.push_back({"", *v});
    }
  };
  attention(e.self_attention);
  if (p.decoder()) attention(e.cross_attention);
  for (const auto* v : {&e.d_w1, &e.d_b1, &e.d_w2, &e.d_b2}) out.push_back({"", *v});
  for (size_t i = 0; i < p.sublayers(); ++i) {
    out.push_back({"", e.d_gamma[i]});
    out.push_back({"", e.d_beta[i]});
  }
  return out;
}

LayerBackward64 Reference(const OwnedLayer& p, bool with_gradients = true) {
  const std::vector<double> d_output = ToDouble(p.d_output);
  return ReferenceLayerBackward(p.c.config, p.attention, p.doubles, p.self_options,
                                p.cross_options,
                                with_gradients ? std::span<const double>(d_output)
                                               : std::span<const double>());
}

const LayerCase kCases[] = {
    {"encoder_pre_ln_gelu_erf_causal",
     {.d_model = 16, .num_heads = 2, .ffn_dim = 40, .norm_first = true,
      .activation = Activation::kGeluErf},
     2, 9, 0, true, false},
    {"encoder_post_ln_gelu_tanh_padding",
     {.d_model = 24, .num_heads = 3, .ffn_dim = 20, .activation = Activation::kGeluTanh}, 2, 37,
     0, false, true},
    {"decoder_post_ln_relu_padding",
     {.d_model = 16, .num_heads = 4, .ffn_dim = 24}, 2, 7, 11, true, true},
    {"decoder_pre_ln_gelu_tanh",
     {.d_model = 20, .num_heads = 2, .ffn_dim = 36, .norm_first = true,
      .activation = Activation::kGeluTanh},
     1, 35, 66, true, false},
};

std::vector<std::string> CaseNames() { return CaseNamesOf(kCases); }

LayerCase FindCase(const std::string& name) { return CaseNamed(kCases, name); }

// ---------------------------------------------------------------------------
// The golden case: PyTorch's gradients of sum(output * d_output).

std::span<const float> F(const GoldenCase& c, const std::string& name) {
  return c.Tensor(name).f32;
}

class GoldenLayerBackward : public TableCaseTest {};

TEST_P(GoldenLayerBackward, MatchesAutograd) {
  const GoldenCase c = LoadGoldenCase(case_name());
  LayerConfig config;
  config.d_model = c.Config("d_model");
  config.num_heads = c.Config("num_heads");
  config.ffn_dim = c.Config("ffn_dim");
  config.eps = c.config.at("layer_norm_eps");
  ASSERT_EQ(c.config_text.at("norm"), "post");
  ASSERT_EQ(c.config_text.at("activation"), "relu");
  TransformerEncoderLayer layer(config, table());
  layer.SetWeights({F(c, "w_q"), F(c, "w_k"), F(c, "w_v"), F(c, "w_o"), F(c, "b_q"),
                    F(c, "b_k"), F(c, "b_v"), F(c, "b_o")},
                   {F(c, "ffn_w1"), F(c, "ffn_b1"), F(c, "ffn_w2"), F(c, "ffn_b2")},
                   {F(c, "ln1_gamma"), F(c, "ln1_beta")}, {F(c, "ln2_gamma"), F(c, "ln2_beta")});
  const GoldenTensor& x = c.Tensor("input");
  EncoderOptions options;
  options.training = true;
  options.causal = c.config_text.at("causal") != "none";
  const std::vector<float> out = layer.Forward({x.f32, x.shape[0], x.shape[1], x.shape[2]}, options);
  EXPECT_TRUE(AllNear(out, F(c, "output"), c.tolerance)) << "output";
  const EncoderGradients g =
      layer.Backward({F(c, "d_output"), x.shape[0], x.shape[1], x.shape[2]});

  const MhaConfig attention =
      MultiHeadAttention(MhaConfig{.d_model = config.d_model, .num_heads = config.num_heads})
          .config();
  const size_t chain = LayerChainLength(config, attention, 2, x.shape[0], x.shape[1], 0);
  std::vector<Named> all;
  all.push_back({"d_input", &g.d_input});
  AddAttention(all, "attention", g.attention);
  AddFfn(all, g.ffn);
  AddNorm(all, 0, g.norm1);
  AddNorm(all, 1, g.norm2);
  // Golden names: d_w_q ..., d_ffn_w1 ..., d_ln1_gamma ...
  auto golden_name = [](std::string n) {
    for (auto [ours, theirs] : {std::pair{"attention.", ""}, {"ffn.d_", "d_ffn_"},
                                {"norm1.d_", "d_ln1_"}, {"norm2.d_", "d_ln2_"}}) {
      if (n.rfind(ours, 0) == 0) return theirs + n.substr(std::string(ours).size());
    }
    return n;
  };
  for (const Named& n : all) {
    const std::string name = golden_name(n.name);
    const std::vector<float>& expected = c.Tensor(name).f32;
    // The case's tolerance, or the float32 bound if tighter.
    const double tolerance = std::min(c.tolerance, FloatBound(chain, MaxAbs(expected)));
    EXPECT_TRUE(AllNear(*n.values, expected, tolerance)) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GoldenLayerBackward,
    ::testing::ValuesIn(OnEveryTable(GoldenCaseNames("encoder_layer_backward"))),
    TableCaseParamName);

// ---------------------------------------------------------------------------
// Our own problems against the float64 reference.

class LayerBackwardReference : public TableCaseTest {};

TEST_P(LayerBackwardReference, MatchesFloat64) {
  const auto p = MakeLayer(FindCase(case_name()), 11);
  const LayerRun r = RunLayer(*p, table());
  const LayerBackward64 e = Reference(*p);
  const auto expected = ReferenceAll(*p, e);
  const std::vector<Named> actual = r.All(p->decoder());
  ASSERT_EQ(actual.size(), expected.size());
  double max_abs = 0;
  for (const auto& [name, v] : expected) max_abs = std::max(max_abs, MaxAbs(v));
  const double bound =
      FloatBound(LayerChainLength(p->c.config, p->attention, p->sublayers(), p->c.batch,
                                  p->c.tokens, p->c.memory_tokens),
                 max_abs);
  EXPECT_TRUE(AllNear(r.output, e.output, bound)) << "output";
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_TRUE(AllNear(*actual[i].values, expected[i].second, bound)) << actual[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LayerBackwardReference,
                         ::testing::ValuesIn(OnEveryTable(CaseNames())), TableCaseParamName);

// The reference itself: central differences of sum(output * d_output) in
// double against its gradients, for the inputs and a sample of every
// parameter, on small versions of the cases.
TEST_P(ReferenceGradients, MatchFiniteDifferences) {
  const auto p = MakeLayer(SmallCase(FindCase(GetParam()), 3), 5);
  ExpectReferenceGradients(*p, Reference, [&](const auto& check, auto& q, const auto& e) {
    if (p->decoder()) {
      check("memory", q.memory, e.d_memory, 1);
      check("cross.w_k", q.cross_attention.w_k, e.cross_attention.d_w_k, 7);
    }
    check("self.w_q", q.self_attention.w_q, e.self_attention.d_w_q, 7);
    check("self.b_o", q.self_attention.b_o, e.self_attention.d_b_o, 3);
    check("w1", q.w1, e.d_w1, 11);
    check("b1", q.b1, e.d_b1, 5);
    check("w2", q.w2, e.d_w2, 11);
    check("b2", q.b2, e.d_b2, 5);
    for (size_t i = 0; i < p->sublayers(); ++i) {
      check("gamma", q.gamma[i], e.d_gamma[i], 3);
      check("beta", q.beta[i], e.d_beta[i], 3);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceGradients, ::testing::ValuesIn(CaseNames()),
                         CaseParamName);

#if SA_HAVE_THREADS  // a wasm build without threads runs one
// ---------------------------------------------------------------------------
// Threads: every split the layers make gives the same bits as one thread.

class LayerBackwardThreads : public TableTest {};

TEST_P(LayerBackwardThreads, BitIdenticalForOneTwoThreeThreads) {
  // Large enough that the GEMMs, the attention and LayerNorm split.
  for (LayerCase c : {LayerCase{"encoder",
                                {.d_model = 64, .num_heads = 4, .ffn_dim = 256,
                                 .activation = Activation::kGeluErf},
                                2, 70, 0, true, true},
                      LayerCase{"decoder",
                                {.d_model = 64, .num_heads = 4, .ffn_dim = 256,
                                 .norm_first = true},
                                2, 70, 50, true, true}}) {
    SCOPED_TRACE(c.name);
    const auto p = MakeLayer(c, 3);
    const LayerRun one = RunLayer(*p, table(), SharedThreadPool(1));
    const std::vector<Named> want = one.All(p->decoder());
    for (size_t threads : {2, 3}) {
      const LayerRun r = RunLayer(*p, table(), SharedThreadPool(threads));
      EXPECT_EQ(r.output, one.output) << threads << " threads";
      const std::vector<Named> got = r.All(p->decoder());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(*got[i].values, *want[i].values) << got[i].name << ", " << threads << " threads";
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(LayerBackwardThreads);

#endif  // SA_HAVE_THREADS

// ---------------------------------------------------------------------------
// Errors: named, and the layer stays usable.

TEST(LayerBackwardErrors, NamedAndRecoverable) {
  const auto p = MakeLayer(kCases[2], 1);  // a decoder
  TransformerDecoderLayer decoder(p->c.config);
  decoder.SetWeights(p->self.View(), p->cross.View(), p->Ffn(), p->Norm(0), p->Norm(1),
                     p->Norm(2));
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { decoder.Backward(p->DOutput()); },
                                           {"expected the last forward to be a training one"}));
  DecoderOptions o;
  o.causal = p->c.causal;
  o.key_padding_mask = p->key_padding;
  o.memory_key_padding_mask = p->memory_padding;
  decoder.Forward(p->x.View(), p->memory.View(), o);  // not a training one
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { decoder.Backward(p->DOutput()); },
                                           {"expected the last forward to be a training one"}));
  o.training = true;
  const PrecomputedKV kv = decoder.PrecomputeMemory(p->memory.View());
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { decoder.Forward(p->x.View(), kv, o); },
      {"options.training", "precomputed memory", "expected false, got true"}));
  decoder.Forward(p->x.View(), p->memory.View(), o);
  std::vector<float> d = p->d_output;
  d.pop_back();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { decoder.Backward({d, 2, 7, 16}); },
                                                {"d_output", "expected"}));
  // The output's length in another shape: [2, 7, 16] is the output's.
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { decoder.Backward({p->d_output, 7, 2, 16}); },
      {"d_output: expected shape [2, 7, 16] (the training forward's output's), got [7, 2, 16]"}));
  d = p->d_output;
  d[3] = NAN;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { decoder.Backward({d, 2, 7, 16}); },
                                                {"d_output", "NaN"}));
  // The saved state stayed: the same gradients as a fresh layer's.
  const DecoderGradients g = decoder.Backward(p->DOutput());
  const LayerRun fresh = RunLayer(*p, decoder.self_attention().kernels());
  EXPECT_EQ(g.d_input, fresh.decoder.d_input);
  EXPECT_EQ(g.d_memory, fresh.decoder.d_memory);
  // SetWeights drops it.
  decoder.SetWeights(p->self.View(), p->cross.View(), p->Ffn(), p->Norm(0), p->Norm(1),
                     p->Norm(2));
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { decoder.Backward(p->DOutput()); },
                                           {"expected the last forward to be a training one"}));

  const auto q = MakeLayer(kCases[0], 1);  // an encoder
  TransformerEncoderLayer encoder(q->c.config);
  encoder.SetWeights(q->self.View(), q->Ffn(), q->Norm(0), q->Norm(1));
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { encoder.Backward(q->DOutput()); },
                                           {"expected the last forward to be a training one"}));
  EncoderOptions eo;
  eo.training = true;
  eo.causal = q->c.causal;
  encoder.Forward(q->x.View(), eo);  // [2, 9, 16]
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { encoder.Backward({q->d_output, 1, 18, 16}); },
      {"d_output: expected shape [2, 9, 16] (the training forward's output's), got [1, 18, 16]"}));
  EXPECT_EQ(encoder.Backward(q->DOutput()).d_input.size(), q->d_output.size());
}

}  // namespace
}  // namespace simd_attention::testing
