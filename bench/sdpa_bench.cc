// ScaledDotProductAttention on L1's heads (T = 16384 causal, 4 heads of 64,
// batch 1, no projections) with and without a sliding window of 1024 keys
// behind each query: interleaved rounds, medians and the speed-up. The
// window hides ~15/16 of the causal scores, whose key blocks the kernel
// never visits, so the target is >= 6x.
//
//   build/native/bench/sdpa_bench [--tokens T] [--window W] [--rounds R] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/flags.h"
#include "bench/random_fill.h"
#include "bench/timing.h"
#include "simd_attention/scaled_dot_product_attention.h"

namespace simd_attention::bench {
namespace {

int Main(int argc, char** argv) {
  const Flags flags(argc, argv);
  const size_t tokens = flags.Number("--tokens", 16384), window = flags.Number("--window", 1024);
  const size_t rounds = flags.Number("--rounds", 3), threads = flags.Number("--threads", 1);
  const size_t heads = 4, d = 64;
  const std::vector<float> q = RandomVector(heads * tokens * d, 1.0f, 1);
  const std::vector<float> k = RandomVector(heads * tokens * d, 1.0f, 2);
  const std::vector<float> v = RandomVector(heads * tokens * d, 1.0f, 3);
  const HeadsTensor qt{q, 1, heads, tokens, d}, kt{k, 1, heads, tokens, d},
      vt{v, 1, heads, tokens, d};
  ScaledDotProductAttention sdpa({.threads = threads});
  SdpaOptions causal, windowed;
  causal.causal = windowed.causal = CausalAlignment::kBottomRight;
  windowed.window = {static_cast<int64_t>(window), 0};
  std::vector<double> causal_ms, windowed_ms;
  auto time = [&](const SdpaOptions& o) {
    const auto start = std::chrono::steady_clock::now();
    const SdpaResult r = sdpa.Forward(qt, kt, vt, o);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    if (r.output.empty()) std::abort();
    return ms;
  };
  for (size_t round = 0; round < rounds; ++round) {
    causal_ms.push_back(time(causal));
    windowed_ms.push_back(time(windowed));
  }
  // Scores computed: causal keeps T (T + 1) / 2 per head, the window about
  // T (W + 1); 4 FLOPs per score and head dimension (QK^T and PV).
  const double t = double(tokens), w = double(window);
  const double causal_scores = t * (t + 1) / 2, window_scores = t * (w + 1) - w * (w + 1) / 2;
  const double c = Median(causal_ms), s = Median(windowed_ms);
  std::printf("sdpa_bench: %s, %zu thread(s), B=1 H=%zu d=%zu T=%zu, %zu rounds (medians)\n",
              DescribeKernels(sdpa.kernels()).name, threads, heads,
              d, tokens, rounds);
  std::printf("  causal                 %9.1f ms  %6.1f GFLOP/s\n", c,
              4 * causal_scores * d * heads / c / 1e6);
  std::printf("  causal, window [%zu, 0] %9.1f ms  %6.1f GFLOP/s\n", window, s,
              4 * window_scores * d * heads / s / 1e6);
  std::printf("  speed-up %.2fx (scores computed: %.3f of causal)\n", c / s,
              window_scores / causal_scores);
  return 0;
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) { return simd_attention::bench::Main(argc, argv); }
