// Backend comparison, native and wasm alike: every kernel table (each target
// of each backend) on the same GEMM shapes and attention workloads, measured
// interleaved (table A, B, C, A, B, C, ... for several rounds after a
// warm-up) so that machine noise hits all of them alike. Prints median
// GFLOP/s per table, and with --json FILE writes them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/flags.h"
#include "bench/packed_gemm.h"
#include "bench/random_fill.h"
#include "bench/workloads.h"
#include "dispatch/dispatch.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::bench {
namespace {

struct Case {
  std::string name;
  double flops;
  // Prepares inputs for one table and returns the timed call.
  std::function<std::function<void()>(const KernelTable&)> prepare;
};

Case GemmCase(size_t m, size_t k, size_t n) {
  Case c;
  c.name = "gemm " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
  c.flops = 2.0 * m * k * n;
  c.prepare = [m, k, n](const KernelTable& t) -> std::function<void()> {
    auto gemm = std::make_shared<PackedGemm>(t, m, k, n);
    return [gemm] { gemm->Run(); };
  };
  return c;
}

Case AttentionCase(const Workload& w) {
  Case c;
  c.name = std::string("attention ") + w.name;
  c.flops = WorkloadFlops(w);
  c.prepare = [w](const KernelTable& t) -> std::function<void()> {
    MhaConfig config;
    config.d_model = w.d_model;
    config.num_heads = w.heads;
    auto mha = std::make_shared<MultiHeadAttention>(config, t);
    const size_t d = w.d_model;
    const float s = 1.0f / std::sqrt(float(d));
    const std::vector<float> wq = RandomVector(d * d, s, 1), wk = RandomVector(d * d, s, 2),
                             wv = RandomVector(d * d, s, 3), wo = RandomVector(d * d, s, 4),
                             bias = RandomVector(d, 0.1f, 5);
    mha->SetWeights({wq, wk, wv, wo, bias, bias, bias, bias});
    auto xq = std::make_shared<std::vector<float>>(RandomVector(w.tq * d, 1.0f, 6));
    auto xkv = std::make_shared<std::vector<float>>(RandomVector(w.tk * d, 1.0f, 7));
    return [w, mha, xq, xkv, d] {
      const Tensor3 q{*xq, 1, w.tq, d};
      const Tensor3 kv = w.cross ? Tensor3{*xkv, 1, w.tk, d} : q;
      MhaOptions options;
      options.causal = w.causal;
      mha->Forward(q, kv, kv, options);
    };
  };
  return c;
}

double Seconds(const std::function<void()>& f, int reps) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
         reps;
}

int Main(int argc, char** argv) {
  const Flags flags(argc, argv);
  const char* json_path = flags.Value("--json");
  const int rounds = int(flags.Number("--rounds", 7));
  std::vector<const KernelTable*> tables;
  for (Backend b : AvailableBackends()) {
    for (const KernelTable& t : KernelTables(b)) tables.push_back(&t);
  }
  std::vector<Case> cases = {GemmCase(128, 768, 768), GemmCase(512, 384, 384),
                             GemmCase(10, 512, 512)};
  // Whole forwards; a decode step needs a KV cache (kernels_bench has it).
  for (const Workload& w : Workloads()) {
    if (w.cache_len == 0) cases.push_back(AttentionCase(w));
  }

  FILE* json = json_path ? std::fopen(json_path, "w") : nullptr;
  if (json) std::fprintf(json, "[\n");
  std::printf("%-18s", "GFLOP/s (median)");
  for (const KernelTable* t : tables) std::printf(" %15s", t->name);
  std::printf("\n");
  bool first = true;
  for (const Case& c : cases) {
    std::vector<std::function<void()>> calls;
    for (const KernelTable* t : tables) calls.push_back(c.prepare(*t));
    // Repetitions per sample: about 20 ms on the fastest table.
    std::vector<int> reps(tables.size());
    for (size_t i = 0; i < tables.size(); ++i) {
      calls[i]();  // warm-up
      reps[i] = std::max(1, int(0.02 / std::max(Seconds(calls[i], 1), 1e-7)));
    }
    std::vector<std::vector<double>> samples(tables.size());
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < tables.size(); ++i) {
        samples[i].push_back(Seconds(calls[i], reps[i]));
      }
    }
    std::printf("%-18s", c.name.c_str());
    for (size_t i = 0; i < tables.size(); ++i) {
      std::sort(samples[i].begin(), samples[i].end());
      const double median = samples[i][samples[i].size() / 2];
      std::printf(" %15.2f", c.flops / median * 1e-9);
      if (json) {
        std::fprintf(json, "%s  {\"case\": \"%s\", \"table\": \"%s\", \"median_ms\": %.6f, "
                     "\"gflops\": %.3f}", first ? "" : ",\n", c.name.c_str(), tables[i]->name,
                     median * 1e3, c.flops / median * 1e-9);
        first = false;
      }
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  if (json) {
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
  return 0;
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) { return simd_attention::bench::Main(argc, argv); }
