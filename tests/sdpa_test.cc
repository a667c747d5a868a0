// ScaledDotProductAttention on every kernel table: every `attention` case of
// ../shared/golden within its tolerance (head- and token-major), a sweep of
// combined options against the double-precision reference, the properties
// that tie the options together, thread-count independence and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "golden.h"
#include "random_mha.h"
#include "reference/sdpa_reference.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/scaled_dot_product_attention.h"
#include "simd_attention/thread_pool.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// A [B, H, T, d] tensor owning its data.
struct OwnedHeads {
  size_t batch = 0, heads = 0, tokens = 0, head_dim = 0;
  std::vector<float> data;
  HeadsTensor View() const { return {data, batch, heads, tokens, head_dim}; }
};

OwnedHeads RandomHeads(size_t batch, size_t heads, size_t tokens, size_t d,
                       std::mt19937& rng) {
  return {batch, heads, tokens, d, RandomVector(batch * heads * tokens * d, 1.0f, rng)};
}

// [B, H, T, d] <-> [B, T, H * d]
std::vector<float> ToTokenMajor(std::span<const float> x, size_t b_n, size_t h_n, size_t t_n,
                                size_t d_n) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < b_n; ++b) {
    for (size_t h = 0; h < h_n; ++h) {
      for (size_t t = 0; t < t_n; ++t) {
        for (size_t e = 0; e < d_n; ++e) {
          out[((b * t_n + t) * h_n + h) * d_n + e] = x[((b * h_n + h) * t_n + t) * d_n + e];
        }
      }
    }
  }
  return out;
}

// Equal infinities where either is infinite (masked scores), near elsewhere.
::testing::AssertionResult ScoresNear(std::span<const float> actual,
                                      std::span<const float> expected, double tolerance) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "sizes " << actual.size() << " vs " << expected.size();
  }
  for (size_t i = 0; i < actual.size(); ++i) {
    const bool inf_a = std::isinf(actual[i]), inf_e = std::isinf(expected[i]);
    if (inf_a != inf_e || (inf_a && actual[i] != expected[i]) ||
        (!inf_a && std::fabs(double(actual[i]) - expected[i]) > tolerance)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << actual[i] << " vs " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// A golden `attention` case as API arguments; the views point into `c`.
struct GoldenSdpa {
  HeadsTensor q, k, v;
  SdpaOptions options;
};

HeadsTensor HeadsOf(const GoldenTensor& t) {
  return {t.f32, t.shape[0], t.shape[1], t.shape[2], t.shape[3]};
}

GoldenSdpa SdpaInputs(const GoldenCase& c) {
  GoldenSdpa in;
  in.q = HeadsOf(c.Tensor("q"));
  in.k = HeadsOf(c.Tensor("k"));
  in.v = HeadsOf(c.Tensor("v"));
  SdpaOptions& o = in.options;
  const std::string causal = c.config_text.at("causal");
  o.causal = causal == "top_left"       ? CausalAlignment::kTopLeft
             : causal == "bottom_right" ? CausalAlignment::kBottomRight
                                        : CausalAlignment::kNone;
  if (c.config.count("scale")) o.scale = c.config.at("scale");
  if (c.config.at("softcap") > 0) o.softcap = c.config.at("softcap");
  if (c.config_list.count("window")) {
    o.window = {int64_t(c.config_list.at("window")[0]), int64_t(c.config_list.at("window")[1])};
  }
  if (c.Has("attn_mask")) {
    o.attn_mask = c.Tensor("attn_mask").f32;
    o.attn_mask_shape = c.Tensor("attn_mask").shape;
  }
  if (c.Has("bool_mask")) {
    o.bool_mask = c.Tensor("bool_mask").u8;
    o.bool_mask_shape = c.Tensor("bool_mask").shape;
  }
  if (c.Has("key_padding_mask")) o.key_padding_mask = c.Tensor("key_padding_mask").u8;
  o.need_weights = true;
  return in;
}

class GoldenSdpaReference : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenSdpaReference, MatchesGolden) {
  const GoldenCase c = LoadGoldenCase(GetParam());
  const GoldenSdpa in = SdpaInputs(c);
  const SdpaResult r = ReferenceScaledDotProductAttention(in.q, in.k, in.v, in.options);
  EXPECT_TRUE(AllNear(r.output, c.Tensor("output").f32, c.tolerance)) << "output";
  EXPECT_TRUE(AllNear(r.attn_weights, c.Tensor("attn_weights").f32, c.tolerance));
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenSdpaReference,
                         ::testing::ValuesIn(GoldenCaseNames("attention")), CaseParamName);

// Every case on every table, head-major and token-major: "<table>_<case>".
class GoldenSdpaOnTable : public TableCaseTest {};

TEST_P(GoldenSdpaOnTable, MatchesGolden) {
  const GoldenCase c = LoadGoldenCase(case_name());
  const GoldenSdpa in = SdpaInputs(c);
  ScaledDotProductAttention sdpa({}, table());
  const SdpaResult r = sdpa.Forward(in.q, in.k, in.v, in.options);
  const std::vector<float>& output = c.Tensor("output").f32;
  EXPECT_TRUE(AllNear(r.output, output, c.tolerance)) << "output";
  EXPECT_TRUE(AllNear(r.attn_weights, c.Tensor("attn_weights").f32, c.tolerance))
      << "attn_weights";

  auto token_major = [](const HeadsTensor& t) {
    return ToTokenMajor(t.data, t.batch, t.heads, t.tokens, t.head_dim);
  };
  const std::vector<float> q = token_major(in.q), k = token_major(in.k), v = token_major(in.v);
  SdpaOptions o = in.options;
  o.layout = HeadLayout::kTokenMajor;
  const SdpaResult t = sdpa.Forward({q, in.q.batch, in.q.heads, in.q.tokens, in.q.head_dim},
                                    {k, in.k.batch, in.k.heads, in.k.tokens, in.k.head_dim},
                                    {v, in.v.batch, in.v.heads, in.v.tokens, in.v.head_dim}, o);
  EXPECT_TRUE(AllNear(t.output,
                      ToTokenMajor(output, r.batch, r.heads, r.tq, r.head_dim_v), c.tolerance))
      << "token-major output";
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenSdpaOnTable,
                         ::testing::ValuesIn(OnEveryTable(GoldenCaseNames("attention"))),
                         TableCaseParamName);

// A random problem: q [B, H, Tq, d], k [B, Hkv, Tk, d], v [B, Hkv, Tk, dv].
struct Problem {
  OwnedHeads q, k, v;
};

Problem RandomSdpa(size_t batch, size_t heads, size_t kv_heads, size_t tq, size_t tk, size_t d,
                   size_t dv, std::mt19937& rng) {
  return {RandomHeads(batch, heads, tq, d, rng), RandomHeads(batch, kv_heads, tk, d, rng),
          RandomHeads(batch, kv_heads, tk, dv, rng)};
}

class Sdpa : public TableTest {
 protected:
  SdpaResult Run(const Problem& p, const SdpaOptions& o) {
    ScaledDotProductAttention sdpa({}, table());
    return sdpa.Forward(p.q.View(), p.k.View(), p.v.View(), o);
  }

  // Two ways of saying the same attention: outputs and probabilities must be
  // bit-identical, since the kernels see the same visible keys either way.
  // Returns the first result for further checks.
  SdpaResult ExpectIdentical(const Problem& pa, SdpaOptions a, const Problem& pb, SdpaOptions b) {
    a.need_weights = b.need_weights = true;
    const SdpaResult ra = Run(pa, a), rb = Run(pb, b);
    EXPECT_EQ(ra.output, rb.output);
    EXPECT_EQ(ra.attn_weights, rb.attn_weights);
    return ra;
  }
};

// Every option alone and combined, over sizes that cross query blocks (32),
// key blocks (64) and vector widths, against the double-precision reference.
TEST_P(Sdpa, SweepMatchesReference) {
  std::mt19937 rng(14);
  struct Shape {
    size_t batch, heads, kv_heads, tq, tk, d, dv;
  };
  const Shape shapes[] = {{1, 2, 1, 1, 200, 16, 16},  {2, 4, 2, 70, 150, 12, 20},
                          {1, 3, 3, 130, 130, 8, 8},   {2, 2, 1, 33, 65, 5, 7}};
  const std::array<int64_t, 2> windows[] = {{-1, -1}, {0, 0}, {5, 0}, {40, -1},
                                            {-1, 17}, {70, 3}, {1, 1}};
  const CausalAlignment causals[] = {CausalAlignment::kNone, CausalAlignment::kTopLeft,
                                     CausalAlignment::kBottomRight};
  size_t variant = 0;
  for (const Shape& s : shapes) {
    const Problem p = RandomSdpa(s.batch, s.heads, s.kv_heads, s.tq, s.tk, s.d, s.dv, rng);
    const std::vector<float> additive = RandomVector(s.heads * s.tq * s.tk, 1.0f, rng);
    std::vector<uint8_t> allowed(s.batch * s.tq * s.tk), padding(s.batch * s.tk);
    for (uint8_t& x : allowed) x = rng() % 5 != 0;
    for (uint8_t& x : padding) x = rng() % 7 != 0;
    std::vector<size_t> lengths(s.batch);
    for (size_t& x : lengths) x = rng() % (s.tk + 1);
    for (CausalAlignment causal : causals) {
      for (const auto& window : windows) {
        SdpaOptions o;
        o.causal = causal;
        o.window = window;
        o.need_weights = true;
        o.need_scores = true;
        // Every third variant adds masks, soft-capping and a custom scale.
        switch (variant++ % 3) {
          case 1:
            o.attn_mask = additive;
            o.attn_mask_shape = {1, s.heads, s.tq, s.tk};
            o.bool_mask = allowed;
            o.bool_mask_shape = {s.batch, 1, s.tq, s.tk};
            o.softcap = 2.5;
            break;
          case 2:
            o.key_padding_mask = padding;
            o.kv_lengths = lengths;
            o.scale = 0.7;
            break;
        }
        const SdpaResult r = Run(p, o);
        const SdpaResult ref =
            ReferenceScaledDotProductAttention(p.q.View(), p.k.View(), p.v.View(), o);
        const std::string where = "shape tq " + std::to_string(s.tq) + " tk " +
                                  std::to_string(s.tk) + ", causal " +
                                  std::to_string(int(causal)) + ", window [" +
                                  std::to_string(window[0]) + ", " + std::to_string(window[1]) +
                                  "], variant " + std::to_string((variant - 1) % 3);
        EXPECT_TRUE(AllNear(r.output, ref.output, 2e-5)) << where;
        EXPECT_TRUE(AllNear(r.attn_weights, ref.attn_weights, 2e-6)) << where;
        EXPECT_TRUE(ScoresNear(r.scores, ref.scores, 2e-5)) << where;
      }
    }
  }
}

TEST_P(Sdpa, GroupedQueryEqualsExpandedHeads) {
  std::mt19937 rng(1);
  const size_t heads = 6, kv_heads = 2, group = heads / kv_heads;
  const Problem p = RandomSdpa(2, heads, kv_heads, 40, 70, 12, 8, rng);
  Problem expanded = p;
  for (OwnedHeads* t : {&expanded.k, &expanded.v}) {
    const OwnedHeads& src = t == &expanded.k ? p.k : p.v;
    t->heads = heads;
    t->data.resize(src.batch * heads * src.tokens * src.head_dim);
    const size_t head = src.tokens * src.head_dim;
    for (size_t b = 0; b < src.batch; ++b) {
      for (size_t h = 0; h < heads; ++h) {
        std::copy_n(src.data.data() + (b * kv_heads + h / group) * head, head,
                    t->data.data() + (b * heads + h) * head);
      }
    }
  }
  SdpaOptions o;
  o.causal = CausalAlignment::kBottomRight;
  ExpectIdentical(p, o, expanded, o);
}

// With Hkv = H, the heads are MultiHeadAttention's: its projected q, k, v
// give its head outputs z_h.
TEST_P(Sdpa, EqualsMultiHeadAttentionPerHead) {
  std::mt19937 rng(2);
  MhaConfig config;
  config.d_model = 24;
  config.num_heads = 3;
  const MhaProblem m = RandomProblem(Resolve(config), 2, 37, 37, rng);
  MultiHeadAttention mha(m.config, table());
  mha.SetWeights(m.weights.View());
  MhaOptions mo;
  mo.causal = true;
  mo.need_weights = true;
  mo.need_intermediates = true;
  const MhaResult mr = mha.Forward(m.query.View(), m.key.View(), m.value.View(), mo);
  const size_t d = 8;
  SdpaOptions o;
  o.causal = CausalAlignment::kBottomRight;
  o.need_weights = true;
  ScaledDotProductAttention sdpa({}, table());
  const SdpaResult r = sdpa.Forward({mr.q, 2, 3, 37, d}, {mr.k, 2, 3, 37, d}, {mr.v, 2, 3, 37, d},
                                    o);
  EXPECT_TRUE(AllNear(r.output, mr.head_output, 1e-6));
  EXPECT_TRUE(AllNear(r.attn_weights, mr.attn_weights, 1e-6));
}

TEST_P(Sdpa, UnboundedWindowEqualsNone) {
  std::mt19937 rng(3);
  const Problem p = RandomSdpa(1, 2, 2, 50, 90, 16, 16, rng);
  for (CausalAlignment causal : {CausalAlignment::kNone, CausalAlignment::kTopLeft}) {
    SdpaOptions none;
    none.causal = causal;
    SdpaOptions unbounded = none;
    unbounded.window = {-1, -1};
    ExpectIdentical(p, none, p, unbounded);
  }
}

// The causal mask is the window [-1, 0] on the same diagonal.
TEST_P(Sdpa, CausalEqualsWindowWithNoKeysAhead) {
  std::mt19937 rng(4);
  const Problem p = RandomSdpa(1, 2, 2, 45, 45, 8, 8, rng);
  SdpaOptions causal, window;
  causal.causal = CausalAlignment::kTopLeft;
  window.window = {-1, 0};
  ExpectIdentical(p, causal, p, window);
}

TEST_P(Sdpa, BooleanMaskEqualsAdditiveTwin) {
  std::mt19937 rng(5);
  const Problem p = RandomSdpa(2, 2, 2, 35, 80, 8, 8, rng);
  std::vector<uint8_t> allowed(2 * 2 * 35 * 80);
  std::vector<float> additive(allowed.size());
  for (size_t i = 0; i < allowed.size(); ++i) {
    allowed[i] = rng() % 3 != 0;
    additive[i] = allowed[i] ? 0.0f : -std::numeric_limits<float>::infinity();
  }
  SdpaOptions b, a;
  b.bool_mask = allowed;
  a.attn_mask = additive;
  b.bool_mask_shape = a.attn_mask_shape = {2, 2, 35, 80};
  ExpectIdentical(p, b, p, a);
}

TEST_P(Sdpa, LengthsEqualKeyPadding) {
  std::mt19937 rng(6);
  const Problem p = RandomSdpa(3, 2, 1, 20, 100, 8, 8, rng);
  const std::vector<size_t> lengths = {100, 0, 37};
  std::vector<uint8_t> padding(3 * 100);
  for (size_t b = 0; b < 3; ++b) {
    for (size_t j = 0; j < 100; ++j) padding[b * 100 + j] = j < lengths[b];
  }
  SdpaOptions l, k;
  l.kv_lengths = lengths;
  k.key_padding_mask = padding;
  const SdpaResult a = ExpectIdentical(p, l, p, k);
  // Batch item 1 has no key: zeros, not NaN.
  for (size_t i = 20 * 2 * 8; i < 2 * 20 * 2 * 8; ++i) ASSERT_EQ(a.output[i], 0.0f) << i;
}

TEST_P(Sdpa, HugeSoftcapEqualsNone) {
  std::mt19937 rng(7);
  const Problem p = RandomSdpa(1, 2, 2, 33, 70, 16, 16, rng);
  SdpaOptions none, capped;
  capped.softcap = 1e6;
  none.need_weights = capped.need_weights = true;
  const SdpaResult a = Run(p, none), b = Run(p, capped);
  EXPECT_TRUE(AllNear(b.output, a.output, 1e-6));
  EXPECT_TRUE(AllNear(b.attn_weights, a.attn_weights, 1e-6));
}

// The kernels' tanh against std::tanh, through the scores soft-capping
// returns: small, medium and saturating arguments.
TEST_P(Sdpa, SoftcapTanhIsAccurate) {
  const size_t tk = 64;
  std::vector<float> q = {1.0f}, k(tk), v(tk, 0.0f);
  for (size_t j = 0; j < tk; ++j) k[j] = std::ldexp(float(j % 2 ? 1 : -1), int(j / 2) - 20);
  SdpaOptions o;
  o.scale = 1.0;
  o.softcap = 1.0;
  o.need_scores = true;
  ScaledDotProductAttention sdpa({}, table());
  const SdpaResult r = sdpa.Forward({q, 1, 1, 1, 1}, {k, 1, 1, tk, 1}, {v, 1, 1, tk, 1}, o);
  for (size_t j = 0; j < tk; ++j) {
    const double expected = std::tanh(double(k[j]));
    EXPECT_NEAR(r.scores[j], expected, 4e-7 * std::fabs(expected) + 1e-30) << "x = " << k[j];
  }
}

#if SA_HAVE_THREADS
TEST_P(Sdpa, BitIdenticalForEveryThreadCount) {
  std::mt19937 rng(8);
  const Problem p = RandomSdpa(2, 4, 2, 150, 170, 12, 16, rng);
  SdpaOptions o;
  o.causal = CausalAlignment::kTopLeft;
  o.window = {60, 0};
  o.softcap = 3.0;
  o.need_weights = true;
  o.need_scores = true;
  const SdpaResult one = Run(p, o);
  for (size_t threads : {2, 3, 4}) {
    ScaledDotProductAttention sdpa(
        {}, table(),
        std::make_shared<ThreadPool>(threads, 0.0, 0.0, ThreadPool::Start::kNow, threads));
    const SdpaResult r = sdpa.Forward(p.q.View(), p.k.View(), p.v.View(), o);
    EXPECT_EQ(r.output, one.output) << threads << " threads";
    EXPECT_EQ(r.attn_weights, one.attn_weights) << threads << " threads";
    EXPECT_EQ(r.scores, one.scores) << threads << " threads";
  }
}
#endif

TEST_P(Sdpa, BadInput) {
  std::mt19937 rng(9);
  const Problem p = RandomSdpa(2, 6, 4, 5, 7, 8, 8, rng);
  ScaledDotProductAttention sdpa({}, table());
  auto forward = [&](const SdpaOptions& o) {
    return [&, o] { sdpa.Forward(p.q.View(), p.k.View(), p.v.View(), o); };
  };
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward({}), {"k: its heads (4) must divide the heads of q (6)", "[2, 4, 7, 8]"}));
  const Problem ok = RandomSdpa(2, 6, 3, 5, 7, 8, 8, rng);
  auto forward_ok = [&](const SdpaOptions& o) {
    return [&, o] { sdpa.Forward(ok.q.View(), ok.k.View(), ok.v.View(), o); };
  };
  SdpaOptions o;
  o.window = {3, -2};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward_ok(o), {"window[1]: expected -1 (unbounded) or a number >= 0, got -2"}));
  o = {};
  const std::vector<float> mask(3 * 5 * 7);
  o.attn_mask = mask;
  o.attn_mask_shape = {3, 1, 5, 7};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward_ok(o), {"attn_mask_shape: expected a shape that broadcasts to [B, H, Tq, Tk] = "
                      "[2, 6, 5, 7]", "got [3, 1, 5, 7]"}));
  o.attn_mask_shape = {1, 6, 5, 7};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward_ok(o), {"attn_mask: expected 210 values for shape [1, 6, 5, 7], got 105"}));
  o = {};
  o.scale = std::nan("");
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward_ok(o), {"scale: expected a finite number float32 holds, got NaN"}));
  for (double cap : {0.0, -1.0}) {
    o = {};
    o.softcap = cap;
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        forward_ok(o), {"softcap: expected a finite number > 0, got"}));
  }
  o = {};
  const std::vector<size_t> lengths = {7, 8};
  o.kv_lengths = lengths;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward_ok(o), {"kv_lengths[1]: expected at most Tk (7), got 8"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { SplitHeads(ok.q.data, 2, 5, 48, 5, "q", "q.heads"); },
      {"q.heads: must divide the 48 q features, got 5"}));
  // Still usable after the errors.
  EXPECT_EQ(sdpa.Forward(ok.q.View(), ok.k.View(), ok.v.View()).output.size(), 2u * 6 * 5 * 8);
}

INSTANTIATE_ON_EVERY_TABLE(Sdpa);

}  // namespace
}  // namespace simd_attention::testing
