// The GEMM and attention kernels of every kernel table of a wasm build, and
// a forward against the sum of its parts, timed inside wasm.
// kernels_bench is native only (no Google Benchmark for Emscripten), so this
// is its wasm analogue for the GEMM shapes of the workloads; the roof to
// compare with is fma_peak's "muladd128" (V8 turns f32x4.mul/add into the
// same vmulps/vaddps; wasm SIMD has no fused multiply-add), which the
// script measures before and after. A profiling aid, built on demand by
// bench/js/tools/wasm_gemm.sh against a wasm build tree's library, with
// the workloads of bench/workloads.h (generated into that tree):
//
//   bash bench/js/tools/wasm_gemm.sh        # prints one JSON line per shape
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/packed_gemm.h"
#include "bench/workloads.h"
#include "dispatch/dispatch.h"
#include "simd_attention/multi_head_attention.h"

using namespace simd_attention;
using simd_attention::bench::GemmShape;
using simd_attention::bench::PackedGemm;
using simd_attention::bench::Workload;

namespace {

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// After warm-up, the best of 5 trials of 0.1 s each: seconds per call.
template <class F>
double BestSecondsPerCall(F run) {
  for (int i = 0; i < 3; ++i) run();
  double best = 1e30;
  for (int trial = 0; trial < 5; ++trial) {
    int iters = 0;
    const double t0 = Seconds();
    double el = 0;
    do {
      run();
      ++iters;
      el = Seconds() - t0;
    } while (el < 0.1);
    if (el / iters < best) best = el / iters;
  }
  return best;
}

// weights > 1 rotates through that many matrices B, as a forward does
// (four 2.36 MB matrices do not stay in a 2 MiB L2).
double TimeGemm(const KernelTable& t, size_t m, size_t k, size_t n, size_t weights = 1) {
  PackedGemm gemm(t, m, k, n, weights);
  return gemm.Flops() / BestSecondsPerCall([&] { gemm.Run(); }) / 1e9;
}

// One head's attention over T x T (causal or not), all heads in turn, as in
// a forward: GFLOP/s counts 2 * 2 * tq * tk * d like the table does.
double TimeAttention(const KernelTable& t, size_t tq, size_t tk, size_t heads,
                     size_t dk, bool causal) {
  const size_t d = heads * dk;
  std::vector<float> q(tq * d), kv(tk * d), z(tq * d);
  for (size_t i = 0; i < q.size(); ++i) q[i] = float(i % 11) * 0.01f;
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = float(i % 5) * 0.01f;
  std::vector<float> scratch(t.attention_scratch_floats(dk, dk));
  auto run = [&] {
    for (size_t h = 0; h < heads; ++h) {
      t.attention({.q = q.data() + h * dk, .ldq = d, .k = kv.data() + h * dk, .ldk = d,
                   .v = kv.data() + h * dk, .ldv = d, .tq = tq, .tk = tk, .dk = dk, .dv = dk,
                   .scale = 0.125f, .causal = causal,
                   .causal_diagonal = static_cast<ptrdiff_t>(tk) - static_cast<ptrdiff_t>(tq),
                   .key_valid = nullptr, .additive_mask = nullptr, .mask_ld = 0,
                   .z = z.data() + h * dk, .ldz = d, .probs = nullptr,
                   .scratch = scratch.data()});
    }
  };
  return 4.0 * tq * tk * d / BestSecondsPerCall(run) / 1e9;
}

void ForwardBreakdown(size_t d, size_t heads, size_t t) {
  const KernelTable& kt = KernelTables(Backend::kHighway)[0];
  MultiHeadAttention mha({d, heads}, kt);
  std::vector<float> w(d * d), b(d), x(t * d);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 7) * 0.01f - 0.03f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13) * 0.1f - 0.6f;
  mha.SetWeights({w, w, w, w, b, b, b, b});
  const Tensor3 in{x, 1, t, d};
  for (int round = 0; round < 3; ++round) {
    const double fwd = 1e3 * BestSecondsPerCall([&] { mha.Forward(in); });
    const double g = 1e3 * 2.0 * t * d * d / (TimeGemm(kt, t, d, d, 4) * 1e9);
    const double att = 1e3 * 4.0 * t * t * d / (TimeAttention(kt, t, t, heads, d / heads, false) * 1e9);
    std::printf("T=%zu d=%zu: forward %.2f ms; 4 gemm %.2f ms + attention %.2f ms = %.2f\n", t, d,
                fwd, 4 * g, att, 4 * g + att);
  }
}

}  // namespace

// Usage: wasm_gemm_bench [gemm|attention|forward|all] [table name filter]
int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "all";
  const std::string filter = argc > 2 ? argv[2] : "";
  auto wanted = [&](const KernelTable& t) {
    return std::string(t.name).find(filter) != std::string::npos;
  };
  if (mode == "forward" || mode == "all") {
    // The forwards whose parts are one GEMM shape and one attention shape.
    for (const Workload& w : bench::Workloads()) {
      if (!w.cross && !w.causal && w.cache_len == 0) ForwardBreakdown(w.d_model, w.heads, w.tq);
    }
  }
  const std::vector<GemmShape> shapes = bench::ProjectionShapes();
  std::printf("{\"gemm\": [");
  bool first = true;
  for (Backend backend : AvailableBackends()) {
    for (const KernelTable& t : KernelTables(backend)) {
      if (!wanted(t) || (mode != "gemm" && mode != "all")) continue;
      for (const GemmShape& s : shapes) {
        std::printf("%s{\"table\": \"%s\", \"shape\": \"%zux%zux%zu\", \"gflops\": %.1f}",
                    first ? "" : ", ", t.name, s.m, s.k, s.n, TimeGemm(t, s.m, s.k, s.n));
        first = false;
      }
    }
  }
  std::printf("], \"attention\": [");
  first = true;
  for (Backend backend : AvailableBackends()) {
    for (const KernelTable& t : KernelTables(backend)) {
      if (!wanted(t) || (mode != "attention" && mode != "all")) continue;
      for (const Workload& w : bench::Workloads()) {
        std::printf("%s{\"table\": \"%s\", \"workload\": \"%s\", \"gflops\": %.1f}",
                    first ? "" : ", ", t.name, w.name,
                    TimeAttention(t, w.tq, w.tk, w.heads, w.d_model / w.heads, w.causal));
        first = false;
      }
    }
  }
  std::printf("]}\n");
  return 0;
}
