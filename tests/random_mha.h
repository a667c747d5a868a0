// Random multi-head-attention problems for the property, sweep and error
// tests: weights, inputs and masks drawn from a seeded std::mt19937 and owned
// here, with views in the shapes the public API takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "dispatch/kernel_table.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::testing {

// n values uniform in [-scale, scale].
std::vector<float> RandomVector(size_t n, float scale, std::mt19937& rng);

// A [batch, tokens, features] tensor that owns its data.
struct OwnedTensor {
  size_t batch = 0, tokens = 0, features = 0;
  std::vector<float> data;

  Tensor3 View() const { return {data, batch, tokens, features}; }
};

// Entries uniform in [-1, 1].
OwnedTensor RandomTensor(size_t batch, size_t tokens, size_t features,
                         std::mt19937& rng);

// Weights that own their storage; the biases are empty when !config.bias.
struct OwnedWeights {
  std::vector<float> w_q, w_k, w_v, w_o;
  std::vector<float> b_q, b_k, b_v, b_o;

  MhaWeights View() const;
};

// Every matrix and bias uniform in +-1/sqrt(fan_in), like torch's default
// init, so projections and outputs stay O(1) and a fixed absolute tolerance
// fits every size. `config` must be resolved.
OwnedWeights RandomWeights(const MhaConfig& config, std::mt19937& rng);

// `config` with kdim, vdim and head_dim_v defaults filled in, as the
// reference needs it.
MhaConfig Resolve(const MhaConfig& config);

// One whole problem: resolved config, weights and the three inputs.
struct MhaProblem {
  MhaConfig config;
  OwnedWeights weights;
  OwnedTensor query, key, value;
};

// Cross-attention with `tq` queries and `tk` keys/values per batch item.
MhaProblem RandomProblem(const MhaConfig& config, size_t batch, size_t tq,
                         size_t tk, std::mt19937& rng);

// [batch, tk] key padding: each key real with probability p_real; key 0 is
// always real, so every query row, even under a causal mask with Tq <= Tk,
// sees at least one real key.
std::vector<uint8_t> RandomKeyPadding(size_t batch, size_t tk, double p_real,
                                      std::mt19937& rng);

// n additive-mask entries uniform in [-1, 1], each -inf with probability
// p_neg_inf.
std::vector<float> RandomAdditiveMask(size_t n, double p_neg_inf,
                                      std::mt19937& rng);

// The problem through the kernels of `table` / through the reference.
MhaResult RunKernels(const KernelTable& table, const MhaProblem& problem,
                     const MhaOptions& options);
MhaResult RunReference(const MhaProblem& problem, const MhaOptions& options);

// `base` for values of magnitude <= 1, growing with the largest |expected|
// beyond that: float error is relative.
double ScaledTolerance(std::span<const float> expected, double base);

// Output, attention weights and per-head outputs of `actual` within
// ScaledTolerance(expected, base_tolerance) of `expected`, and no NaN.
void ExpectResultNear(const MhaResult& actual, const MhaResult& expected,
                      double base_tolerance);

}  // namespace simd_attention::testing
