// Every `mha` case of ../shared/golden through the reference and through the
// kernels of every target of every backend: output, attention weights and
// per-head outputs within the case's tolerance.
#include <gtest/gtest.h>

#include <string>

#include "golden.h"
#include "reference/attention_reference.h"
#include "simd_attention/multi_head_attention.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

void ExpectMatchesGolden(const GoldenCase& c, const MhaResult& r) {
  EXPECT_TRUE(AllNear(r.output, c.Tensor("output").f32, c.tolerance)) << "output";
  EXPECT_TRUE(AllNear(r.attn_weights, c.Tensor("attn_weights").f32, c.tolerance))
      << "attn_weights";
  EXPECT_TRUE(AllNear(r.per_head_output, c.Tensor("per_head_output").f32,
                      c.tolerance))
      << "per_head_output";
}

class GoldenMha : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenMha, Reference) {
  const GoldenCase c = LoadGoldenCase(GetParam());
  const MhaCaseInputs in = MhaInputs(c);
  const MultiHeadAttention resolved(in.config);
  ExpectMatchesGolden(c, ReferenceAttention(resolved.config(), in.weights, in.query,
                                            in.key, in.value, in.options));
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenMha, ::testing::ValuesIn(GoldenCaseNames("mha")),
                         CaseParamName);

// Every case on every table: "<table>_<case>".
class GoldenMhaOnTable : public TableCaseTest {};

TEST_P(GoldenMhaOnTable, MatchesGolden) {
  const GoldenCase c = LoadGoldenCase(case_name());
  const MhaCaseInputs in = MhaInputs(c);
  MultiHeadAttention mha(in.config, table());
  mha.SetWeights(in.weights);
  ExpectMatchesGolden(c, mha.Forward(in.query, in.key, in.value, in.options));
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenMhaOnTable,
                         ::testing::ValuesIn(OnEveryTable(GoldenCaseNames("mha"))),
                         TableCaseParamName);

}  // namespace
}  // namespace simd_attention::testing
