// The attention workloads of the speed issue (fp32, batch 1), shared by the
// native benchmarks and the worked example.
#pragma once

#include <cstddef>
#include <vector>

namespace simd_attention::bench {

struct Workload {
  const char* name;
  bool cross;
  size_t d_model, heads, tq, tk;
  bool causal;
};

inline const std::vector<Workload>& Workloads() {
  static const std::vector<Workload> w = {
      {"S1", false, 512, 8, 10, 10, false},
      {"S2", false, 768, 12, 128, 128, false},
      {"S3", false, 768, 12, 128, 128, true},
      {"S4", false, 384, 6, 512, 512, false},
      {"S4c", false, 384, 6, 512, 512, true},
      {"C1", true, 512, 8, 32, 256, false},
  };
  return w;
}

// 2mnk for the four projections and the two attention products (QK^T, PV),
// as if every score were computed (causal work saved shows as more GFLOP/s).
inline double WorkloadFlops(const Workload& w) {
  const double d = double(w.d_model), tq = double(w.tq), tk = double(w.tk);
  return 2 * tq * d * d * 2 + 2 * tk * d * d * 2 + 2 * 2 * tq * tk * d;
}

}  // namespace simd_attention::bench
