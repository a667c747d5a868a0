// Our forward with its weights held as float32, float16, bfloat16, int8 and
// q4 (MhaConfig::weights), and on D1 also with a float16 or bfloat16 KV cache
// beside weights of that type, or a float16 or int8 one beside q4 weights, or
// an int8 one beside float32 weights (MhaConfig::cache_type), natively and in wasm
// (node), on the workloads S1, S2, C1 and D1 of
// web/bench-kit/workloads.json: interleaved rounds (f32, f16, bf16, int8,
// f32, ...), medians, the speed against float32, the bytes of weights
// held, and the largest difference from the float32 output.
//
//   build/native/bench/weight_types_bench [--rounds R] [--threads N] [--data DIR]
//   node build/wasm/bench/weight_types_bench.js [--rounds R]
//
// --data DIR (how `npm run bench` runs it, bench/js/storage.js): the
// workloads with a folder DIR/<workload>/, their weights and inputs from it (raw float32
// files wq, wk, wv, wo, bq, bk, bv, bo, xq, and xkv or xpast, as the JS side
// makes them), its outputs go to DIR/<workload>/out-<type> before timing,
// and the table is also written as DIR/results.json.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/flags.h"
#include "bench/random_fill.h"
#include "bench/raw_floats.h"
#include "bench/workload_runner.h"
#include "bench/workloads.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::bench {
namespace {

struct Type {
  WeightType weights, cache;
  const char* name;
};
constexpr Type kTypes[] = {{WeightType::kF32, WeightType::kF32, "f32"},
                           {WeightType::kF16, WeightType::kF32, "f16"},
                           {WeightType::kBF16, WeightType::kF32, "bf16"},
                           {WeightType::kInt8, WeightType::kF32, "int8"},
                           {WeightType::kQ4, WeightType::kF32, "q4"},
                           {WeightType::kQ4, WeightType::kF16, "q4+f16cache"},
                           {WeightType::kQ4, WeightType::kInt8, "q4+int8cache"},
                           {WeightType::kF32, WeightType::kInt8, "f32+int8cache"},
                           {WeightType::kF16, WeightType::kF16, "f16+cache"},
                           {WeightType::kBF16, WeightType::kBF16, "bf16+cache"}};

WorkloadData ReadData(const Workload& w, const std::string& dir) {
  const size_t d = w.d_model;
  WorkloadData data;
  for (const char* m : {"wq", "wk", "wv", "wo"}) data.weights.push_back(ReadFloats(dir + m, d * d));
  for (const char* b : {"bq", "bk", "bv", "bo"}) data.weights.push_back(ReadFloats(dir + b, d));
  data.x = ReadFloats(dir + "xq", w.tq * d);
  if (w.cross) data.memory = ReadFloats(dir + "xkv", w.tk * d);
  if (w.cache_len > 0) data.prompt = ReadFloats(dir + "xpast", w.cache_len * d);
  return data;
}

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

int Main(int argc, char** argv) {
  const Flags flags(argc, argv);
  const int rounds = int(flags.Number("--rounds", 9));
  const size_t threads = flags.Number("--threads", 1);
  const std::string data_dir = flags.Has("--data") ? flags.Text("--data") + "/" : "";
  std::string json = "[";
#if defined(__EMSCRIPTEN__)
  const std::string where = "wasm (node)";
#else
  const std::string where = CpuName();
#endif
  std::printf("Weight storage types, %s, %zu thread(s), %d interleaved rounds, medians\n",
              where.c_str(), threads, rounds);
  std::printf("%-4s %-13s %10s %8s %10s %12s\n", "", "type", "ms", "speed", "weights MB",
              "max |diff|");
  for (const char* name : {"S1", "S2", "C1", "D1"}) {
    const Workload* w = nullptr;
    for (const Workload& x : Workloads()) {
      if (std::string(x.name) == name) w = &x;
    }
    if (w == nullptr) continue;
    const std::string dir = data_dir.empty() ? "" : data_dir + name + "/";
    if (!dir.empty() && !std::filesystem::exists(dir)) continue;  // not asked for
    const WorkloadData data =
        dir.empty() ? RandomData(*w, RandomVector(w->d_model * w->d_model,
                                                  1.0f / std::sqrt(float(w->d_model)), 9))
                    : ReadData(*w, dir);
    std::vector<std::unique_ptr<Runner>> runners;
    std::vector<const Type*> types;
    for (const Type& t : kTypes) {
      if (t.cache != WeightType::kF32 && w->cache_len == 0) continue;  // no cache to hold
      types.push_back(&t);
      runners.push_back(std::make_unique<Runner>(
          *w, MhaConfig{.threads = threads, .weights = t.weights, .cache_type = t.cache}, data));
    }
    // The outputs, before timing (run.js checks them against float32's).
    std::vector<std::vector<float>> outputs;
    for (size_t i = 0; i < runners.size(); ++i) {
      outputs.push_back(runners[i]->Run());
      if (!dir.empty()) WriteFloats(dir + "out-" + types[i]->name, outputs[i]);
    }
    // Repetitions per sample: about 20 ms of the float32 forward.
    const int reps = std::max(1, int(0.02 / std::max(SecondsPerRun(*runners[0], 1), 1e-7)));
    std::vector<std::vector<double>> samples(runners.size());
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < runners.size(); ++i) {
        samples[i].push_back(SecondsPerRun(*runners[i], reps));
      }
    }
    const double f32 = Median(samples[0]);
    for (size_t i = 0; i < runners.size(); ++i) {
      const double t = Median(samples[i]);
      const double diff = MaxAbsDiff(outputs[i], outputs[0]);
      std::printf("%-4s %-13s %10.3f %7.2fx %10.2f %12.3g\n", name, types[i]->name, t * 1e3,
                  f32 / t, double(runners[i]->mha->WeightBytes()) / 1e6, diff);
      char row[256];
      std::snprintf(row, sizeof row,
                    "%s{\"workload\": \"%s\", \"type\": \"%s\", \"ms\": %.5f, "
                    "\"weightBytes\": %zu, \"maxAbsDiff\": %.4g}",
                    json.size() > 1 ? ", " : "", name, types[i]->name, t * 1e3,
                    runners[i]->mha->WeightBytes(), diff);
      json += row;
    }
    std::fflush(stdout);
  }
  if (!data_dir.empty()) std::ofstream(data_dir + "results.json") << json << "]\n";
  return 0;
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) { return simd_attention::bench::Main(argc, argv); }
