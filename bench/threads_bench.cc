// Our forward on 1 thread against N threads (default 2), natively, every
// workload of web/bench-kit/workloads.json: interleaved rounds (1, N, 1, N,
// ...), medians, the speed-up, and a check that both give the same bits.
//
//   build/native/bench/threads_bench [--threads N] [--rounds R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/random_fill.h"
#include "bench/workload_runner.h"
#include "bench/workloads.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/thread_pool.h"

namespace simd_attention::bench {
namespace {


}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) {
  using namespace simd_attention;
  using namespace simd_attention::bench;
  size_t threads = 2, rounds = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::strtoul(argv[i + 1], nullptr, 10);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::strtoul(argv[i + 1], nullptr, 10);
  }
  std::printf("threads_bench: %s, %zu logical processors; medians of %zu interleaved rounds\n\n",
              CpuName().c_str(), ThreadPool::HardwareThreads(), rounds);
  std::printf("| workload | 1 thread, ms | %zu threads, ms | speed-up | same bits |\n", threads);
  std::printf("|---|---:|---:|---:|---|\n");
  for (const Workload& w : Workloads()) {
    const std::vector<float> weights = RandomVector(w.d_model * w.d_model, 0.05f, 4);
    Runner one(w, {.threads = 1}, weights), many(w, {.threads = threads}, weights);
    const bool same = one.Run() == many.Run();
    // Repeat short workloads so that one sample is ~1 ms or more.
    const size_t reps = std::max<size_t>(1, size_t(2e6 / WorkloadFlops(w) * 50));
    std::vector<double> t1, tn;
    for (size_t r = 0; r < rounds; ++r) {
      for (Runner* runner : {&one, &many}) {
        const auto start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < reps; ++i) runner->Run();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count() / double(reps);
        (runner == &one ? t1 : tn).push_back(ms);
      }
    }
    const double a = Median(t1), b = Median(tn);
    std::printf("| %s | %.3f | %.3f | %.2fx | %s |\n", w.name, a, b, a / b, same ? "yes" : "NO");
  }
}
