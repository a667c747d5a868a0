// MultiHeadAttention's masks as ScaledDotProductAttention takes them (one
// AttentionCall serves both): boolean masks, masks broadcast from their
// shapes, valid key lengths and the scores before the softmax, checked on
// random problems through every kernel table against the forms they must
// equal, and against attention on the projected heads themselves.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <span>
#include <random>
#include <stdexcept>
#include <vector>

#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/scaled_dot_product_attention.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

constexpr double kTol = 1e-5;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr size_t kB = 2, kH = 4, kTq = 7, kTk = 37, kD = 16;

MhaProblem Problem(std::mt19937& rng) {
  MhaConfig c;
  c.d_model = kD;
  c.num_heads = kH;
  return RandomProblem(c, kB, kTq, kTk, rng);
}

MhaOptions Everything() {
  MhaOptions o;
  o.need_weights = o.need_scores = o.need_intermediates = true;
  return o;
}

// Equal scores: -inf at the same places, the rest within kTol.
void ExpectScores(std::span<const float> a, std::span<const float> b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(b[i])) {
      ASSERT_EQ(a[i], b[i]) << "at " << i;
    } else {
      ASSERT_NEAR(a[i], b[i], kTol) << "at " << i;
    }
  }
}

// Equal outputs, probabilities and scores.
void ExpectSame(const MhaResult& a, const MhaResult& b) {
  EXPECT_TRUE(AllNear(a.output, b.output, kTol));
  EXPECT_TRUE(AllNear(a.attn_weights, b.attn_weights, kTol));
  ExpectScores(a.scores, b.scores);
}

// A [b, h, Tq, Tk] mask broadcast from `dims` = {batch or 1, heads or 1}.
template <class T>
std::vector<T> Expand(const std::vector<T>& mask, size_t batch, size_t heads) {
  std::vector<T> out(kB * kH * kTq * kTk);
  for (size_t b = 0; b < kB; ++b) {
    for (size_t h = 0; h < kH; ++h) {
      const size_t from = ((batch > 1 ? b : 0) * heads + (heads > 1 ? h : 0)) * kTq * kTk;
      std::copy_n(mask.begin() + from, kTq * kTk, out.begin() + (b * kH + h) * kTq * kTk);
    }
  }
  return out;
}

// Each test's problem, and the generator its masks come from after it.
class MhaMasks : public TableTest {
 protected:
  // The kernels' results for p under options a and under b are the same.
  void ExpectSameRuns(const MhaOptions& a, const MhaOptions& b) {
    ExpectSame(RunKernels(table(), p, a), RunKernels(table(), p, b));
  }

  std::mt19937 rng{3};
  const MhaProblem p = Problem(rng);
};

TEST_P(MhaMasks, BooleanMaskEqualsItsAdditiveTwin) {
  std::bernoulli_distribution keep(0.6);
  std::vector<uint8_t> allowed(kB * kH * kTq * kTk);
  std::vector<float> additive(allowed.size());
  for (size_t i = 0; i < allowed.size(); ++i) {
    allowed[i] = keep(rng);
    additive[i] = allowed[i] ? 0.0f : kNegInf;
  }
  MhaOptions boolean = Everything(), twin = Everything();
  boolean.bool_mask = allowed;
  twin.attn_mask = additive;
  ExpectSameRuns(boolean, twin);
}

TEST_P(MhaMasks, BroadcastShapesEqualTheirExpansion) {
  const size_t shapes[][2] = {{1, 1}, {kB, 1}, {1, kH}, {kB, kH}};
  for (const auto& [batch, heads] : shapes) {
    SCOPED_TRACE(::testing::Message() << "[" << batch << ", " << heads << ", Tq, Tk]");
    const std::vector<float> additive = RandomAdditiveMask(batch * heads * kTq * kTk, 0.2, rng);
    std::vector<uint8_t> allowed(additive.size());
    for (uint8_t& a : allowed) a = rng() % 3 != 0;
    const std::vector<float> additive_full = Expand(additive, batch, heads);
    const std::vector<uint8_t> allowed_full = Expand(allowed, batch, heads);
    MhaOptions broadcast = Everything(), expanded = Everything();
    broadcast.attn_mask = additive;
    broadcast.attn_mask_shape = {batch, heads, kTq, kTk};
    broadcast.bool_mask = allowed;
    broadcast.bool_mask_shape = {batch, heads, kTq, kTk};
    expanded.attn_mask = additive_full;
    expanded.bool_mask = allowed_full;
    ExpectSameRuns(broadcast, expanded);
  }
}

TEST_P(MhaMasks, ValidLengthsEqualTheirKeyPadding) {
  const std::vector<size_t> lengths = {kTk - 20, 1};
  std::vector<uint8_t> padding(kB * kTk);
  for (size_t b = 0; b < kB; ++b) {
    for (size_t j = 0; j < kTk; ++j) padding[b * kTk + j] = j < lengths[b];
  }
  MhaOptions by_length = Everything(), by_padding = Everything();
  by_length.kv_lengths = lengths;
  by_padding.key_padding_mask = padding;
  ExpectSameRuns(by_length, by_padding);
  // Both given: a key is real only if both say so.
  const std::vector<uint8_t> random_padding = RandomKeyPadding(kB, kTk, 0.7, rng);
  std::vector<uint8_t> both(kB * kTk);
  for (size_t i = 0; i < both.size(); ++i) both[i] = padding[i] && random_padding[i];
  by_length.key_padding_mask = random_padding;
  by_padding.key_padding_mask = both;
  ExpectSameRuns(by_length, by_padding);
}

// The projected heads (intermediates) through ScaledDotProductAttention
// with the same options give the same scores, probabilities and head outputs.
TEST_P(MhaMasks, ScoresEqualAttentionOnTheProjectedHeads) {
  const std::vector<float> additive = RandomAdditiveMask(kH * kTq * kTk, 0.1, rng);
  MhaOptions o = Everything();
  o.causal = true;
  o.causal_alignment = CausalAlignment::kTopLeft;
  o.window = {20, -1};
  o.softcap = 3.0;
  o.scale = 0.7;
  o.attn_mask = additive;
  o.attn_mask_shape = {1, kH, kTq, kTk};
  const MhaResult r = RunKernels(table(), p, o);

  SdpaOptions s;
  s.causal = CausalAlignment::kTopLeft;
  s.window = o.window;
  s.softcap = o.softcap;
  s.scale = o.scale;
  s.attn_mask = additive;
  s.attn_mask_shape = o.attn_mask_shape;
  s.need_weights = s.need_scores = true;
  ScaledDotProductAttention sdpa({}, table());
  const size_t dk = kD / kH;
  const SdpaResult h = sdpa.Forward({r.q, kB, kH, kTq, dk}, {r.k, kB, kH, kTk, dk},
                                    {r.v, kB, kH, kTk, dk}, s);
  EXPECT_TRUE(AllNear(r.head_output, h.output, kTol));
  EXPECT_TRUE(AllNear(r.attn_weights, h.attn_weights, kTol));
  ExpectScores(r.scores, h.scores);
}

// Every mask kind at once, and the scores, against the float64 reference.
TEST_P(MhaMasks, MatchesReference) {
  const std::vector<float> additive = RandomAdditiveMask(kB * kTq * kTk, 0.1, rng);
  std::vector<uint8_t> allowed(kH * kTq * kTk);
  for (uint8_t& a : allowed) a = rng() % 4 != 0;
  const std::vector<uint8_t> padding = RandomKeyPadding(kB, kTk, 0.8, rng);
  const std::vector<size_t> lengths = {kTk, 30};
  MhaOptions o = Everything();
  o.need_intermediates = false;
  o.attn_mask = additive;
  o.attn_mask_shape = {kB, 1, kTq, kTk};
  o.bool_mask = allowed;
  o.bool_mask_shape = {1, kH, kTq, kTk};
  o.key_padding_mask = padding;
  o.kv_lengths = lengths;
  const MhaResult r = RunKernels(table(), p, o);
  const MhaResult expected = RunReference(p, o);
  ExpectResultNear(r, expected, kTol);
  ExpectScores(r.scores, expected.scores);
}

TEST_P(MhaMasks, BadMasksAreNamed) {
  std::vector<uint8_t> allowed(kB * 3 * kTq * kTk, 1);
  auto run = [&](const MhaOptions& o) { return [&, o] { RunKernels(table(), p, o); }; };
  MhaOptions o;
  o.bool_mask = allowed;
  o.bool_mask_shape = {kB, 3, kTq, kTk};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      run(o), {"bool_mask_shape: expected a shape that broadcasts to [B, H, Tq, Tk] = "
               "[2, 4, 7, 37]", "got [2, 3, 7, 37]"}));
  o = {};
  o.bool_mask = allowed;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      run(o), {"bool_mask: expected 259 values for [7, 37] or 2072 for [2, 4, 7, 37], got 1554"}));
  o = {};
  const std::vector<size_t> lengths = {3, kTk + 1};
  o.kv_lengths = lengths;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      run(o), {"kv_lengths[1]: expected at most Tk (37), got 38"}));
  o = {};
  o.attn_mask_shape = {kTq, kTk};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      run(o), {"attn_mask_shape: given without attn_mask"}));
}

INSTANTIATE_ON_EVERY_TABLE(MhaMasks);

}  // namespace
}  // namespace simd_attention::testing
