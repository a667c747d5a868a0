// Our forward with its weights held as float32, float16, bfloat16 and int8
// (MhaConfig::weights), natively and in wasm (node), on the workloads S1,
// S2, C1 and D1 of web/bench-kit/workloads.json: interleaved rounds (f32,
// f16, bf16, int8, f32, ...), medians, the speed against float32, the bytes
// of weights held, and the largest difference from the float32 output.
//
//   build/native/bench/weight_types_bench [--rounds R] [--threads N]
//   node build/wasm/bench/weight_types_bench.js [--rounds R]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/random_fill.h"
#include "bench/workload_runner.h"
#include "bench/workloads.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::bench {
namespace {

struct Type {
  WeightType type;
  const char* name;
};
constexpr Type kTypes[] = {{WeightType::kF32, "f32"},
                           {WeightType::kF16, "f16"},
                           {WeightType::kBF16, "bf16"},
                           {WeightType::kInt8, "int8"}};

double SecondsPerRun(Runner& r, int reps) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) r.Run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) {
  using namespace simd_attention;
  using namespace simd_attention::bench;
  int rounds = 9;
  size_t threads = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::strtoul(argv[++i], nullptr, 10);
  }
#if defined(__EMSCRIPTEN__)
  const std::string where = "wasm (node)";
#else
  const std::string where = CpuName();
#endif
  std::printf("Weight storage types, %s, %zu thread(s), %d interleaved rounds, medians\n",
              where.c_str(), threads, rounds);
  std::printf("%-4s %-5s %10s %8s %10s %12s\n", "", "type", "ms", "speed", "weights MB",
              "max |diff|");
  for (const char* name : {"S1", "S2", "C1", "D1"}) {
    const Workload* w = nullptr;
    for (const Workload& x : Workloads()) {
      if (std::string(x.name) == name) w = &x;
    }
    if (w == nullptr) continue;
    const std::vector<float> weights =
        RandomVector(w->d_model * w->d_model, 1.0f / std::sqrt(float(w->d_model)), 9);
    std::vector<std::unique_ptr<Runner>> runners;
    for (const Type& t : kTypes) {
      runners.push_back(std::make_unique<Runner>(
          *w, MhaConfig{.threads = threads, .weights = t.type}, weights));
    }
    // Repetitions per sample: about 20 ms of the float32 forward.
    runners[0]->Run();
    const int reps = std::max(1, int(0.02 / std::max(SecondsPerRun(*runners[0], 1), 1e-7)));
    std::vector<std::vector<double>> samples(runners.size());
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < runners.size(); ++i) {
        samples[i].push_back(SecondsPerRun(*runners[i], reps));
      }
    }
    const std::vector<float> want = runners[0]->Run();
    const double f32 = Median(samples[0]);
    for (size_t i = 0; i < runners.size(); ++i) {
      const double t = Median(samples[i]);
      std::printf("%-4s %-5s %10.3f %7.2fx %10.2f %12.3g\n", name, kTypes[i].name, t * 1e3,
                  f32 / t, double(runners[i]->mha->WeightBytes()) / 1e6,
                  MaxAbsDiff(runners[i]->Run(), want));
    }
    std::fflush(stdout);
  }
  return 0;
}
