// Randomized sweep: the kernels of every target against the double-precision
// reference over awkward sizes (token counts around and across the vector
// width and the attention block sizes, head widths that are not a multiple
// of any vector width) and every mask kind alone and combined.
//
// The full cartesian product would take minutes, so each (Tq, Tk) pair gets
// three cases whose shape, batch size and masks come from balanced, shuffled
// lists: every value of every axis appears several times (checked by
// SweepDesign.CoversEveryAxisValueSeveralTimes) without correlating axes.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/attention.h"
#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

constexpr double kTol = 1e-4;

struct Shape {
  size_t d_model = 0, heads = 0;
  size_t kdim = 0, vdim = 0, head_dim_v = 0;  // 0 = default
  bool bias = true;
  size_t head_dim = 0;  // 0 = d_model / heads; else heads * head_dim != d_model
};

enum MaskBits : unsigned {
  kCausal = 1,
  kPadding = 2,
  kMask2d = 4,  // additive [Tq, Tk]
  kMask4d = 8,  // additive [B, H, Tq, Tk]
};

struct SweepCase {
  size_t index = 0;  // also the seed of the case's data
  size_t batch = 0, tq = 0, tk = 0;
  Shape shape;
  unsigned masks = 0;
  // Padding that hides whole key blocks ([64, 128) in every batch item) and,
  // in batch item 1, every key but the last: exercises block skipping.
  bool padding_holes = false;
};

// d_model 40 and 60 give head widths 8, 12, 20, 40, 60; none but 8 is a
// multiple of the widest vectors, and 40/60 are not of any.
const Shape kShapes[] = {
    {40, 1},
    {40, 5},
    {60, 1},
    {60, 3},
    {60, 5},
    {64, 1},
    {60, 3, 0, 0, 7},
    {40, 5, 24, 50},
    {64, 1, 33, 17, 40, /*bias=*/false},
    {60, 5, 64, 40, 16},
    {40, 5, 0, 0, 0, true, 12},
    {60, 3, 24, 0, 9, true, 16},
};
const unsigned kMaskSets[] = {
    0,       kCausal,          kPadding,         kMask2d,
    kMask4d, kCausal | kPadding, kCausal | kMask2d, kPadding | kMask4d,
    kCausal | kPadding | kMask4d,
};
const size_t kTokens[] = {1, 2, 3, 17, 33, 129};
const size_t kBatches[] = {1, 2, 3};

// `count` entries cycling through `values`, shuffled: balanced and
// uncorrelated with the other axes.
template <class T, size_t N>
std::vector<T> Balanced(const T (&values)[N], size_t count, std::mt19937& rng) {
  std::vector<T> out;
  for (size_t i = 0; i < count; ++i) out.push_back(values[i % N]);
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::vector<SweepCase> SweepCases() {
  constexpr size_t kPerPair = 3;
  const size_t count = std::size(kTokens) * std::size(kTokens) * kPerPair;
  std::mt19937 rng(2024);
  const std::vector<Shape> shapes = Balanced(kShapes, count, rng);
  const std::vector<unsigned> masks = Balanced(kMaskSets, count, rng);
  const std::vector<size_t> batches = Balanced(kBatches, count, rng);
  std::vector<SweepCase> cases;
  for (size_t tq : kTokens) {
    for (size_t tk : kTokens) {
      for (size_t r = 0; r < kPerPair; ++r) {
        const size_t i = cases.size();
        cases.push_back({i, batches[i], tq, tk, shapes[i], masks[i]});
      }
    }
  }
  return cases;
}

// Larger than kAttentionQueryBlock x kAttentionKeyBlock, so causal and
// padding let the kernel skip whole key blocks.
std::vector<SweepCase> BlockCases() {
  static_assert(kAttentionQueryBlock == 32 && kAttentionKeyBlock == 64,
                "retune these sizes to cross the block boundaries");
  const size_t base = 1000;
  return {
      {base + 0, 2, 70, 150, {60, 3}, kCausal | kPadding},
      {base + 1, 2, 70, 150, {60, 3}, kCausal | kPadding, true},
      {base + 2, 1, 150, 70, {40, 5}, kCausal | kMask2d},
      {base + 3, 3, 96, 200, {64, 1, 33, 17, 40}, kPadding | kMask4d, true},
      {base + 4, 2, 129, 129, {60, 5, 0, 0, 7}, kCausal | kPadding | kMask4d,
       true},
      {base + 5, 2, 65, 193, {40, 5}, kCausal | kPadding | kMask2d, true},
  };
}

std::string CaseName(const SweepCase& c) {
  const Shape& s = c.shape;
  std::string name = "c" + std::to_string(c.index) + "_B" +
                     std::to_string(c.batch) + "_Tq" + std::to_string(c.tq) +
                     "_Tk" + std::to_string(c.tk) + "_D" +
                     std::to_string(s.d_model) + "_H" + std::to_string(s.heads);
  if (s.kdim != 0) name += "_kdim" + std::to_string(s.kdim);
  if (s.vdim != 0) name += "_vdim" + std::to_string(s.vdim);
  if (s.head_dim != 0) name += "_dk" + std::to_string(s.head_dim);
  if (s.head_dim_v != 0) name += "_dv" + std::to_string(s.head_dim_v);
  if (!s.bias) name += "_nobias";
  if (c.masks & kCausal) name += "_causal";
  if (c.masks & kPadding) name += c.padding_holes ? "_padholes" : "_pad";
  if (c.masks & kMask2d) name += "_mask2d";
  if (c.masks & kMask4d) name += "_mask4d";
  return name;
}

std::vector<uint8_t> HoleyKeyPadding(size_t batch, size_t tk,
                                     std::mt19937& rng) {
  std::vector<uint8_t> mask = RandomKeyPadding(batch, tk, 0.7, rng);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t j = 64; j < std::min<size_t>(tk, 128); ++j) mask[b * tk + j] = 0;
  }
  if (batch > 1) {
    std::fill_n(mask.begin() + tk, tk - 1, 0);
    mask[2 * tk - 1] = 1;
  }
  return mask;
}

// gtest prints parameters of failing tests; the name says it all.
void PrintTo(const SweepCase& c, std::ostream* os) { *os << CaseName(c); }

// Every case on every table.
class MhaSweep : public ::testing::TestWithParam<std::tuple<const KernelTable*, SweepCase>> {};

TEST_P(MhaSweep, MatchesReference) {
  const auto& [table, c] = GetParam();
  std::mt19937 rng(c.index);
  MhaConfig config;
  config.d_model = c.shape.d_model;
  config.num_heads = c.shape.heads;
  config.kdim = c.shape.kdim;
  config.vdim = c.shape.vdim;
  config.head_dim = c.shape.head_dim;
  config.head_dim_v = c.shape.head_dim_v;
  config.bias = c.shape.bias;
  const MhaProblem p = RandomProblem(config, c.batch, c.tq, c.tk, rng);

  std::vector<uint8_t> padding;
  std::vector<float> mask;
  MhaOptions options;
  options.causal = (c.masks & kCausal) != 0;
  if (c.masks & kPadding) {
    padding = c.padding_holes ? HoleyKeyPadding(c.batch, c.tk, rng)
                              : RandomKeyPadding(c.batch, c.tk, 0.7, rng);
    options.key_padding_mask = padding;
  }
  if (c.masks & (kMask2d | kMask4d)) {
    const size_t slices = c.masks & kMask4d ? c.batch * c.shape.heads : 1;
    mask = RandomAdditiveMask(slices * c.tq * c.tk, 0.2, rng);
    options.attn_mask = mask;
  }
  MhaOptions everything = options;
  everything.need_weights = true;
  everything.need_per_head_output = true;

  const MhaResult expected = RunReference(p, everything);
  ExpectResultNear(RunKernels(*table, p, everything), expected, kTol);
  // The output must not depend on what else was requested.
  const MhaResult lean = RunKernels(*table, p, options);
  EXPECT_TRUE(lean.attn_weights.empty());
  EXPECT_TRUE(lean.per_head_output.empty());
  EXPECT_TRUE(AllNear(lean.output, expected.output, ScaledTolerance(expected.output, kTol)));
}

// "<table>_<case>"
std::string ParamName(const ::testing::TestParamInfo<MhaSweep::ParamType>& info) {
  return TableTestName(*std::get<0>(info.param)) + "_" + CaseName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Sizes, MhaSweep,
                         ::testing::Combine(::testing::ValuesIn(AllKernelTables()),
                                            ::testing::ValuesIn(SweepCases())),
                         ParamName);
INSTANTIATE_TEST_SUITE_P(Blocks, MhaSweep,
                         ::testing::Combine(::testing::ValuesIn(AllKernelTables()),
                                            ::testing::ValuesIn(BlockCases())),
                         ParamName);

TEST(SweepDesign, CoversEveryAxisValueSeveralTimes) {
  constexpr int kMin = 3;
  std::map<size_t, int> tq, tk, d_model, heads, batch;
  std::map<unsigned, int> mask_bits;
  int other_kdim = 0, other_vdim = 0, other_dk = 0, other_dv = 0, no_bias = 0;
  for (const SweepCase& c : SweepCases()) {
    ++tq[c.tq];
    ++tk[c.tk];
    ++d_model[c.shape.d_model];
    ++heads[c.shape.heads];
    ++batch[c.batch];
    for (unsigned bit : {kCausal, kPadding, kMask2d, kMask4d}) {
      if (c.masks & bit) ++mask_bits[bit];
    }
    other_kdim += c.shape.kdim != 0 && c.shape.kdim != c.shape.d_model;
    other_vdim += c.shape.vdim != 0 && c.shape.vdim != c.shape.d_model;
    other_dk += c.shape.head_dim != 0 && c.shape.head_dim * c.shape.heads != c.shape.d_model;
    other_dv += c.shape.head_dim_v != 0 &&
                c.shape.head_dim_v != c.shape.d_model / c.shape.heads;
    no_bias += !c.shape.bias;
  }
  for (size_t t : kTokens) {
    EXPECT_GE(tq[t], kMin) << "Tq=" << t;
    EXPECT_GE(tk[t], kMin) << "Tk=" << t;
  }
  for (size_t d : {40, 60, 64}) EXPECT_GE(d_model[d], kMin) << "d_model=" << d;
  for (size_t h : {1, 3, 5}) EXPECT_GE(heads[h], kMin) << "H=" << h;
  for (size_t b : kBatches) EXPECT_GE(batch[b], kMin) << "B=" << b;
  for (unsigned bit : {kCausal, kPadding, kMask2d, kMask4d}) {
    EXPECT_GE(mask_bits[bit], kMin) << "mask bit " << bit;
  }
  EXPECT_GE(other_kdim, kMin);
  EXPECT_GE(other_vdim, kMin);
  EXPECT_GE(other_dv, kMin);
  EXPECT_GE(other_dk, kMin);
  EXPECT_GE(no_bias, kMin);
}

}  // namespace
}  // namespace simd_attention::testing
