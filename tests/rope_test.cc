// The rotary position embedding: the kernel of every table and its
// backward (the rotation by the negative angles) against rotations in
// double, at rotary widths around each table's vector width
// (whole vectors, a scalar tail, fewer features than one vector) with padded
// heads and rows, and multi-head attention with RoPE against the float64
// reference, at positions from the kept angle table and far past it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dispatch/dispatch.h"
#include "kernels/powers.h"
#include "kernels/rope.h"
#include "kernels/sin_cos.h"
#include "random_mha.h"
#include "reference/attention_reference.h"
#include "simd_attention/multi_head_attention.h"
#include "test_util.h"

namespace simd_attention {
namespace {

// The angles' own sin, cos, powers and roots (kernels/sin_cos.h,
// powers.h, in place of the C library's) against the C library's: the
// rotary angles and frequencies, the sinusoidal encoding and Adam's bias
// corrections are computed with them.
TEST(AngleMath, SinCosIsTheCLibrarysToAFewUlps) {
  std::mt19937_64 rng(43);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  double worst = 0;
  for (const double scale : {1.0, 10.0, 1e3, 1e5, 1e6}) {
    for (int i = 0; i < 20000; ++i) {
      const double x = scale * unit(rng);
      double s = 0, c = 0;
      SinCos(x, s, c);
      // An ulp of the result's scale (1), plus x's own rounding carried by
      // the reduction past 2^20 multiples of pi / 2.
      const double tolerance = 4 * std::numeric_limits<double>::epsilon() *
                               std::max(1.0, std::fabs(x) / 1e5);
      worst = std::max({worst, std::fabs(s - std::sin(x)) / tolerance,
                        std::fabs(c - std::cos(x)) / tolerance});
      ASSERT_NEAR(s, std::sin(x), tolerance) << x;
      ASSERT_NEAR(c, std::cos(x), tolerance) << x;
    }
  }
  std::printf("SinCos: worst error %.2f of its tolerance\n", worst);
  // The float rotary tables round to the same floats.
  for (int pos = 0; pos < 4096; ++pos) {
    const double x = pos * 0.0123456789;
    double s = 0, c = 0;
    SinCos(x, s, c);
    ASSERT_EQ(float(s), float(std::sin(x))) << pos;
    ASSERT_EQ(float(c), float(std::cos(x))) << pos;
  }
}

TEST(AngleMath, PowerAndRootOfAreTheCLibrarysPow) {
  for (const double b : {0.9, 0.999, 1.0, 1.5, 1e-4, 10000.0}) {
    for (const size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{64}, size_t{1000}}) {
      const double want = std::pow(b, double(n));
      if (!std::isfinite(want) || want == 0) continue;
      EXPECT_NEAR(Power(b, n), want, 1e-13 * want) << b << "^" << n;
    }
  }
  for (const double a : {1e-8, 1e-4, 0.5, 1.0, 2.0, 10000.0, 500000.0}) {
    for (const size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{32}, size_t{768}}) {
      const double want = std::pow(a, 1.0 / double(n));
      EXPECT_NEAR(RootOf(a, n), want, 1e-14 * want) << a << "^(1/" << n << ")";
    }
  }
}

class RopeKernel : public testing::TableTest {};

TEST_P(RopeKernel, MatchesARotationInDouble) {
  const size_t lanes = table().lanes;
  const size_t tokens = 4, heads = 3, pos0 = 1000;
  const double base = 10000.0;
  std::mt19937 rng(41);
  for (const auto& [back, interleaved] :
       {std::pair{false, false}, {false, true}, {true, false}, {true, true}}) {
    const auto turn = back ? TrainingKernelsFor(table()).rope_backward : table().rope;
    for (const size_t r : {size_t{2}, size_t{6}, lanes, 2 * lanes, 2 * lanes + 2,
                           4 * lanes + 6, size_t{64}}) {
      if (r % 2 != 0) continue;  // the scalar table's one lane
      SCOPED_TRACE((back ? "backward, " : "") +
                   std::string(interleaved ? "interleaved, r = " : "half, r = ") +
                   std::to_string(r));
      const size_t stride = r + 5, ld = heads * stride + 3;
      const std::vector<float> x = testing::RandomVector(tokens * ld, 1.0f, rng);
      std::vector<float> angles(tokens * RopeTableRow(r, interleaved));
      FillRopeAngles(base, r, interleaved, pos0, tokens, angles.data());
      std::vector<float> y = x;
      turn({.x = y.data(),
            .ld = ld,
            .tokens = tokens,
            .heads = heads,
            .head_stride = stride,
            .rotary_dim = r,
            .interleaved = interleaved,
            .table = angles.data(),
            .table_ld = RopeTableRow(r, interleaved)});
      for (size_t t = 0; t < tokens; ++t) {
        for (size_t h = 0; h < heads; ++h) {
          const size_t at = t * ld + h * stride;
          for (size_t i = 0; i < r / 2; ++i) {
            const size_t i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + r / 2;
            const double angle = double(pos0 + t) * std::pow(base, -2.0 * double(i) / double(r));
            // By -angle backwards: sin changes sign.
            const double c = double(float(std::cos(angle)));
            const double s = (back ? -1.0 : 1.0) * double(float(std::sin(angle)));
            const double a = x[at + i0], b = x[at + i1];
            EXPECT_NEAR(y[at + i0], a * c - b * s, 1e-6) << "token " << t << " head " << h;
            EXPECT_NEAR(y[at + i1], a * s + b * c, 1e-6) << "token " << t << " head " << h;
          }
          for (size_t i = r; i < stride; ++i) {
            EXPECT_EQ(y[at + i], x[at + i]) << "feature " << i << " past rotary_dim";
          }
        }
        for (size_t i = heads * stride; i < ld; ++i) EXPECT_EQ(y[t * ld + i], x[t * ld + i]);
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(RopeKernel);

class RopeAttention : public testing::TableTest {};

// Grouped-query heads whose width is no whole number of vectors or panels,
// so that the projection's units hold several heads: against the float64
// reference, at an offset inside the kept angle table and one far past it.
TEST_P(RopeAttention, MatchesTheReferenceAtEveryOffset) {
  std::mt19937 rng(43);
  for (const RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
    for (const size_t rotary_dim : {size_t{8}, size_t{12}}) {
      const MhaConfig config{.d_model = 36, .num_heads = 6, .head_dim = 12, .num_kv_heads = 2,
                             .rope = {.style = style, .base = 10000.0, .rotary_dim = rotary_dim}};
      const testing::MhaProblem p = testing::RandomProblem(config, 2, 37, 37, rng);
      const Tensor3 x = p.query.View();
      for (const size_t offset : {size_t{0}, size_t{5}, size_t{1000000}}) {
        SCOPED_TRACE("offset " + std::to_string(offset) + ", rotary_dim " +
                     std::to_string(rotary_dim));
        MhaOptions o;
        o.causal = true;
        o.position_offset = offset;
        o.need_weights = true;
        MultiHeadAttention mha(p.config, table());
        mha.SetWeights(p.weights.View());
        // Twice: the second call reads the angles the first one kept.
        const MhaResult want = ReferenceAttention(p.config, p.weights.View(), x, x, x, o);
        for (int call = 0; call < 2; ++call) {
          testing::ExpectResultNear(mha.Forward(x, x, x, o), want, 2e-5);
        }
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(RopeAttention);

}  // namespace
}  // namespace simd_attention
