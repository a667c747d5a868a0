#include "random_mha.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/attention_reference.h"
#include "test_util.h"

namespace simd_attention::testing {

std::vector<float> RandomVector(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = uniform(rng);
  return v;
}

OwnedTensor RandomTensor(size_t batch, size_t tokens, size_t features,
                         std::mt19937& rng) {
  return {batch, tokens, features,
          RandomVector(batch * tokens * features, 1.0f, rng)};
}

MhaWeights OwnedWeights::View() const {
  return {w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o};
}

OwnedWeights RandomWeights(const MhaConfig& c, std::mt19937& rng) {
  const size_t hk = c.num_heads * c.head_dim, hv = c.num_heads * c.head_dim_v;
  const size_t kv_k = c.num_kv_heads * c.head_dim, kv_v = c.num_kv_heads * c.head_dim_v;
  const auto init = [&rng](size_t n, size_t fan_in) {
    return RandomVector(n, 1.0f / std::sqrt(static_cast<float>(fan_in)), rng);
  };
  OwnedWeights w;
  w.w_q = init(c.d_model * hk, c.d_model);
  w.w_k = init(c.kdim * kv_k, c.kdim);
  w.w_v = init(c.vdim * kv_v, c.vdim);
  w.w_o = init(hv * c.d_model, hv);
  if (c.bias) {
    w.b_q = init(hk, c.d_model);
    w.b_k = init(kv_k, c.kdim);
    w.b_v = init(kv_v, c.vdim);
    w.b_o = init(c.d_model, hv);
  }
  return w;
}

MhaConfig Resolve(const MhaConfig& config) {
  return MultiHeadAttention(config).config();
}

MhaProblem RandomProblem(const MhaConfig& config, size_t batch, size_t tq,
                         size_t tk, std::mt19937& rng) {
  MhaProblem p;
  p.config = Resolve(config);
  p.weights = RandomWeights(p.config, rng);
  p.query = RandomTensor(batch, tq, p.config.d_model, rng);
  p.key = RandomTensor(batch, tk, p.config.kdim, rng);
  p.value = RandomTensor(batch, tk, p.config.vdim, rng);
  return p;
}

std::vector<uint8_t> RandomKeyPadding(size_t batch, size_t tk, double p_real,
                                      std::mt19937& rng) {
  std::bernoulli_distribution real(p_real);
  std::vector<uint8_t> mask(batch * tk);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t j = 0; j < tk; ++j) mask[b * tk + j] = j == 0 || real(rng);
  }
  return mask;
}

std::vector<float> RandomAdditiveMask(size_t n, double p_neg_inf,
                                      std::mt19937& rng) {
  std::bernoulli_distribution neg_inf(p_neg_inf);
  std::vector<float> mask = RandomVector(n, 1.0f, rng);
  for (float& x : mask) {
    if (neg_inf(rng)) x = -std::numeric_limits<float>::infinity();
  }
  return mask;
}

MhaResult RunKernels(const KernelTable& table, const MhaProblem& problem,
                     const MhaOptions& options) {
  MultiHeadAttention mha(problem.config, table);
  mha.SetWeights(problem.weights.View());
  return mha.Forward(problem.query.View(), problem.key.View(),
                     problem.value.View(), options);
}

MhaResult RunReference(const MhaProblem& problem, const MhaOptions& options) {
  return ReferenceAttention(problem.config, problem.weights.View(),
                            problem.query.View(), problem.key.View(),
                            problem.value.View(), options);
}

double ScaledTolerance(std::span<const float> expected, double base) {
  float largest = 1.0f;
  for (float x : expected) largest = std::max(largest, std::fabs(x));
  return base * largest;
}

void ExpectResultNear(const MhaResult& actual, const MhaResult& expected,
                      double base_tolerance) {
  EXPECT_EQ(actual.batch, expected.batch);
  EXPECT_EQ(actual.tq, expected.tq);
  EXPECT_EQ(actual.tk, expected.tk);
  // AllNear treats NaN as the worst difference, so it also rejects NaN.
  EXPECT_TRUE(AllNear(actual.output, expected.output,
                      ScaledTolerance(expected.output, base_tolerance)))
      << "output";
  EXPECT_TRUE(AllNear(actual.attn_weights, expected.attn_weights,
                      base_tolerance))
      << "attn_weights";
  EXPECT_TRUE(AllNear(actual.per_head_output, expected.per_head_output,
                      ScaledTolerance(expected.per_head_output,
                                      base_tolerance)))
      << "per_head_output";
}

}  // namespace simd_attention::testing
