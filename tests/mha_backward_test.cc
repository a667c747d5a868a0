// MultiHeadAttention::Backward on every kernel table: every `mha_backward`
// case of ../shared/golden (PyTorch's autograd), the float64 reference
// (itself checked by finite differences) with every mask and variant,
// rotary positions (both styles, partial, offset) and QK-norm included,
// bit-identical results across thread counts and runs, and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "golden.h"
#include "gradient_util.h"
#include "random_mha.h"
#include "reference/mha_backward_reference.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/thread_pool.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// ---------------------------------------------------------------------------
// Golden cases: PyTorch's gradients of sum(output * d_output).

class GoldenBackward : public TableCaseTest {};

TEST_P(GoldenBackward, MatchesAutograd) {
  const GoldenCase c = LoadGoldenCase(case_name());
  MultiHeadAttention mha(GoldenMhaConfig(c), table());
  mha.SetWeights(GoldenMhaWeights(c));
  const GoldenTensor& x = c.Tensor("query");
  const Tensor3 query{x.f32, x.shape[0], x.shape[1], x.shape[2]};
  const bool self = !c.Has("memory");
  Tensor3 memory = query;
  if (!self) {
    const GoldenTensor& m = c.Tensor("memory");
    memory = {m.f32, m.shape[0], m.shape[1], m.shape[2]};
  }
  MhaOptions options;
  options.training = true;
  options.causal = c.config_text.count("causal") && c.config_text.at("causal") != "none";
  options.causal_alignment = c.config_text.count("causal") && c.config_text.at("causal") == "top_left"
                                 ? CausalAlignment::kTopLeft
                                 : CausalAlignment::kBottomRight;
  if (c.Has("key_padding_mask")) options.key_padding_mask = c.Tensor("key_padding_mask").u8;
  const MhaResult r = mha.Forward(query, memory, memory, options);
  EXPECT_TRUE(AllNear(r.output, c.Tensor("output").f32, c.tolerance)) << "output";
  const GoldenTensor& d = c.Tensor("d_output");
  const MhaGradients g = mha.Backward(Tensor3{d.f32, d.shape[0], d.shape[1], d.shape[2]});

  // The case's tolerance, or the float32 bound above if tighter.
  const size_t chain = MhaChainLength(mha.config(), query.batch, query.tokens, memory.tokens);
  auto expect = [&](const char* name, const std::vector<float>& actual) {
    const std::vector<float>& expected = c.Tensor(name).f32;
    const double tolerance = std::min(c.tolerance, FloatBound(chain, MaxAbs(expected)));
    EXPECT_TRUE(AllNear(actual, expected, tolerance)) << name;
  };
  if (self) {
    expect("d_input", g.d_input);
  } else {
    expect("d_query", g.d_query);
    std::vector<float> d_memory(g.d_key.size());
    for (size_t i = 0; i < d_memory.size(); ++i) d_memory[i] = g.d_key[i] + g.d_value[i];
    expect("d_memory", d_memory);
  }
  expect("d_w_q", g.d_w_q);
  expect("d_w_k", g.d_w_k);
  expect("d_w_v", g.d_w_v);
  expect("d_w_o", g.d_w_o);
  expect("d_b_q", g.d_b_q);
  expect("d_b_k", g.d_b_k);
  expect("d_b_v", g.d_b_v);
  expect("d_b_o", g.d_b_o);
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenBackward,
                         ::testing::ValuesIn(OnEveryTable(GoldenCaseNames("mha_backward"))),
                         TableCaseParamName);

// ---------------------------------------------------------------------------
// Problems of our own against the float64 reference: every mask, grouped
// heads, windows, soft-capping, no bias, other key/value widths.

struct OwnedMasks {
  std::vector<float> attn_mask;
  std::vector<uint8_t> bool_mask, key_padding;
  std::vector<size_t> kv_lengths;
};

struct Variant {
  const char* name;
  MhaConfig config;
  size_t batch, tq, tk;
  bool self;
  // Sets the options, their masks owned by `masks`.
  void (*options)(MhaOptions& o, OwnedMasks& masks, size_t batch, size_t heads, size_t tq,
                  size_t tk, std::mt19937& rng);
};

const Variant kVariants[] = {
    {"cross_widths", {.d_model = 16, .num_heads = 2, .kdim = 12, .vdim = 10}, 2, 5, 7, false,
     [](MhaOptions&, OwnedMasks&, size_t, size_t, size_t, size_t, std::mt19937&) {}},
    {"no_bias_head_dims", {.d_model = 12, .num_heads = 3, .head_dim = 5, .head_dim_v = 3,
                           .bias = false}, 1, 9, 9, true,
     [](MhaOptions&, OwnedMasks&, size_t, size_t, size_t, size_t, std::mt19937&) {}},
    // 37 queries and 70 keys: two query blocks, two key blocks.
    {"causal_top_left_padding_additive", {.d_model = 16, .num_heads = 2}, 2, 37, 70, false,
     [](MhaOptions& o, OwnedMasks& masks, size_t batch, size_t, size_t tq, size_t tk,
        std::mt19937& rng) {
       o.causal = true;
       o.causal_alignment = CausalAlignment::kTopLeft;
       masks.key_padding = RandomKeyPadding(batch, tk, 0.7, rng);
       masks.attn_mask = RandomAdditiveMask(tq * tk, 0.1, rng);
       o.key_padding_mask = masks.key_padding;
       o.attn_mask = masks.attn_mask;
     }},
    // A boolean mask per (batch, head); query 3 of batch item 0 sees no key
    // in any head.
    {"bool_mask_kv_lengths", {.d_model = 16, .num_heads = 2}, 2, 33, 33, true,
     [](MhaOptions& o, OwnedMasks& masks, size_t batch, size_t heads, size_t tq, size_t tk,
        std::mt19937& rng) {
       masks.bool_mask.resize(batch * heads * tq * tk);
       std::bernoulli_distribution keep(0.8);
       for (auto& m : masks.bool_mask) m = keep(rng);
       for (size_t h = 0; h < heads; ++h) {
         std::fill_n(masks.bool_mask.begin() + (h * tq + 3) * tk, tk, 0);
       }
       masks.kv_lengths = {tk, tk - 5};
       o.bool_mask = masks.bool_mask;
       o.kv_lengths = masks.kv_lengths;
     }},
    {"gqa_window_softcap_scale", {.d_model = 16, .num_heads = 4, .num_kv_heads = 2}, 2, 40, 40,
     true,
     [](MhaOptions& o, OwnedMasks&, size_t, size_t, size_t, size_t, std::mt19937&) {
       o.window = {5, 2};
       o.softcap = 1.5;
       o.scale = 0.9;
     }},
    {"causal_bottom_right_window_gqa", {.d_model = 24, .num_heads = 6, .num_kv_heads = 1}, 1, 20,
     90, false,
     [](MhaOptions& o, OwnedMasks&, size_t, size_t, size_t, size_t, std::mt19937&) {
       o.causal = true;
       o.window = {40, -1};
     }},
    // Llama's attention as it continues a sequence: half-style RoPE over
    // part of each head (10 of 12 features: pairs past the vectors run the
    // tail), QK-norm, grouped heads, positions from 5.
    {"rope_half_partial_qk_norm_offset",
     {.d_model = 24, .num_heads = 2, .head_dim = 12, .num_kv_heads = 1,
      .rope = {RopeStyle::kHalf, 500.0, 10}, .qk_norm = {true, NormKind::kRmsNorm, 1e-5}},
     2, 35, 35, true,
     [](MhaOptions& o, OwnedMasks&, size_t, size_t, size_t, size_t, std::mt19937&) {
       o.causal = true;
       o.position_offset = 5;
     }},
    // GPT-J's interleaved pairs over whole heads and Gemma's 1 + w QK-norm,
    // cross-attention: the keys from position 0, the queries from 3.
    {"rope_interleaved_gemma_qk_norm_cross",
     {.d_model = 16, .num_heads = 2, .kdim = 12, .vdim = 10, .head_dim = 6,
      .rope = {RopeStyle::kInterleaved, 10000.0, 0},
      .qk_norm = {true, NormKind::kGemmaRmsNorm, 1e-6}},
     2, 5, 7, false,
     [](MhaOptions& o, OwnedMasks&, size_t, size_t, size_t, size_t, std::mt19937&) {
       o.position_offset = 3;
     }},
};

struct Problem {
  OwnedMasks owned;
  MhaProblem floats;
  std::vector<float> q_norm, k_norm;  // as stored; empty without QK-norm
  MhaProblem64 doubles;
  MhaOptions options;
  std::vector<float> d_output;
  std::vector<double> d_output64;
  // d_output in the output's shape [B, Tq, d_model].
  Tensor3 DOutput() const {
    return {d_output, floats.query.batch, floats.query.tokens, floats.config.d_model};
  }
  MhaWeights Weights() const {
    MhaWeights w = floats.weights.View();
    w.q_norm = q_norm;
    w.k_norm = k_norm;
    return w;
  }
};

std::unique_ptr<Problem> MakeProblem(const Variant& variant, uint32_t seed) {
  auto p = std::make_unique<Problem>();
  std::mt19937 rng(seed);
  const MhaConfig config = MultiHeadAttention(variant.config).config();
  p->floats = RandomProblem(config, variant.batch, variant.tq, variant.tk, rng);
  if (variant.self) {
    p->floats.key = p->floats.query;
    p->floats.value = p->floats.query;
  }
  variant.options(p->options, p->owned, variant.batch, config.num_heads, variant.tq, variant.tk,
                  rng);
  p->d_output = RandomVector(variant.batch * variant.tq * config.d_model, 1.0f, rng);
  p->d_output64 = ToDouble(p->d_output);
  const OwnedWeights& w = p->floats.weights;
  if (config.qk_norm.enabled) {
    // Scales around 1 (Gemma's stored around 0).
    const float centre = Traits(config.qk_norm.kind).plus_one ? 0.0f : 1.0f;
    for (std::vector<float>* scales : {&p->q_norm, &p->k_norm}) {
      *scales = RandomVector(config.head_dim, 0.3f, rng);
      for (float& x : *scales) x += centre;
    }
  }
  p->doubles = {variant.batch, variant.tq, variant.tk, ToDouble(p->floats.query.data),
                ToDouble(p->floats.key.data), ToDouble(p->floats.value.data), ToDouble(w.w_q),
                ToDouble(w.w_k), ToDouble(w.w_v), ToDouble(w.w_o), ToDouble(w.b_q),
                ToDouble(w.b_k), ToDouble(w.b_v), ToDouble(w.b_o), ToDouble(p->q_norm),
                ToDouble(p->k_norm), variant.self ? p->options.position_offset : 0};
  return p;
}

// Forward (training) then Backward; self-attention passes one tensor. With
// `into`, the overload that reuses its vectors, returning a copy.
MhaGradients RunBackward(MultiHeadAttention& mha, const Problem& p, bool self,
                         MhaGradients* into = nullptr) {
  MhaOptions options = p.options;
  options.training = true;
  const Tensor3 q = p.floats.query.View();
  if (self) {
    mha.Forward(q, options);
  } else {
    mha.Forward(q, p.floats.key.View(), p.floats.value.View(), options);
  }
  if (into == nullptr) return mha.Backward(p.DOutput());
  mha.Backward(p.DOutput(), *into);
  return *into;
}

class BackwardReference : public TableCaseTest {};

TEST_P(BackwardReference, MatchesFloat64) {
  for (const Variant& variant : kVariants) {
    if (case_name() != variant.name) continue;
    const auto p = MakeProblem(variant, 7);
    MultiHeadAttention mha(p->floats.config, table());
    mha.SetWeights(p->Weights());
    const MhaGradients g = RunBackward(mha, *p, variant.self);
    const MhaBackward64 e =
        ReferenceMhaBackward(mha.config(), p->doubles, p->options, p->d_output64);
    const double bound = FloatBound(
        MhaChainLength(mha.config(), variant.batch, variant.tq, variant.tk),
        std::max({MaxAbs(e.d_query), MaxAbs(e.d_key), MaxAbs(e.d_value), MaxAbs(e.d_w_q),
                  MaxAbs(e.d_w_k), MaxAbs(e.d_w_v), MaxAbs(e.d_w_o), MaxAbs(e.d_b_o)}));
    // The reference's forward (its rotations and norms) is the forward's.
    const MhaResult forward = variant.self ? mha.Forward(p->floats.query.View(), p->options)
                                           : mha.Forward(p->floats.query.View(),
                                                         p->floats.key.View(),
                                                         p->floats.value.View(), p->options);
    EXPECT_TRUE(AllNear(forward.output, e.output, bound)) << "output";
    EXPECT_TRUE(AllNear(g.d_query, e.d_query, bound)) << "d_query";
    EXPECT_TRUE(AllNear(g.d_key, e.d_key, bound)) << "d_key";
    EXPECT_TRUE(AllNear(g.d_value, e.d_value, bound)) << "d_value";
    EXPECT_TRUE(AllNear(g.d_w_q, e.d_w_q, bound)) << "d_w_q";
    EXPECT_TRUE(AllNear(g.d_w_k, e.d_w_k, bound)) << "d_w_k";
    EXPECT_TRUE(AllNear(g.d_w_v, e.d_w_v, bound)) << "d_w_v";
    EXPECT_TRUE(AllNear(g.d_w_o, e.d_w_o, bound)) << "d_w_o";
    EXPECT_TRUE(AllNear(g.d_b_q, e.d_b_q, bound)) << "d_b_q";
    EXPECT_TRUE(AllNear(g.d_b_k, e.d_b_k, bound)) << "d_b_k";
    EXPECT_TRUE(AllNear(g.d_b_v, e.d_b_v, bound)) << "d_b_v";
    EXPECT_TRUE(AllNear(g.d_b_o, e.d_b_o, bound)) << "d_b_o";
    EXPECT_TRUE(AllNear(g.d_q_norm, e.d_q_norm, bound)) << "d_q_norm";
    EXPECT_TRUE(AllNear(g.d_k_norm, e.d_k_norm, bound)) << "d_k_norm";
    EXPECT_EQ(g.d_q_norm.empty(), !variant.config.qk_norm.enabled);
    if (variant.self) {
      std::vector<double> d_input(e.d_query.size());
      for (size_t i = 0; i < d_input.size(); ++i) {
        d_input[i] = e.d_query[i] + e.d_key[i] + e.d_value[i];
      }
      EXPECT_TRUE(AllNear(g.d_input, d_input, bound)) << "d_input";
    } else {
      EXPECT_TRUE(g.d_input.empty());
    }
  }
}

std::vector<std::string> VariantNames() {
  std::vector<std::string> names;
  for (const Variant& v : kVariants) names.push_back(v.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Variants, BackwardReference,
                         ::testing::ValuesIn(OnEveryTable(VariantNames())), TableCaseParamName);

// A query that sees no key has zero probabilities in every head whatever
// its Q, so its query gradient is exactly zero, and no NaN appears.
class BackwardMaskedRow : public TableTest {};

TEST_P(BackwardMaskedRow, HasZeroQueryGradient) {
  const Variant& variant = kVariants[3];
  ASSERT_STREQ(variant.name, "bool_mask_kv_lengths");
  const auto p = MakeProblem(variant, 3);
  MultiHeadAttention mha(p->floats.config, table());
  mha.SetWeights(p->Weights());
  const MhaGradients g = RunBackward(mha, *p, variant.self);
  const size_t d = mha.config().d_model;
  for (size_t e = 0; e < d; ++e) EXPECT_EQ(g.d_query[3 * d + e], 0.0f) << e;
  for (float x : g.d_input) ASSERT_FALSE(std::isnan(x));
  EXPECT_NE(MaxAbs(g.d_query), 0.0);
}

INSTANTIATE_ON_EVERY_TABLE(BackwardMaskedRow);

// Equal bits (the threads and run-to-run tests).
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp of an empty vector's null data is undefined (UBSan): compare only
  // what there is.
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

#if SA_HAVE_THREADS  // a wasm build without threads runs one
// 1, 2 and 3 threads (splitting even the smallest loop) and two runs
// each, the second into one MhaGradients reused throughout, give the same
// bits: every split keeps each sum's order.
class BackwardThreads : public TableTest {};

TEST_P(BackwardThreads, BitIdenticalForEveryThreadCountAndRun) {
  for (const Variant* variant : {&kVariants[2], &kVariants[4], &kVariants[6]}) {
    const auto p = MakeProblem(*variant, 5);
    std::unique_ptr<MhaGradients> first;
    MhaGradients reused;
    ASSERT_EQ(kVariants[6].config.rope.style, RopeStyle::kHalf);
    for (size_t threads : {1, 2, 3}) {
      MultiHeadAttention mha(p->floats.config, table(),
                             std::make_shared<ThreadPool>(threads, 0.0, 0.0,
                                                          ThreadPool::Start::kNow, threads));
      mha.SetWeights(p->Weights());
      for (int run = 0; run < 2; ++run) {
        MhaGradients g = RunBackward(mha, *p, variant->self, run == 1 ? &reused : nullptr);
        if (first == nullptr) {
          first = std::make_unique<MhaGradients>(std::move(g));
          continue;
        }
        const std::string where = std::string(variant->name) + ", " +
                                  std::to_string(threads) + " threads, run " +
                                  std::to_string(run);
        EXPECT_TRUE(SameBits(g.d_query, first->d_query)) << where;
        EXPECT_TRUE(SameBits(g.d_key, first->d_key)) << where;
        EXPECT_TRUE(SameBits(g.d_value, first->d_value)) << where;
        EXPECT_TRUE(SameBits(g.d_input, first->d_input)) << where;
        EXPECT_TRUE(SameBits(g.d_w_q, first->d_w_q)) << where;
        EXPECT_TRUE(SameBits(g.d_w_k, first->d_w_k)) << where;
        EXPECT_TRUE(SameBits(g.d_w_v, first->d_w_v)) << where;
        EXPECT_TRUE(SameBits(g.d_w_o, first->d_w_o)) << where;
        EXPECT_TRUE(SameBits(g.d_b_q, first->d_b_q)) << where;
        EXPECT_TRUE(SameBits(g.d_b_k, first->d_b_k)) << where;
        EXPECT_TRUE(SameBits(g.d_b_v, first->d_b_v)) << where;
        EXPECT_TRUE(SameBits(g.d_b_o, first->d_b_o)) << where;
        EXPECT_TRUE(SameBits(g.d_q_norm, first->d_q_norm)) << where;
        EXPECT_TRUE(SameBits(g.d_k_norm, first->d_k_norm)) << where;
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(BackwardThreads);
#endif  // SA_HAVE_THREADS

// Bad input: a clear error naming what is wrong, and the object still works.
TEST(BackwardErrors, NamedAndRecoverable) {
  const auto p = MakeProblem(kVariants[0], 9);
  MultiHeadAttention mha(p->floats.config);
  mha.SetWeights(p->Weights());
  const Tensor3 q = p->floats.query.View(), k = p->floats.key.View(), v = p->floats.value.View();
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { mha.Backward(p->DOutput()); },
                                           {"expected the last forward to be a training one"}));
  mha.Forward(q, k, v, p->options);  // not training
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { mha.Backward(p->DOutput()); },
                                           {"options.training true", "got none"}));
  MhaOptions training = p->options;
  training.training = true;
  mha.Forward(q, k, v, training);
  const MhaGradients expected = mha.Backward(p->DOutput());
  const Tensor3 d = p->DOutput();  // [2, 5, 16]
  const std::vector<float> short_d(p->d_output.begin(), p->d_output.end() - 1);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.Backward(Tensor3{short_d, d.batch, d.tokens, d.features}); },
      {"d_output", std::to_string(p->d_output.size()), std::to_string(short_d.size())}));
  // The right length in another shape is not the output's gradient.
  const std::pair<Tensor3, const char*> wrong[] = {{{d.data, 5, 2, 16}, "[5, 2, 16]"},
                                                    {{d.data, 1, 10, 16}, "[1, 10, 16]"},
                                                    {{d.data, 2, 10, 8}, "[2, 10, 8]"}};
  for (const auto& given : wrong) {
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        [&] { mha.Backward(given.first); },
        {"d_output: expected shape [2, 5, 16] (the training forward's output's), got ",
         given.second}));
  }
  std::vector<float> nan_d = p->d_output;
  nan_d[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.Backward(Tensor3{nan_d, d.batch, d.tokens, d.features}); },
      {"d_output", "element 5", "NaN"}));
  // The state survives a refused call: the same gradients again.
  EXPECT_TRUE(SameBits(mha.Backward(p->DOutput()).d_w_q, expected.d_w_q));
  mha.ReleaseTraining();
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { mha.Backward(p->DOutput()); },
                                           {"expected the last forward to be a training one"}));
  mha.Forward(q, k, v, training);
  mha.SetWeights(p->Weights());  // new weights: the state is stale
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { mha.Backward(p->DOutput()); },
                                           {"expected the last forward to be a training one"}));

  // Forwards that keep nothing refuse training.
  MultiHeadAttention self(MultiHeadAttention(kVariants[1].config).config());
  const auto sp = MakeProblem(kVariants[1], 9);
  self.SetWeights(sp->floats.weights.View());
  KVCache cache = self.CreateKVCache(1, 16);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { self.ForwardIncremental(sp->floats.query.View(), cache, training); },
      {"options.training", "ForwardIncremental", "expected false, got true"}));
  EXPECT_EQ(cache.length(), 0u);
  const PrecomputedKV kv = self.PrecomputeKeyValue(sp->floats.query.View());
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { self.Forward(sp->floats.query.View(), kv, training); },
      {"options.training", "precomputed"}));
  // Nor 16-bit or int8 weights: the optimizers update float32 panels in place.
  MhaConfig narrow_config = p->floats.config;
  narrow_config.weights = WeightType::kF16;
  MultiHeadAttention narrow(narrow_config);
  narrow.SetWeights(p->floats.weights.View());
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { narrow.Forward(q, k, v, training); },
      {"options.training", "config.weights float32, got float16"}));
}

// Backward reads the training forward's record alone: a call between them
// that projects into the attention's workspaces (PrecomputeKeyValue of
// another input) leaves every gradient as it was.
TEST(BackwardRecord, HoldsWhatBackwardReads) {
  const Variant& variant = kVariants[6];
  ASSERT_TRUE(variant.self);
  const auto p = MakeProblem(variant, 13), other = MakeProblem(variant, 14);
  MultiHeadAttention mha(p->floats.config);
  mha.SetWeights(p->Weights());
  const MhaGradients expected = RunBackward(mha, *p, true);
  MhaOptions training = p->options;
  training.training = true;
  mha.Forward(p->floats.query.View(), training);
  const PrecomputedKV kv = mha.PrecomputeKeyValue(other->floats.query.View());
  const MhaGradients g = mha.Backward(p->DOutput());
  EXPECT_TRUE(SameBits(g.d_input, expected.d_input));
  EXPECT_TRUE(SameBits(g.d_w_q, expected.d_w_q));
  EXPECT_TRUE(SameBits(g.d_w_k, expected.d_w_k));
  EXPECT_TRUE(SameBits(g.d_w_v, expected.d_w_v));
  EXPECT_TRUE(SameBits(g.d_w_o, expected.d_w_o));
  EXPECT_TRUE(SameBits(g.d_k_norm, expected.d_k_norm));
}

// The reference itself against central differences of its own forward, in
// double: L = sum(output * d_output), each tensor probed at a few elements.
TEST_P(ReferenceGradients, MatchFiniteDifferences) {
  for (const Variant& variant : kVariants) {
    if (GetParam() != variant.name) continue;
    const auto p = MakeProblem(variant, 11);
    const MhaConfig config = MultiHeadAttention(variant.config).config();
    const MhaBackward64 g =
        ReferenceMhaBackward(config, p->doubles, p->options, p->d_output64);
    auto loss = [&](const MhaProblem64& problem) {
      const MhaBackward64 f = ReferenceMhaBackward(config, problem, p->options, {});
      double l = 0;
      for (size_t i = 0; i < f.output.size(); ++i) l += f.output[i] * p->d_output64[i];
      return l;
    };
    // Self-attention's one tensor: perturbing it moves query, key and value.
    auto probe = [&](const char* name, std::vector<double> MhaProblem64::*member,
                     const std::vector<double>& gradient) {
      const size_t n = (p->doubles.*member).size();
      for (size_t at : {size_t{0}, n / 3, n - 1}) {
        if (n == 0) return;
        const double h = 1e-5;
        MhaProblem64 plus = p->doubles, minus = p->doubles;
        for (MhaProblem64* q : {&plus, &minus}) {
          const double step = q == &plus ? h : -h;
          (q->*member)[at] += step;
          if (variant.self && member == &MhaProblem64::query) {
            q->key[at] += step;
            q->value[at] += step;
          }
        }
        const double numeric = (loss(plus) - loss(minus)) / (2 * h);
        // Central differences err by h^2 f''' / 6 (about 1e-10 here) plus
        // the loss's rounding over 2h (1e-16 * |L| / 1e-5).
        EXPECT_NEAR(gradient[at], numeric, 1e-7 * std::max(1.0, std::fabs(numeric)))
            << name << "[" << at << "]";
      }
    };
    std::vector<double> d_query = g.d_query;
    if (variant.self) {
      for (size_t i = 0; i < d_query.size(); ++i) d_query[i] += g.d_key[i] + g.d_value[i];
    }
    probe("query", &MhaProblem64::query, d_query);
    if (!variant.self) {
      probe("key", &MhaProblem64::key, g.d_key);
      probe("value", &MhaProblem64::value, g.d_value);
    }
    for (const MhaParameter64& w : kMhaParameters64) probe(w.name, w.weight, g.*w.gradient);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, ReferenceGradients, ::testing::ValuesIn(VariantNames()),
                         CaseParamName);

}  // namespace
}  // namespace simd_attention::testing
