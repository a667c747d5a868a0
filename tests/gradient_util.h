// Helpers of the backward tests: the float32 error bound of a gradient and
// the largest magnitude; test_util.h's AllNear compares against a float64
// reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "simd_attention/multi_head_attention.h"

namespace simd_attention::testing {

// How far float32 may land from the exact gradient. Each element is a chain
// of sums of products: a float32 sum of n terms is off by at most n u (u =
// 2^-24) times the sum of its terms' magnitudes, and a stage's error
// carries into the next in proportion. With chain_length the total length
// of the reductions along the longest chain, inputs in [-1, 1] and weights
// of +-1/sqrt(fan_in), the sums of magnitudes stay within a few times the
// largest |gradient| (softmax's terms are positive and sum to 1; the rest
// have mixed signs), so the bound is 8 n u max(1, max|G|), 8 covering those
// few times and the exponential's 1.6e-7 relative error, which enters P once.
inline double FloatBound(size_t chain_length, double max_abs) {
  return 8.0 * double(chain_length) * std::ldexp(1.0, -24) * std::max(1.0, max_abs);
}

// The longest chain of an attention's backward: dX = ((dY Wo^T -> dP -> dS
// -> dQ) Wq^T) and dW = X^T dQ, whose reductions run over d_model (dZ), d_v
// (dP), Tk (dQ), H d_k (dX) and B Tq (dW).
inline size_t MhaChainLength(const MhaConfig& c, size_t batch, size_t tq, size_t tk) {
  return c.d_model + c.head_dim_v + std::max(tq, tk) + c.num_heads * c.head_dim +
         std::max(c.kdim, c.vdim) + batch * std::max(tq, tk);
}

template <class T>
double MaxAbs(const std::vector<T>& v) {
  double m = 0;
  for (T x : v) m = std::max(m, std::fabs(double(x)));
  return m;
}

inline std::vector<double> ToDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// sum(output * d_output): the scalar whose gradients a backward given
// d_output computes.
inline double Dot(const std::vector<double>& output, const std::vector<float>& d_output) {
  double s = 0;
  for (size_t i = 0; i < output.size(); ++i) s += output[i] * d_output[i];
  return s;
}

// A float64 reference's gradient of loss() against central differences, at
// every stride-th element of `values` (moved and put back in place).
template <class Loss>
void ExpectCentralDifferences(const std::string& name, std::vector<double>& values,
                              const std::vector<double>& gradient, size_t stride, Loss&& loss) {
  ASSERT_EQ(values.size(), gradient.size()) << name;
  for (size_t i = 0; i < values.size(); i += stride) {
    const double h = 1e-5, keep = values[i];
    values[i] = keep + h;
    const double up = loss();
    values[i] = keep - h;
    const double down = loss();
    values[i] = keep;
    EXPECT_NEAR((up - down) / (2 * h), gradient[i], 1e-6 * std::max(1.0, std::fabs(gradient[i])))
        << name << "[" << i << "]";
  }
}

// The names of `cases` (each with a `name`), as a parameterized test takes
// them, and the case of a name.
template <class Cases>
std::vector<std::string> CaseNamesOf(const Cases& cases) {
  std::vector<std::string> names;
  for (const auto& c : cases) names.push_back(c.name);
  return names;
}

template <class Cases>
auto CaseNamed(const Cases& cases, const std::string& name) {
  for (const auto& c : cases) {
    if (name == c.name) return c;
  }
  throw std::runtime_error("no case " + name);
}

// A case made small for central differences: one batch item of `tokens`
// tokens, and 4 memory tokens where it has a memory.
template <class Case>
Case SmallCase(Case c, size_t tokens) {
  c.batch = 1;
  c.tokens = tokens;
  if constexpr (requires { c.memory_tokens; }) {
    if (c.memory_tokens != 0) c.memory_tokens = 4;
  }
  return c;
}

// The inputs of a problem in double, p.doubles: the shape of its case p.c,
// its x and, where it has one, its memory.
template <class Problem>
void SetDoubleInputs(Problem& p) {
  auto& q = p.doubles;
  q.batch = p.c.batch;
  q.tokens = p.c.tokens;
  q.x = ToDouble(p.x.data);
  if constexpr (requires { q.memory; }) {
    q.memory_tokens = p.c.memory_tokens;
    q.memory = ToDouble(p.memory.data);
  }
}

// The suite of each backward test's check of its float64 reference against
// central differences, by case name.
class ReferenceGradients : public ::testing::TestWithParam<std::string> {};

// A float64 reference's gradients of sum(output * d_output) against central
// differences on the problem `p` (its weights and inputs in double,
// p.doubles, and its d_output), `reference(p, with_gradients)` computing
// them: the input's, then what `parameters(check, p.doubles, gradients)`
// samples of the rest, check(name, values, gradient, stride) as
// ExpectCentralDifferences.
template <class Problem, class Reference, class Parameters>
void ExpectReferenceGradients(Problem& p, const Reference& reference,
                              const Parameters& parameters) {
  const auto e = reference(p, true);
  const auto loss = [&] { return Dot(reference(p, false).output, p.d_output); };
  const auto check = [&](const std::string& name, std::vector<double>& values,
                         const std::vector<double>& gradient, size_t stride) {
    ExpectCentralDifferences(name, values, gradient, stride, loss);
  };
  check("x", p.doubles.x, e.d_input, 1);
  parameters(check, p.doubles, e);
}

}  // namespace simd_attention::testing
