// Our forward on 1 thread against N threads (default 2), or on each count of
// a list, natively, every workload of web/bench-kit/workloads.json:
// interleaved rounds (1, N, 1, N, ...), medians, the speed-up of the last
// count over the first, and a check that every count gives the first's bits.
//
//   build/native/bench/threads_bench [--threads N | --threads 1,2,4,8] [--rounds R]
//                                    [--workloads S1,D1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/flags.h"
#include "bench/random_fill.h"
#include "bench/workload_runner.h"
#include "bench/workloads.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/thread_pool.h"

int main(int argc, char** argv) {
  using namespace simd_attention;
  using namespace simd_attention::bench;
  const Flags flags(argc, argv);
  std::vector<size_t> counts = {1, 2};
  if (const char* list = flags.Value("--threads")) {
    counts.clear();
    for (char* p = const_cast<char*>(list); *p != 0; p += *p == ',') {
      counts.push_back(std::strtoul(p, &p, 10));
    }
    if (counts.size() == 1 && counts[0] != 1) counts.insert(counts.begin(), 1);
  }
  const std::string only =
      flags.Has("--workloads") ? "," + flags.Text("--workloads") + "," : std::string();
  const size_t rounds = flags.Number("--rounds", 21);
  std::printf("threads_bench: %s, %zu logical processors; medians of %zu interleaved rounds\n\n",
              CpuName().c_str(), ThreadPool::HardwareThreads(), rounds);
  std::printf("| workload |");
  for (size_t n : counts) std::printf(" %zu thread%s, ms |", n, n == 1 ? "" : "s");
  std::printf(" speed-up | same bits |\n|---|");
  for (size_t i = 0; i < counts.size(); ++i) std::printf("---:|");
  std::printf("---:|---|\n");
  for (const Workload& w : Workloads()) {
    if (!only.empty() && only.find("," + std::string(w.name) + ",") == std::string::npos) continue;
    const std::vector<float> weights = RandomVector(w.d_model * w.d_model, 0.05f, 4);
    std::vector<std::unique_ptr<Runner>> runners;
    for (size_t n : counts) {
      runners.push_back(std::make_unique<Runner>(w, MhaConfig{.threads = n}, weights));
    }
    bool same = true;
    const auto first = runners[0]->Run();
    for (auto& r : runners) same = same && r->Run() == first;
    // Repeat short workloads so that one sample is ~1 ms or more.
    const size_t reps = std::max<size_t>(1, size_t(2e6 / WorkloadFlops(w) * 50));
    std::vector<std::vector<double>> times(counts.size());
    for (size_t r = 0; r < rounds; ++r) {
      for (size_t k = 0; k < counts.size(); ++k) {
        const size_t i = (k + r) % counts.size();  // each count first in turn
        const auto start = std::chrono::steady_clock::now();
        for (size_t j = 0; j < reps; ++j) runners[i]->Run();
        times[i].push_back(std::chrono::duration<double, std::milli>(
                               std::chrono::steady_clock::now() - start).count() / double(reps));
      }
    }
    std::printf("| %s |", w.name);
    for (auto& t : times) std::printf(" %.3f |", Median(t));
    std::printf(" %.2fx | %s |\n", Median(times.front()) / Median(times.back()),
                same ? "yes" : "NO");
  }
}
