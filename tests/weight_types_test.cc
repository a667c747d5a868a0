// Multi-head attention with its weights held as float16, bfloat16 and int8,
// on every golden `mha` case and every kernel table, against the float32
// result of the same table. The error a storage type adds is bounded by its
// unit roundoff u (2^-11 float16, 2^-8 bfloat16; int8: half a step of
// max|w|/127 per column, u <= 2^-8 relative to the column's largest weight):
// each projection's dot products of length K err by at most u * sum |a_k w_k|,
// and the output passes three such products in a row (Q or K, V, then W_O),
// so about 3u of the output's scale, which the softmax does not amplify for
// the cases' moderate scores; the bound is twice that, and the test prints
// the error it saw (about 0.1-1.6u).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "golden.h"
#include "simd_attention/multi_head_attention.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

class WeightTypes : public TableCaseTest {};

TEST_P(WeightTypes, StayWithinTheirRoundoffOfFloat32) {
  const GoldenCase c = LoadGoldenCase(case_name());
  MhaCaseInputs in = MhaInputs(c);
  MultiHeadAttention f32(in.config, table());
  f32.SetWeights(in.weights);
  const MhaResult want = f32.Forward(in.query, in.key, in.value, in.options);
  double scale = 1;
  for (float x : want.output) scale = std::max(scale, double(std::fabs(x)));
  for (const auto& [type, name, u] : {std::tuple{WeightType::kF16, "f16", 0x1p-11},
                                      std::tuple{WeightType::kBF16, "bf16", 0x1p-8},
                                      std::tuple{WeightType::kInt8, "int8", 0x1p-8}}) {
    MhaConfig config = in.config;
    config.weights = type;
    MultiHeadAttention narrow(config, table());
    narrow.SetWeights(in.weights);
    const MhaResult got = narrow.Forward(in.query, in.key, in.value, in.options);
    const double err = MaxAbsDiff(got.output, want.output);
    std::printf("%s %s: max |error| %.3g (output scale %.3g)\n", case_name().c_str(), name, err,
                scale);
    EXPECT_LE(err, 2 * 3 * u * scale) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, WeightTypes,
                         ::testing::ValuesIn(OnEveryTable(GoldenCaseNames("mha"))),
                         TableCaseParamName);

}  // namespace
}  // namespace simd_attention::testing
