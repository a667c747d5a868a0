// Deterministic pseudo-random data for benchmarks and the example.
#pragma once

#include <random>
#include <vector>

namespace simd_attention::bench {

inline std::vector<float> RandomVector(size_t n, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace simd_attention::bench
