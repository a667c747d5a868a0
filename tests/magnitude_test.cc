// Large finite inputs on every kernel table: the contract is that a result is
// either right (within float32 error of the float64 reference, relative to
// its own scale) or refused with std::range_error naming the computation that
// would overflow float32; never NaN, never a silently wrong value, and never
// an error that blames an argument the caller did not pass.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "layers/partial_outputs.h"
#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/scaled_dot_product_attention.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"

namespace simd_attention {
namespace {

using testing::MhaProblem;
using testing::ThrowsWith;

class Magnitude : public testing::TableTest {};

void Scale(std::vector<float>& v, float s) {
  for (float& x : v) x *= s;
}

MhaProblem ScaledProblem(float input_scale, uint32_t seed) {
  std::mt19937 rng(seed);
  MhaProblem p = testing::RandomProblem(MhaConfig{.d_model = 16, .num_heads = 2}, 2, 5, 7, rng);
  Scale(p.query.data, input_scale);
  Scale(p.key.data, input_scale);
  Scale(p.value.data, input_scale);
  return p;
}

bool AllFinite(const std::vector<float>& v) {
  for (const float x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// Scores up to ~1e25 are finite in float32: the softmax is (nearly) one-hot
// and the output is the chosen values, which float64 agrees with.
TEST_P(Magnitude, LargeButRepresentableScoresGiveTheReferenceResult) {
  for (const float s : {1e3f, 1e6f, 1e9f, 1e12f}) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      const MhaProblem p = ScaledProblem(s, seed);
      const MhaResult got = testing::RunKernels(table(), p, {});
      const MhaResult want = testing::RunReference(p, {});
      // Scores of magnitude S carry float32 errors of ~S * 2^-24, which move
      // near-tied probabilities by that much: 1e-4 of the output's scale.
      EXPECT_TRUE(testing::AllNear(got.output, want.output,
                                   testing::ScaledTolerance(want.output, 1e-4)))
          << "input scale " << s << ", seed " << seed;
    }
  }
}

// |q . k| can reach ~1e41 and more: past float32, so refused by name.
TEST_P(Magnitude, ScoresBeyondFloat32AreRefusedNotNaN) {
  for (const float s : {1e20f, 1e25f, 1e30f}) {
    const MhaProblem p = ScaledProblem(s, 11);
    EXPECT_TRUE(ThrowsWith<std::range_error>(
        [&] { testing::RunKernels(table(), p, {}); },
        {"overflow", "float32", "too large in magnitude"}))
        << s;
  }
}

// Inputs near float32's maximum overflow in the projection itself.
TEST_P(Magnitude, ProjectionOverflowNamesTheProjection) {
  const MhaProblem p = ScaledProblem(3e38f, 5);
  EXPECT_TRUE(ThrowsWith<std::range_error>([&] { testing::RunKernels(table(), p, {}); },
                                           {"projection", "overflowed float32"}));
}

TEST_P(Magnitude, KVCacheKeepsOnlyFiniteValuesAndStaysUsable) {
  std::mt19937 rng(9);
  const MhaConfig config{.d_model = 16, .num_heads = 2};
  MultiHeadAttention mha(config, table());
  const testing::OwnedWeights w = testing::RandomWeights(testing::Resolve(config), rng);
  mha.SetWeights(w.View());
  KVCache cache = mha.CreateKVCache(1, 8);
  const testing::OwnedTensor a = testing::RandomTensor(1, 2, 16, rng);
  mha.ForwardIncremental(a.View(), cache);
  testing::OwnedTensor huge = testing::RandomTensor(1, 1, 16, rng);
  Scale(huge.data, 1e30f);
  EXPECT_THROW(mha.ForwardIncremental(huge.View(), cache), std::range_error);
  EXPECT_EQ(cache.length(), 2u);
  // What it holds goes back in.
  const std::vector<float> keys = cache.Keys(), values = cache.Values();
  ASSERT_TRUE(AllFinite(keys) && AllFinite(values));
  cache.Append(keys, values, 2);
  EXPECT_EQ(cache.length(), 4u);
  EXPECT_TRUE(AllFinite(mha.ForwardIncremental(a.View(), cache).output));
}

// The output is a weighted mean of the values, finite for finite values,
// while the kernel's unnormalized sum over the keys is up to (keys) x
// max|v|: 64 equal keys with values 1e37 sum to 6.4e38, past float32.
// Heads of 5 values are padded on the SIMD tables; 1 query takes the dot
// products, 40 queries the GEMM and two query blocks.
TEST_P(Magnitude, ValuesWhoseSumOverflowsStillGiveTheirMean) {
  for (const size_t tq : {size_t{1}, size_t{40}}) {
    for (const size_t dv : {size_t{5}, size_t{8}}) {
      const size_t heads = 2, tk = 64, d = 8;
      const std::vector<float> q(heads * tq * d, 0.0f), k(heads * tk * d, 0.0f);
      const std::vector<float> v(heads * tk * dv, 1e37f);
      ScaledDotProductAttention sdpa({}, table());
      const SdpaResult r = sdpa.Forward({q, 1, heads, tq, d}, {k, 1, heads, tk, d},
                                        {v, 1, heads, tk, dv});
      for (const float z : r.output) ASSERT_NEAR(z, 1e37f, 1e37 * 1e-6) << tq << " x " << dv;
    }
  }
}

// The sums are kept in range by scaling the values by a power of two, which
// is exact: the output is bit for bit the unscaled computation's, here that
// of the same values times 2^-40 (which need no scaling), times 2^40.
TEST_P(Magnitude, ScaledValuesGiveTheUnscaledBits) {
  std::mt19937 rng(3);
  const size_t heads = 2, tq = 37, tk = 100, d = 8, dv = 8;
  const std::vector<float> q = testing::RandomVector(heads * tq * d, 1.0f, rng);
  const std::vector<float> k = testing::RandomVector(heads * tk * d, 1.0f, rng);
  const std::vector<float> v = testing::RandomVector(heads * tk * dv, 1e37f, rng);
  std::vector<float> v_small = v;
  Scale(v_small, 0x1p-40f);
  ScaledDotProductAttention sdpa({}, table());
  SdpaOptions o;
  o.causal = CausalAlignment::kBottomRight;
  const std::vector<float> large =
      sdpa.Forward({q, 1, heads, tq, d}, {k, 1, heads, tk, d}, {v, 1, heads, tk, dv}, o).output;
  std::vector<float> small =
      sdpa.Forward({q, 1, heads, tq, d}, {k, 1, heads, tk, d}, {v_small, 1, heads, tk, dv}, o)
          .output;
  Scale(small, 0x1p40f);
  ASSERT_TRUE(AllFinite(large));
  EXPECT_EQ(large, small);
}

// Values at float32's largest: a mean that rounds past it is refused by the
// name of the attention, never returned as Infinity or NaN.
TEST_P(Magnitude, AnAttentionOutputBeyondFloat32IsRefusedByName) {
  const size_t tk = 64, d = 8;
  const std::vector<float> q(d, 0.0f), k(tk * d, 0.0f), v(tk * d, FLT_MAX);
  ScaledDotProductAttention sdpa({}, table());
  try {
    const SdpaResult r = sdpa.Forward({q, 1, 1, 1, d}, {k, 1, 1, tk, d}, {v, 1, 1, tk, d});
    for (const float z : r.output) EXPECT_NEAR(z, FLT_MAX, FLT_MAX * 1e-6);
  } catch (const std::range_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the attention softmax(q k^T) v overflowed float32", 0),
              0u)
        << e.what();
  }
}

// MultiHeadAttention over the same values (V = x W_v = 1e37, equal scores,
// W_o the identity): the output is the mean, 1e37, not a refusal that blames
// the output projection; as is a decoding step over a bfloat16 cache,
// whose values are widened and then scaled.
TEST_P(Magnitude, AttentionOverValuesWhoseSumOverflows) {
  const size_t d = 8, tokens = 64;
  const std::vector<float> zeros(d * d, 0.0f), w_v(d * d, 1.25e36f), bias(d, 0.0f);
  std::vector<float> w_o(d * d, 0.0f);
  for (size_t i = 0; i < d; ++i) w_o[i * d + i] = 1.0f;
  const std::vector<float> x(tokens * d, 1.0f);
  MultiHeadAttention mha(MhaConfig{.d_model = d, .num_heads = 2}, table());
  mha.SetWeights({zeros, zeros, w_v, w_o, bias, bias, bias, bias});
  for (const float y : mha.Forward(Tensor3{x, 1, tokens, d}).output) {
    ASSERT_NEAR(y, 1e37f, 1e37 * 1e-6);
  }
  MultiHeadAttention narrow(
      MhaConfig{.d_model = d, .num_heads = 2, .cache_type = WeightType::kBF16}, table());
  narrow.SetWeights({zeros, zeros, w_v, w_o, bias, bias, bias, bias});
  KVCache cache = narrow.CreateKVCache(1, tokens);
  for (const float y : narrow.ForwardIncremental(Tensor3{x, 1, tokens, d}, cache).output) {
    ASSERT_NEAR(y, 1e37f, 1e37 * 1e-2);  // 1e37 in bfloat16
  }
}

LayerConfig SmallLayer() {
  return LayerConfig{.d_model = 16, .num_heads = 2, .ffn_dim = 32};
}

// Random layer weights of scale 1/sqrt(fan_in) and unit LayerNorms.
struct LayerWeights {
  testing::OwnedWeights self, cross;
  std::vector<float> w1, b1, w2, b2, gamma, beta;
  explicit LayerWeights(std::mt19937& rng) {
    const MhaConfig c = testing::Resolve(MhaConfig{.d_model = 16, .num_heads = 2});
    self = testing::RandomWeights(c, rng);
    cross = testing::RandomWeights(c, rng);
    w1 = testing::RandomVector(16 * 32, 0.25f, rng);
    b1 = testing::RandomVector(32, 0.25f, rng);
    w2 = testing::RandomVector(32 * 16, 0.18f, rng);
    b2 = testing::RandomVector(16, 0.18f, rng);
    gamma.assign(16, 1.0f);
    beta.assign(16, 0.0f);
  }
  FfnWeights ffn() const { return {w1, b1, w2, b2}; }
  NormWeights norm() const { return {gamma, beta}; }
};

TEST_P(Magnitude, LayersRefuseOverflowWithoutBlamingAnArgument) {
  std::mt19937 rng(4);
  const LayerWeights w(rng);
  TransformerEncoderLayer encoder(SmallLayer(), table());
  encoder.SetWeights(w.self.View(), w.ffn(), w.norm(), w.norm());
  TransformerDecoderLayer decoder(SmallLayer(), table());
  decoder.SetWeights(w.self.View(), w.cross.View(), w.ffn(), w.norm(), w.norm(), w.norm());
  testing::OwnedTensor x = testing::RandomTensor(1, 3, 16, rng);
  const testing::OwnedTensor memory = testing::RandomTensor(1, 4, 16, rng);
  const std::vector<float> fine = encoder.Forward(x.View());
  ASSERT_TRUE(AllFinite(fine));
  Scale(x.data, 1e30f);
  for (const bool norm_first : {false, true}) {
    LayerConfig c = SmallLayer();
    c.norm_first = norm_first;
    TransformerEncoderLayer e(c, table());
    e.SetWeights(w.self.View(), w.ffn(), w.norm(), w.norm());
    TransformerDecoderLayer d(c, table());
    d.SetWeights(w.self.View(), w.cross.View(), w.ffn(), w.norm(), w.norm(), w.norm());
    for (const auto& call : {std::function<void()>([&] { e.Forward(x.View()); }),
                             std::function<void()>([&] { d.Forward(x.View(), memory.View()); })}) {
      try {
        call();
        ADD_FAILURE() << "no error";
      } catch (const std::range_error& error) {
        const std::string m = error.what();
        EXPECT_NE(m.find("float32"), std::string::npos) << m;
        EXPECT_EQ(m.find("query:"), std::string::npos) << m;
      }
    }
  }
  // The layer still gives its earlier answer.
  Scale(x.data, 1e-30f);
  EXPECT_TRUE(testing::AllNear(encoder.Forward(x.View()), fine, 1e-5));
}

TEST_P(Magnitude, LayerNormVarianceOverflowIsRefused) {
  std::vector<float> x(16, 1e20f);
  x[0] = -1e20f;
  const std::vector<float> gamma(16, 1.0f), beta(16, 0.5f);
  EXPECT_TRUE(ThrowsWith<std::range_error>(
      [&] { LayerNormForward(Tensor3{x, 1, 1, 16}, {gamma, beta}, 1e-5, table()); },
      {"x: values up to 1e+20 would overflow LayerNorm's float32 variance"}));
  Scale(x, 1e-10f);  // 1e10: the variance (1e20) is representable
  const std::vector<float> y = LayerNormForward(Tensor3{x, 1, 1, 16}, {gamma, beta}, 1e-5, table());
  EXPECT_NEAR(y[0], 0.5f - std::sqrt(15.0f), 1e-4);
  EXPECT_NEAR(y[1], 0.5f + 1.0f / std::sqrt(15.0f), 1e-4);
}

// The worker pool splits an attention by heads and sums the workers'
// partial outputs: a sum that overflows, though every part is finite, is
// refused with the message of the whole attention's output.
TEST(PartialOutputs, AnAttentionsSumIsCheckedAsItsOutput) {
  // Three heads of d_k 2, values all 1, column 4 of W_O 7e37: each head
  // adds 1.4e38 to column 4 of every row, the three 4.2e38.
  const size_t d = 6, batch = 2, tokens = 3;
  MultiHeadAttention mha(MhaConfig{.d_model = d, .num_heads = 3});
  const std::vector<float> small(d * d, 0.1f), zeros(d * d, 0.0f), bias(d, 0.0f),
      ones(d, 1.0f);
  std::vector<float> w_o(d * d, 0.0f);
  for (size_t r = 0; r < d; ++r) w_o[r * d + 4] = 7e37f;
  mha.SetWeights({small, small, zeros, w_o, bias, bias, ones, bias});
  const std::vector<float> x(batch * tokens * d, 0.5f);
  std::string whole;
  try {
    mha.Forward(Tensor3{x, batch, tokens, d});
  } catch (const std::range_error& e) {
    whole = e.what();
  }
  EXPECT_EQ(whole, "the output projection z W_o + b_o overflowed float32 (element 4 is "
                   "+Infinity); the inputs or weights are too large in magnitude");
  std::vector<float> part(batch * tokens * d, 0.0f);
  for (size_t r = 0; r < batch * tokens; ++r) part[r * d + 4] = 1.4e38f;
  std::vector<float> sum = part;
  const KernelTable& k = *testing::AllKernelTables()[0];
  AddPartial(k, sum, part);
  AddPartial(k, sum, part);
  EXPECT_EQ(sum[4], INFINITY);
  EXPECT_EQ(sum[3], 0.0f);
  EXPECT_TRUE(ThrowsWith<std::range_error>([&] { CheckSummedOutput(sum); }, {whole}));
}

// Every eps is judged as the float32 the kernels add it in: 1e-60 and 5e-46
// are 0 there (a constant row would be 0 / 0), 1e40 is +inf.
TEST(Eps, OneRuleForLayersAndLayerNorm) {
  const std::vector<float> x(4, 1.0f), gamma(4, 1.0f), beta(4, 0.0f);
  const KernelTable& table = *testing::AllKernelTables()[0];
  const std::pair<double, const char*> refused[] = {
      {0.0, "0"},     {-1.0, "-1"},  {1e40, "1e+40"}, {double(INFINITY), "inf"},
      {double(NAN), "NaN"}, {1e-60, "1e-60"}, {5e-46, "5e-46"}};
  for (const auto& given : refused) {
    const double eps = given.first;  // named, not bound: lambdas capture it
    const char* text = given.second;
    const std::string expected = std::string(": expected a finite number > 0 that float32 can hold "
                                              "(1.4e-45 to 3.4e38), got ") + text;
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        [&] { LayerNormForward(Tensor3{x, 1, 1, 4}, {gamma, beta}, eps, table); },
        {"eps" + expected}))
        << eps;
    LayerConfig c{.d_model = 4, .num_heads = 1, .ffn_dim = 4, .eps = eps};
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { TransformerEncoderLayer l(c); },
                                                  {"config.eps" + expected}));
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { TransformerDecoderLayer l(c); },
                                                  {"config.eps" + expected}));
  }
  // A LayerNorm of its own takes eps as float32 already.
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { LayerNorm norm(4, 0.0f, table); },
                                                {"eps: expected a finite number > 0"}));
  // The smallest float32 > 0 is accepted: a constant row gives beta.
  EXPECT_EQ(LayerNormForward(Tensor3{x, 1, 1, 4}, {gamma, beta}, 1e-45, table), beta);
}

INSTANTIATE_ON_EVERY_TABLE(Magnitude);

}  // namespace
}  // namespace simd_attention
