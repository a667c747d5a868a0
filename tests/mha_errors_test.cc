// Bad input is rejected with an exception whose message names the argument
// and says what was expected and what was given, and a rejected call leaves
// the object usable.
#include <gtest/gtest.h>

#include <cmath>
#include <exception>
#include <initializer_list>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "random_mha.h"
#include "simd_attention/backend.h"
#include "simd_attention/multi_head_attention.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

constexpr double kTol = 1e-4;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

MhaConfig Config(size_t d_model, size_t num_heads, bool bias = true) {
  MhaConfig c;
  c.d_model = d_model;
  c.num_heads = num_heads;
  c.bias = bias;
  return c;
}

// A valid problem plus an object on the test's kernel table with its weights
// set: each test breaks one input and then checks the object still works.
class MhaErrors : public TableTest {
 protected:
  // d_model 8, 2 heads, kdim 6, vdim 5; batch 2, Tq 3, Tk 4. kdim and vdim
  // differ from d_model so that checking against the wrong one shows.
  static constexpr size_t kBatch = 2, kTq = 3, kTk = 4;

  MhaErrors() : problem_(Problem()), mha_(problem_.config, table()) {}

  static MhaProblem Problem() {
    std::mt19937 rng(42);
    MhaConfig config = Config(8, 2);
    config.kdim = 6;
    config.vdim = 5;
    return RandomProblem(config, kBatch, kTq, kTk, rng);
  }

  void SetUp() override { mha_.SetWeights(problem_.weights.View()); }

  // After a rejected call, a valid one succeeds and matches the reference.
  void ExpectStillWorks() {
    MhaOptions options;
    options.need_weights = true;
    options.need_per_head_output = true;
    options.causal = true;
    ExpectResultNear(mha_.Forward(problem_.query.View(), problem_.key.View(),
                                  problem_.value.View(), options),
                     RunReference(problem_, options), kTol);
  }

  // The object rejects Forward(query, key, value, options) with an
  // invalid_argument naming `fragments`, then still works.
  void ExpectForwardRejects(const Tensor3& query, const Tensor3& key,
                            const Tensor3& value, const MhaOptions& options,
                            std::initializer_list<std::string_view> fragments) {
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        [&] { mha_.Forward(query, key, value, options); }, fragments));
    ExpectStillWorks();
  }

  void ExpectOptionsRejected(const MhaOptions& options,
                             std::initializer_list<std::string_view> fragments) {
    ExpectForwardRejects(problem_.query.View(), problem_.key.View(),
                         problem_.value.View(), options, fragments);
  }

  // Valid weights other than the ones set: broken copies of these show
  // whether a rejected SetWeights left any part of them behind.
  OwnedWeights OtherWeights() const {
    std::mt19937 rng(43);
    return RandomWeights(problem_.config, rng);
  }

  // SetWeights(broken) is rejected and the weights set before stay in force.
  void ExpectWeightsRejected(const OwnedWeights& broken,
                             std::initializer_list<std::string_view> fragments) {
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        [&] { mha_.SetWeights(broken.View()); }, fragments));
    ExpectStillWorks();
  }

  MhaProblem problem_;
  MultiHeadAttention mha_;
};

// A config the constructor refuses, and what its message must say: the
// argument, the rule it breaks and the value given.
struct BadConfig {
  const char* name;
  size_t d_model, num_heads;
  const char* argument;
  const char* rule;
  const char* given;
};

constexpr BadConfig kBadConfigs[] = {
    {"DModelNotDivisibleByHeads", 10, 3, "d_model", "num_heads (3)", "got 10"},
    {"ZeroHeads", 8, 0, "num_heads", "> 0", "got 0"},
    {"ZeroDModel", 0, 2, "d_model", "> 0", "got 0"},
};

class MhaConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(MhaConfigErrors, Rejected) {
  const BadConfig& c = GetParam();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { MultiHeadAttention mha(Config(c.d_model, c.num_heads)); },
      {c.argument, c.rule, c.given}));
}

INSTANTIATE_TEST_SUITE_P(Configs, MhaConfigErrors, ::testing::ValuesIn(kBadConfigs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(MhaUsageErrors, UnknownBackendName) {
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [] { ParseBackend("foo"); }, {"backend", "highway", "scalar", "'foo'"}));
  // The valid names still parse.
  for (Backend b : {Backend::kHighway, Backend::kXsimd, Backend::kScalar}) {
    EXPECT_EQ(ParseBackend(BackendName(b)), b);
  }
}

class MhaUsageErrorsOnTable : public TableTest {};

TEST_P(MhaUsageErrorsOnTable, ForwardBeforeSetWeights) {
  std::mt19937 rng(1);
  const MhaProblem p = RandomProblem(Config(8, 2), 1, 2, 2, rng);
  MultiHeadAttention mha(p.config, table());
  EXPECT_TRUE(ThrowsWith<std::logic_error>(
      [&] { mha.Forward(p.query.View()); }, {"SetWeights"}));
  mha.SetWeights(p.weights.View());
  ExpectResultNear(mha.Forward(p.query.View(), p.key.View(), p.value.View()),
                   RunReference(p, {}), kTol);
}

// Rows x columns of each weight for the fixture's config (d_k = 4, d_v = 4):
// w_q [8, 8], w_k [6, 8], w_v [5, 8], w_o [8, 8].
TEST_P(MhaErrors, WrongWeightLengths) {
  const struct {
    std::vector<float> OwnedWeights::*member;
    const char* name;
    const char* shape;
  } weights[] = {
      {&OwnedWeights::w_q, "w_q", "[8, 8]"}, {&OwnedWeights::w_k, "w_k", "[6, 8]"},
      {&OwnedWeights::w_v, "w_v", "[5, 8]"}, {&OwnedWeights::w_o, "w_o", "[8, 8]"},
      {&OwnedWeights::b_q, "b_q", "[8]"},    {&OwnedWeights::b_k, "b_k", "[8]"},
      {&OwnedWeights::b_v, "b_v", "[8]"},    {&OwnedWeights::b_o, "b_o", "[8]"},
  };
  for (const auto& w : weights) {
    SCOPED_TRACE(w.name);
    OwnedWeights broken = OtherWeights();
    std::vector<float>& values = broken.*w.member;
    const std::string expected = "expected " + std::to_string(values.size());
    values.pop_back();
    const std::string got = "got " + std::to_string(values.size());
    ExpectWeightsRejected(broken, {w.name, expected, w.shape, got});
  }
}

TEST_P(MhaErrors, InfiniteWeight) {
  OwnedWeights broken = OtherWeights();
  broken.w_k[5] = kInf;
  ExpectWeightsRejected(broken, {"w_k", "element 5", "Infinity"});
}

TEST_P(MhaErrors, NaNBias) {
  OwnedWeights broken = OtherWeights();
  broken.b_o[2] = kNaN;
  ExpectWeightsRejected(broken, {"b_o", "element 2", "NaN"});
}

TEST(MhaUsageErrors, BiasGivenWhenConfigHasNone) {
  std::mt19937 rng(2);
  const MhaConfig config = Resolve(Config(8, 2, /*bias=*/false));
  OwnedWeights weights = RandomWeights(config, rng);
  weights.b_v = RandomVector(8, 1.0f, rng);
  MultiHeadAttention mha(config);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.SetWeights(weights.View()); },
      {"b_v", "bias is false", "got 8"}));
  weights.b_v.clear();
  EXPECT_NO_THROW(mha.SetWeights(weights.View()));
}

// The same data viewed with another feature count (and tokens to match),
// so only the feature count is wrong.
TEST_P(MhaErrors, QueryWithWrongFeatureCount) {
  const std::vector<float> data(kBatch * kTq * 7, 0.5f);
  ExpectForwardRejects(Tensor3{data, kBatch, kTq, 7}, problem_.key.View(),
                       problem_.value.View(), {},
                       {"query.features", "expected 8", "d_model", "got 7"});
}

TEST_P(MhaErrors, KeyAndValueFeaturesAreCheckedAgainstKdimAndVdim) {
  const Tensor3 key{problem_.key.data, kBatch, 3, 8};  // 2 x 4 x 6 = 2 x 3 x 8
  ExpectForwardRejects(problem_.query.View(), key, problem_.value.View(), {},
                       {"key.features", "expected 6", "kdim", "got 8"});
  const Tensor3 value{problem_.value.data, kBatch, 5, 4};  // 2 x 4 x 5
  ExpectForwardRejects(problem_.query.View(), problem_.key.View(), value, {},
                       {"value.features", "expected 5", "vdim", "got 4"});
}

TEST_P(MhaErrors, DataLengthDisagreesWithShape) {
  const std::span<const float> short_data =
      std::span<const float>(problem_.query.data).first(kBatch * kTq * 8 - 1);
  ExpectForwardRejects(Tensor3{short_data, kBatch, kTq, 8}, problem_.key.View(),
                       problem_.value.View(), {},
                       {"query", "expected 48", "[2, 3, 8]", "got 47"});
}

TEST_P(MhaErrors, BatchMismatchBetweenQueryAndKey) {
  // Both reshaped to batch 1 with the same data: only the batch disagrees.
  const Tensor3 key{problem_.key.data, 1, kBatch * kTk, 6};
  const Tensor3 value{problem_.value.data, 1, kBatch * kTk, 5};
  ExpectForwardRejects(problem_.query.View(), key, value, {},
                       {"key.batch", "expected 2", "query.batch", "got 1"});
}

TEST_P(MhaErrors, KeyValueTokenMismatch) {
  std::mt19937 rng(3);
  const OwnedTensor value = RandomTensor(kBatch, kTk + 1, 5, rng);
  ExpectForwardRejects(problem_.query.View(), problem_.key.View(), value.View(),
                       {}, {"value.tokens", "expected 4", "key.tokens", "got 5"});
}

TEST_P(MhaErrors, ZeroTokens) {
  const Tensor3 empty_query{{}, kBatch, 0, 8};
  ExpectForwardRejects(empty_query, problem_.key.View(), problem_.value.View(),
                       {}, {"query.tokens", "> 0", "got 0"});
  const Tensor3 empty_key{{}, kBatch, 0, 6};
  const Tensor3 empty_value{{}, kBatch, 0, 5};
  ExpectForwardRejects(problem_.query.View(), empty_key, empty_value, {},
                       {"key.tokens", "> 0", "got 0"});
}

TEST_P(MhaErrors, KeyPaddingMaskWrongLength) {
  const std::vector<uint8_t> padding(kBatch * kTk - 1, 1);
  MhaOptions options;
  options.key_padding_mask = padding;
  ExpectOptionsRejected(options,
                        {"key_padding_mask", "expected 8", "[2, 4]", "got 7"});
}

TEST_P(MhaErrors, AttnMaskWrongLength) {
  // Neither [Tq, Tk] = 12 nor [B, H, Tq, Tk] = 48.
  const std::vector<float> mask(13, 0.0f);
  MhaOptions options;
  options.attn_mask = mask;
  ExpectOptionsRejected(options, {"attn_mask", "12", "[3, 4]", "48",
                                  "[2, 2, 3, 4]", "got 13"});
}

TEST_P(MhaErrors, NaNInQuery) {
  OwnedTensor query = problem_.query;
  query.data[3] = kNaN;
  ExpectForwardRejects(query.View(), problem_.key.View(), problem_.value.View(),
                       {}, {"query", "element 3", "NaN"});
}

TEST_P(MhaErrors, NaNInAttnMask) {
  std::vector<float> mask(kTq * kTk, 0.0f);
  mask[2] = kNaN;
  MhaOptions options;
  options.attn_mask = mask;
  ExpectOptionsRejected(options, {"attn_mask", "element 2", "NaN"});
}

TEST_P(MhaErrors, PlusInfinityInAttnMask) {
  // -inf hides a key; +inf has no meaning as an additive mask.
  std::vector<float> mask(kTq * kTk, -kInf);
  mask[0] = 0.0f;
  mask[7] = kInf;
  MhaOptions options;
  options.attn_mask = mask;
  ExpectOptionsRejected(options, {"attn_mask", "element 7", "+Infinity"});
}

INSTANTIATE_ON_EVERY_TABLE(MhaErrors);
INSTANTIATE_ON_EVERY_TABLE(MhaUsageErrorsOnTable);

}  // namespace
}  // namespace simd_attention::testing
