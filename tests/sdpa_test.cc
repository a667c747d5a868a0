// ScaledDotProductAttention on every kernel table: every `attention` case of
// ../shared/golden within its tolerance (head- and token-major), a sweep of
// combined options against the double-precision reference, the properties
// that tie the options together (ONNX Attention's corners among them: query
// offsets, narrow masks, the scores before the masks), the key blocks the
// kernel skips, thread-count independence and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dispatch/kernel_table.h"
#include "golden.h"
#include "kernels/attention.h"
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
    // ONNX's corners: masks narrower than the keys, query offsets of every
    // sign, past the keys too, one or one per batch item.
    const size_t narrow = s.tk * 2 / 3 + 1;
    const std::vector<float> narrow_additive = RandomVector(s.tq * narrow, 1.0f, rng);
    std::vector<uint8_t> narrow_allowed(s.batch * s.tq * narrow);
    for (uint8_t& x : narrow_allowed) x = rng() % 4 != 0;
    std::vector<int64_t> offsets(s.batch);
    for (int64_t& x : offsets) x = int64_t(rng() % (s.tq + s.tk + 10)) - int64_t(s.tq) - 5;
    const std::vector<int64_t> offset = {int64_t(s.tk / 3)};
    for (CausalAlignment causal : causals) {
      for (const auto& window : windows) {
        SdpaOptions o;
        o.causal = causal;
        o.window = window;
        o.need_weights = true;
        o.need_scores = true;
        // Offsets place the causal mask and the window: they need either.
        const bool placed = causal != CausalAlignment::kNone || window[0] >= 0 || window[1] >= 0;
        // Variants 1 to 4 add masks, soft-capping, a custom scale, query
        // offsets and the scores before the masks.
        switch (variant++ % 5) {
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
          case 3:
            if (placed) o.query_offset = offsets;
            o.attn_mask = narrow_additive;
            o.attn_mask_shape = {s.tq, narrow};
            o.scores_stage = ScoresStage::kScaled;
            break;
          case 4:
            if (placed) o.query_offset = offset;
            o.bool_mask = narrow_allowed;
            o.bool_mask_shape = {s.batch, 1, s.tq, narrow};
            o.kv_lengths = lengths;
            o.softcap = 1.5;
            o.scores_stage = ScoresStage::kCapped;
            break;
        }
        const SdpaResult r = Run(p, o);
        const SdpaResult ref =
            ReferenceScaledDotProductAttention(p.q.View(), p.k.View(), p.v.View(), o);
        const std::string where = "shape tq " + std::to_string(s.tq) + " tk " +
                                  std::to_string(s.tk) + ", causal " +
                                  std::to_string(int(causal)) + ", window [" +
                                  std::to_string(window[0]) + ", " + std::to_string(window[1]) +
                                  "], variant " + std::to_string((variant - 1) % 5);
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

// SDPA on MultiHeadAttention's projected heads gives the attention's own
// output, weights and scores (both empty where not asked for).
void ExpectTheAttentions(const SdpaResult& r, const MhaResult& m) {
  EXPECT_TRUE(AllNear(r.output, m.head_output, 1e-6));
  EXPECT_TRUE(AllNear(r.attn_weights, m.attn_weights, 1e-6));
  EXPECT_TRUE(AllNear(r.scores, m.scores, 1e-6));
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
  ExpectTheAttentions(r, mr);

  // ONNX's corners are the same options there: query offsets per item and
  // the scores before the masks.
  const std::vector<int64_t> offsets = {-3, 20};
  mo.query_offset = o.query_offset = offsets;
  mo.need_scores = o.need_scores = true;
  mo.scores_stage = o.scores_stage = ScoresStage::kScaled;
  const MhaResult mq = mha.Forward(m.query.View(), m.key.View(), m.value.View(), mo);
  const SdpaResult rq = sdpa.Forward({mr.q, 2, 3, 37, d}, {mr.k, 2, 3, 37, d},
                                     {mr.v, 2, 3, 37, d}, o);
  ExpectTheAttentions(rq, mq);
}

// MultiHeadAttention's query offsets, forward and backward: at Tk - Tq the
// bottom-right alignment, at 0 the top-left one, to the bit.
TEST_P(Sdpa, MultiHeadAttentionQueryOffsetsEqualTheAlignments) {
  std::mt19937 rng(17);
  const size_t batch = 2, tq = 40, tk = 100;
  const MhaProblem m =
      RandomProblem(Resolve({.d_model = 16, .num_heads = 2}), batch, tq, tk, rng);
  const std::vector<float> d_output = RandomVector(batch * tq * 16, 1.0f, rng);
  auto run = [&](CausalAlignment alignment, std::span<const int64_t> offset) {
    MultiHeadAttention mha(m.config, table());
    mha.SetWeights(m.weights.View());
    MhaOptions o;
    o.causal = true;
    o.causal_alignment = alignment;
    o.window = {30, 0};
    o.query_offset = offset;
    o.training = true;
    const MhaResult r = mha.Forward(m.query.View(), m.key.View(), m.value.View(), o);
    return std::pair{r.output, mha.Backward({d_output, batch, tq, 16})};
  };
  const std::vector<int64_t> zero = {0}, bottom = {int64_t(tk - tq)};
  for (const auto& [alignment, offset] :
       {std::pair{CausalAlignment::kTopLeft, std::span<const int64_t>(zero)},
        {CausalAlignment::kBottomRight, std::span<const int64_t>(bottom)}}) {
    // The offset replaces either alignment.
    const CausalAlignment other = alignment == CausalAlignment::kTopLeft
                                      ? CausalAlignment::kBottomRight
                                      : CausalAlignment::kTopLeft;
    const auto [out, grads] = run(alignment, {});
    const auto [out_at, grads_at] = run(other, offset);
    EXPECT_EQ(out, out_at);
    EXPECT_EQ(grads.d_query, grads_at.d_query);
    EXPECT_EQ(grads.d_key, grads_at.d_key);
    EXPECT_EQ(grads.d_w_v, grads_at.d_w_v);
  }
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

// Query 0 at position 0 is the top-left causal mask; at Tk - Tq, the
// bottom-right one, with a window too.
TEST_P(Sdpa, QueryOffsetsEqualTheAlignments) {
  std::mt19937 rng(10);
  const Problem p = RandomSdpa(2, 2, 1, 45, 150, 8, 8, rng);
  const std::vector<int64_t> zero = {0}, bottom = {150 - 45};
  for (const std::array<int64_t, 2> window : {std::array<int64_t, 2>{-1, -1}, {30, 0}}) {
    SdpaOptions top_left, bottom_right, at_zero, at_bottom;
    top_left.causal = CausalAlignment::kTopLeft;
    bottom_right.causal = CausalAlignment::kBottomRight;
    top_left.window = bottom_right.window = window;
    at_zero = at_bottom = bottom_right;
    at_zero.query_offset = zero;
    at_bottom.query_offset = bottom;
    ExpectIdentical(p, top_left, p, at_zero);
    ExpectIdentical(p, bottom_right, p, at_bottom);
  }
}

// Batch item b of a problem, [1, H, T, d] each.
Problem ItemOf(const Problem& p, size_t b) {
  auto item = [b](const OwnedHeads& t) {
    const size_t n = t.heads * t.tokens * t.head_dim;
    return OwnedHeads{1, t.heads, t.tokens, t.head_dim,
                      std::vector<float>(t.data.begin() + b * n, t.data.begin() + (b + 1) * n)};
  };
  return {item(p.q), item(p.k), item(p.v)};
}

// One offset per batch item: each item as if alone with its own.
TEST_P(Sdpa, PerItemOffsetsEqualEachItemAlone) {
  std::mt19937 rng(11);
  const size_t tq = 40, tk = 100, dv = 8;
  const Problem p = RandomSdpa(3, 2, 2, tq, tk, 8, dv, rng);
  const std::vector<int64_t> offsets = {-3, 17, 90};
  SdpaOptions o;
  o.causal = CausalAlignment::kTopLeft;
  o.window = {25, 0};
  o.query_offset = offsets;
  o.need_weights = true;
  const SdpaResult all = Run(p, o);
  for (size_t b = 0; b < 3; ++b) {
    SdpaOptions alone = o;
    const std::vector<int64_t> offset = {offsets[b]};
    alone.query_offset = offset;
    const SdpaResult r = Run(ItemOf(p, b), alone);
    const size_t out = 2 * tq * dv, probs = 2 * tq * tk;
    EXPECT_TRUE(std::equal(r.output.begin(), r.output.end(), all.output.begin() + b * out)) << b;
    EXPECT_TRUE(std::equal(r.attn_weights.begin(), r.attn_weights.end(),
                           all.attn_weights.begin() + b * probs))
        << b;
  }
  // Item 0's first three queries sit before every key: zeros.
  for (size_t e = 0; e < 3 * dv; ++e) EXPECT_EQ(all.output[e], 0.0f) << e;
}

// ONNX Attention's causal frontiers: with a past cache of 12 keys and 6 new
// ones for 4 queries, query i sees keys j <= 12 + i (not the bottom-right
// 14 + i); with nonpad_kv_seqlen, item b's queries end at its own last key,
// as if its keys were all there were.
TEST_P(Sdpa, OnnxCacheFrontiers) {
  std::mt19937 rng(12);
  const Problem p = RandomSdpa(2, 3, 3, 4, 18, 8, 8, rng);
  const std::vector<int64_t> past = {12};
  SdpaOptions cache;
  cache.causal = CausalAlignment::kTopLeft;
  cache.query_offset = past;
  cache.need_weights = true;
  const SdpaResult r = Run(p, cache);
  const SdpaResult ref = ReferenceScaledDotProductAttention(p.q.View(), p.k.View(), p.v.View(),
                                                            cache);
  EXPECT_TRUE(AllNear(r.output, ref.output, 2e-6));
  for (size_t i = 0; i < 4; ++i) {
    for (size_t j = 0; j < 18; ++j) {
      EXPECT_EQ(r.attn_weights[i * 18 + j] > 0.0f, j <= 12 + i) << i << ", " << j;
    }
  }

  const std::vector<size_t> lengths = {18, 9};
  const std::vector<int64_t> ends = {18 - 4, 9 - 4};
  SdpaOptions nonpad;
  nonpad.causal = CausalAlignment::kTopLeft;
  nonpad.kv_lengths = lengths;
  nonpad.query_offset = ends;
  nonpad.need_weights = true;
  const SdpaResult padded = Run(p, nonpad);
  Problem item = ItemOf(p, 1);
  for (OwnedHeads* t : {&item.k, &item.v}) {
    std::vector<float> first(t->heads * 9 * t->head_dim);
    for (size_t h = 0; h < t->heads; ++h) {
      std::copy_n(t->data.begin() + h * 18 * t->head_dim, 9 * t->head_dim,
                  first.begin() + h * 9 * t->head_dim);
    }
    t->tokens = 9;
    t->data = first;
  }
  SdpaOptions alone;
  alone.causal = CausalAlignment::kBottomRight;
  const SdpaResult short_item = Run(item, alone);
  EXPECT_TRUE(std::equal(short_item.output.begin(), short_item.output.end(),
                         padded.output.begin() + 3 * 4 * 8));
}

// A mask narrower than the keys is the mask padded with -inf (additive) or
// 0 (boolean): the keys past it are hidden. (Not to the bit: the narrow
// mask's last key block ends where it does, the padded one's runs on.)
TEST_P(Sdpa, NarrowMasksEqualMasksPaddedToTheKeys) {
  std::mt19937 rng(13);
  const size_t batch = 2, tq = 35, tk = 200, narrow = 70;
  const Problem p = RandomSdpa(batch, 2, 2, tq, tk, 8, 8, rng);
  const std::vector<float> additive = RandomVector(tq * narrow, 1.0f, rng);
  std::vector<uint8_t> allowed(batch * tq * narrow);
  for (uint8_t& x : allowed) x = rng() % 3 != 0;
  std::vector<float> additive_padded(tq * tk, -std::numeric_limits<float>::infinity());
  std::vector<uint8_t> allowed_padded(batch * tq * tk, 0);
  for (size_t r = 0; r < tq; ++r) {
    std::copy_n(additive.begin() + r * narrow, narrow, additive_padded.begin() + r * tk);
  }
  for (size_t r = 0; r < batch * tq; ++r) {
    std::copy_n(allowed.begin() + r * narrow, narrow, allowed_padded.begin() + r * tk);
  }
  SdpaOptions a, a_padded, b, b_padded;
  a.attn_mask = additive;
  a.attn_mask_shape = {tq, narrow};
  a_padded.attn_mask = additive_padded;
  b.bool_mask = allowed;
  b.bool_mask_shape = {batch, 1, tq, narrow};
  b_padded.bool_mask = allowed_padded;
  b_padded.bool_mask_shape = {batch, 1, tq, tk};
  for (const auto& [narrow_mask, padded_mask] : {std::pair{a, a_padded}, {b, b_padded}}) {
    SdpaOptions n = narrow_mask, w = padded_mask;
    n.need_weights = w.need_weights = n.need_scores = w.need_scores = true;
    const SdpaResult rn = Run(p, n), rw = Run(p, w);
    EXPECT_TRUE(AllNear(rn.output, rw.output, 1e-6));
    EXPECT_TRUE(AllNear(rn.attn_weights, rw.attn_weights, 1e-6));
    EXPECT_TRUE(ScoresNear(rn.scores, rw.scores, 1e-6));
  }
}

// MultiHeadAttention's masks are checked and applied by the same code: a
// narrow one is the one padded to the keys there too, forward and backward.
TEST_P(Sdpa, MultiHeadAttentionTakesNarrowMasks) {
  std::mt19937 rng(16);
  const size_t batch = 2, tq = 33, tk = 150, keys = 80;
  const MhaProblem m =
      RandomProblem(Resolve({.d_model = 16, .num_heads = 2}), batch, tq, tk, rng);
  const std::vector<float> narrow = RandomVector(tq * keys, 1.0f, rng);
  std::vector<float> padded(tq * tk, -std::numeric_limits<float>::infinity());
  for (size_t r = 0; r < tq; ++r) {
    std::copy_n(narrow.begin() + r * keys, keys, padded.begin() + r * tk);
  }
  const std::vector<float> d_output = RandomVector(batch * tq * 16, 1.0f, rng);
  auto run = [&](std::span<const float> mask, size_t mask_keys) {
    MultiHeadAttention mha(m.config, table());
    mha.SetWeights(m.weights.View());
    MhaOptions o;
    o.attn_mask = mask;
    o.attn_mask_shape = {tq, mask_keys};
    o.need_weights = true;
    o.training = true;
    MhaResult r = mha.Forward(m.query.View(), m.key.View(), m.value.View(), o);
    return std::pair{r, mha.Backward({d_output, batch, tq, 16})};
  };
  const auto [rn, gn] = run(narrow, keys);
  const auto [rw, gw] = run(padded, tk);
  EXPECT_TRUE(AllNear(rn.output, rw.output, 1e-6));
  EXPECT_TRUE(AllNear(rn.attn_weights, rw.attn_weights, 1e-6));
  for (size_t i = 0; i < rn.attn_weights.size(); ++i) {
    if (i % tk >= keys) ASSERT_EQ(rn.attn_weights[i], 0.0f) << i;
  }
  EXPECT_TRUE(AllNear(gn.d_query, gw.d_query, 1e-5));
  EXPECT_TRUE(AllNear(gn.d_key, gw.d_key, 1e-5));
  EXPECT_TRUE(AllNear(gn.d_value, gw.d_value, 1e-5));
  EXPECT_TRUE(AllNear(gn.d_w_q, gw.d_w_q, 1e-5));
}

// The scores before the masks are q . k for every key, whatever hides it:
// the same bits with masks, causal mask, window and padding as without.
TEST_P(Sdpa, ScoresBeforeTheMasksIgnoreThem) {
  std::mt19937 rng(14);
  const size_t batch = 2, tq = 40, tk = 150;
  const Problem p = RandomSdpa(batch, 2, 1, tq, tk, 12, 8, rng);
  const std::vector<float> additive = RandomVector(tq * 100, 1.0f, rng);
  const std::vector<size_t> lengths = {150, 20};
  const std::vector<int64_t> offsets = {-10, 60};
  for (bool capped : {false, true}) {
    SdpaOptions plain;
    plain.need_scores = true;
    if (capped) plain.softcap = 2.0;
    SdpaOptions masked = plain;
    masked.causal = CausalAlignment::kTopLeft;
    masked.window = {20, 0};
    masked.query_offset = offsets;
    masked.attn_mask = additive;
    masked.attn_mask_shape = {tq, 100};
    masked.kv_lengths = lengths;
    for (ScoresStage stage : {ScoresStage::kScaled, ScoresStage::kCapped}) {
      plain.scores_stage = masked.scores_stage = stage;
      const SdpaResult a = Run(p, plain), b = Run(p, masked);
      EXPECT_EQ(a.scores, b.scores) << int(stage);
      const SdpaResult ref =
          ReferenceScaledDotProductAttention(p.q.View(), p.k.View(), p.v.View(), masked);
      EXPECT_TRUE(AllNear(b.scores, ref.scores, 2e-6)) << int(stage);
    }
    // Without a softcap the capped scores are the scaled ones; the masked
    // ones, the capped ones where nothing hides the key.
    plain.scores_stage = ScoresStage::kScaled;
    const SdpaResult scaled = Run(p, plain);
    plain.scores_stage = ScoresStage::kCapped;
    const SdpaResult cap = Run(p, plain);
    plain.scores_stage = ScoresStage::kMasked;
    EXPECT_EQ(cap.scores, Run(p, plain).scores);
    if (!capped) EXPECT_EQ(scaled.scores, cap.scores);
  }
}

// The kernel never visits a key block that the causal frontier at a query
// offset or a narrow mask hides from a whole query block: values of NaN
// there would make the output NaN (0 * NaN) if it did.
TEST_P(Sdpa, HiddenKeyBlocksAreNeverVisited) {
  std::mt19937 rng(15);
  const size_t tq = 40, tk = 256, d = 16;
  const std::vector<float> q = RandomVector(tq * d, 1.0f, rng);
  const std::vector<float> k = RandomVector(tk * d, 1.0f, rng);
  const std::vector<float> v = RandomVector(tk * d, 1.0f, rng);
  const std::vector<float> mask = RandomVector(tq * 100, 1.0f, rng);
  std::vector<float> scratch(table().attention_scratch_floats(d, d));
  auto run = [&](const std::vector<float>& values, ptrdiff_t diagonal, bool narrow) {
    std::vector<float> z(tq * d);
    AttentionArgs a = DenseAttentionArgs(q.data(), k.data(), values.data(), z.data(), tq, tk, d, d);
    a.scale = 0.25f;
    a.causal = !narrow;
    a.causal_diagonal = diagonal;
    if (narrow) {
      a.additive_mask = mask.data();
      a.mask_ld = 100;
      a.masked_from = 100;
    }
    a.scratch = scratch.data();
    table().attention(a);
    return z;
  };
  // Keys from 128 on: hidden from every query by a frontier at 60 + i (the
  // last query's is 99) or -80 + i, or by a mask of 100 keys.
  std::vector<float> poisoned = v;
  std::fill(poisoned.begin() + 128 * d, poisoned.end(), std::nanf(""));
  for (const auto& [diagonal, narrow] :
       {std::pair<ptrdiff_t, bool>{60, false}, {-80, false}, {0, true}}) {
    EXPECT_EQ(run(poisoned, diagonal, narrow), run(v, diagonal, narrow)) << diagonal;
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
  // And ONNX's corners: offsets per item, a narrow mask, scaled scores.
  const std::vector<int64_t> offsets = {-20, 90};
  const std::vector<float> narrow = RandomVector(150 * 120, 1.0f, rng);
  SdpaOptions onnx = o;
  onnx.query_offset = offsets;
  onnx.attn_mask = narrow;
  onnx.attn_mask_shape = {150, 120};
  onnx.scores_stage = ScoresStage::kScaled;
  for (const SdpaOptions& options : {o, onnx}) {
    const SdpaResult one = Run(p, options);
    for (size_t threads : {2, 3, 4}) {
      ScaledDotProductAttention sdpa(
          {}, table(),
          std::make_shared<ThreadPool>(threads, 0.0, 0.0, ThreadPool::Start::kNow, threads));
      const SdpaResult r = sdpa.Forward(p.q.View(), p.k.View(), p.v.View(), options);
      EXPECT_EQ(r.output, one.output) << threads << " threads";
      EXPECT_EQ(r.attn_weights, one.attn_weights) << threads << " threads";
      EXPECT_EQ(r.scores, one.scores) << threads << " threads";
    }
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
  // Narrower than the keys: from 1 to Tk.
  for (size_t keys : {0, 8}) {
    o.attn_mask_shape = {1, 6, 5, keys};
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        forward_ok(o), {"[2 or 1, 6 or 1, 5, 7], the last dimension from 1 to Tk (the keys past "
                        "it masked); got [1, 6, 5, " + std::to_string(keys) + "]"}));
  }
  o.attn_mask_shape = {1, 6, 5, 4};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward_ok(o), {"attn_mask: expected 120 values for shape [1, 6, 5, 4], got 105"}));
  o = {};
  const std::vector<int64_t> three = {1, 2, 3};
  o.query_offset = three;
  o.causal = CausalAlignment::kTopLeft;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward_ok(o),
      {"query_offset: expected 1 value (every batch item's) or B = 2 (one each), got 3"}));
  o.query_offset = std::span(three).first(1);
  o.causal = CausalAlignment::kNone;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      forward_ok(o), {"query_offset: given without causal or window, the frontiers it places"}));
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
