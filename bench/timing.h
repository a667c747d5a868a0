// Timing helpers of the native benchmarks: one call's wall time and the
// median of a round's samples.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace simd_attention::bench {

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds f() takes.
template <class F>
double Ms(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace simd_attention::bench
