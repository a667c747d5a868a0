// The GEMM of every kernel table of a wasm build, timed inside wasm.
// kernels_bench is native only (no Google Benchmark for Emscripten), so this
// is its wasm analogue for the GEMM shapes of the workloads; the roof to
// compare with is fma_peak's "muladd128" (V8 turns f32x4.mul/add into the
// same vmulps/vaddps; wasm SIMD has no fused multiply-add), which the
// script measures before and after. A profiling aid, built on demand by
// bench/js/tools/wasm_gemm.sh against a wasm build tree's library:
//
//   bash bench/js/tools/wasm_gemm.sh        # prints one JSON line per shape
#include <chrono>
#include <cstdio>
#include <vector>

#include "dispatch/dispatch.h"

using namespace simd_attention;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double TimeGemm(const KernelTable& t, size_t m, size_t k, size_t n) {
  std::vector<float> a(m * k), w(k * n), c(m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 13) * 0.01f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 7) * 0.01f;
  std::vector<float> packed(PackedFloats(t, k, n));
  t.pack_b(w.data(), k, n, packed.data());
  const GemmArgs g{a.data(), k, m, k, packed.data(), k, 0, n, nullptr, c.data(), n};
  for (int i = 0; i < 3; ++i) t.gemm(g);
  double best = 1e30;
  for (int trial = 0; trial < 5; ++trial) {
    int iters = 0;
    const double t0 = Seconds();
    double el = 0;
    do {
      t.gemm(g);
      ++iters;
      el = Seconds() - t0;
    } while (el < 0.1);
    if (el / iters < best) best = el / iters;
  }
  return 2.0 * m * n * k / best / 1e9;
}

}  // namespace

int main() {
  struct Shape {
    size_t m, k, n;
  };
  const Shape shapes[] = {{128, 768, 768}, {512, 384, 384}, {10, 512, 512}, {256, 512, 512}};
  std::printf("{\"gemm\": [");
  bool first = true;
  for (Backend backend : AvailableBackends()) {
    for (const KernelTable& t : KernelTables(backend)) {
      for (const Shape& s : shapes) {
        std::printf("%s{\"table\": \"%s\", \"shape\": \"%zux%zux%zu\", \"gflops\": %.1f}",
                    first ? "" : ", ", t.name, s.m, s.k, s.n, TimeGemm(t, s.m, s.k, s.n));
        first = false;
      }
    }
  }
  std::printf("]}\n");
  return 0;
}
