// Every `mha_variant` case of ../shared/golden (grouped-query heads, rotary
// positions, key windows, soft-capping, scale) through MultiHeadAttention on
// every kernel table, and token by token through the KV cache.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "golden.h"
#include "incremental_util.h"
#include "reference/attention_reference.h"
#include "simd_attention/multi_head_attention.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

struct VariantCase {
  GoldenCase c;
  MhaConfig config;
  MhaWeights weights;
  Tensor3 query;
  MhaOptions options;
};

VariantCase Load(const std::string& name) {
  VariantCase v{LoadGoldenCase(name)};
  const GoldenCase& c = v.c;
  v.config = GoldenMhaConfig(c);
  v.weights = GoldenMhaWeights(c);
  const GoldenTensor& q = c.Tensor("query");
  v.query = {q.f32, q.shape[0], q.shape[1], q.shape[2]};
  const std::string causal = c.config_text.at("causal");
  EXPECT_NE(causal, "top_left") << "MultiHeadAttention aligns causal masks bottom-right";
  v.options.causal = causal == "bottom_right";
  if (c.config_list.count("window")) {
    const std::vector<double>& w = c.config_list.at("window");
    v.options.window = {int64_t(w[0]), int64_t(w[1])};
  }
  if (c.config.count("softcap") && c.config.at("softcap") > 0) {
    v.options.softcap = c.config.at("softcap");
  }
  if (c.config.count("scale")) v.options.scale = c.config.at("scale");
  v.options.position_offset = c.Config("position_offset");
  v.options.need_weights = true;
  return v;
}

// The float64 oracle itself against PyTorch.
class GoldenMhaVariantReference : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenMhaVariantReference, MatchesGolden) {
  const VariantCase v = Load(GetParam());
  const MultiHeadAttention resolved(v.config);
  const MhaResult r = ReferenceAttention(resolved.config(), v.weights, v.query, v.query, v.query,
                                         v.options);
  EXPECT_TRUE(AllNear(r.output, v.c.Tensor("output").f32, v.c.tolerance)) << "output";
  EXPECT_TRUE(AllNear(r.attn_weights, v.c.Tensor("attn_weights").f32, v.c.tolerance));
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenMhaVariantReference,
                         ::testing::ValuesIn(GoldenCaseNames("mha_variant")), CaseParamName);

class GoldenMhaVariant : public TableCaseTest {};

TEST_P(GoldenMhaVariant, MatchesGolden) {
  const VariantCase v = Load(case_name());
  ASSERT_NE(v.c.config.at("self_attention"), 0) << "cross-attention variants: add them here";
  MultiHeadAttention mha(v.config, table());
  mha.SetWeights(v.weights);
  const MhaResult r = mha.Forward(v.query, v.options);
  EXPECT_TRUE(AllNear(r.output, v.c.Tensor("output").f32, v.c.tolerance)) << "output";
  EXPECT_TRUE(AllNear(r.attn_weights, v.c.Tensor("attn_weights").f32, v.c.tolerance))
      << "attn_weights";
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenMhaVariant,
                         ::testing::ValuesIn(OnEveryTable(GoldenCaseNames("mha_variant"))),
                         TableCaseParamName);

// The causal cases that start at position 0: a prompt a cache can replay.
std::vector<std::string> CausalPrompts() {
  std::vector<std::string> names;
  for (const std::string& name : GoldenCaseNames("mha_variant")) {
    const GoldenCase c = LoadGoldenCase(name);
    if (c.config_text.at("causal") == "bottom_right" && c.Config("position_offset") == 0) {
      names.push_back(name);
    }
  }
  return names;
}

class GoldenMhaVariantDecoding : public TableCaseTest {};

// Decoding one token at a time through the cache (which holds only the
// key/value heads) gives the full causal forward's rows.
TEST_P(GoldenMhaVariantDecoding, TokenByTokenEqualsTheFullForward) {
  const VariantCase v = Load(case_name());
  MultiHeadAttention mha(v.config, table());
  mha.SetWeights(v.weights);
  MhaOptions plain = v.options;
  plain.need_weights = false;
  const std::vector<float> full = mha.Forward(v.query, plain).output;
  const size_t batch = v.query.batch, tokens = v.query.tokens, d = v.query.features;
  KVCache cache = mha.CreateKVCache(batch, tokens);
  for (size_t t = 0; t < tokens; ++t) {
    SCOPED_TRACE("token " + std::to_string(t));
    const std::vector<float> step =
        mha.ForwardIncremental(Tokens(v.query, t, 1).View(), cache, plain).output;
    EXPECT_TRUE(AllNear(step, TokenRows(full, batch, tokens, d, t, 1), 1e-5));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenMhaVariantDecoding,
                         ::testing::ValuesIn(OnEveryTable(CausalPrompts())), TableCaseParamName);

}  // namespace
}  // namespace simd_attention::testing
