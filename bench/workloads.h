// The attention workloads of the speed comparison (fp32, batch 1, weights
// [d_model, d_model]) that the native benchmarks run: every entry of
// web/bench-kit/workloads.json but the oursOnly scale test, which
// bench/CMakeLists.txt turns into bench/workloads.inc in the build tree.
#pragma once

#include <cstddef>
#include <vector>

namespace simd_attention::bench {

struct Workload {
  const char* name;
  bool cross;
  size_t d_model, heads, tq, tk;
  // A decode step (cache_len > 0): tq = 1 new token over cache_len cached
  // ones, so tk = cache_len + 1, and only the new token is projected.
  size_t cache_len;
  bool causal;
};

inline const std::vector<Workload>& Workloads() {
  static const std::vector<Workload> w = {
#include "bench/workloads.inc"
  };
  return w;
}

// The formula of workloads.json ("flops"), also implemented by workloadFlops
// in web/bench-kit/workloads.js: 2mnk for the four projections and the two
// attention products (QK^T, PV), as if every score were computed (causal work
// saved shows as more GFLOP/s).
inline double WorkloadFlops(const Workload& w) {
  const double d = double(w.d_model), tq = double(w.tq), tk = double(w.tk);
  const double projected_kv = double(w.tk - w.cache_len);
  return 2 * tq * d * d * 2 + 2 * projected_kv * d * d * 2 + 2 * 2 * tq * tk * d;
}

struct GemmShape {
  size_t m, k, n;
};

// The projection GEMMs of the workloads (M rows of X times a d_model x
// d_model weight matrix: tq rows for Q and the output, the projected key and
// value rows for K and V), each shape once, in the order of Workloads().
inline std::vector<GemmShape> ProjectionShapes() {
  std::vector<GemmShape> shapes;
  auto add = [&shapes](size_t m, size_t d) {
    for (const GemmShape& s : shapes) {
      if (s.m == m && s.k == d) return;
    }
    shapes.push_back({m, d, d});
  };
  for (const Workload& w : Workloads()) {
    add(w.tq, w.d_model);
    add(w.tk - w.cache_len, w.d_model);
  }
  return shapes;
}

}  // namespace simd_attention::bench
