// Native Google Benchmark of every kernel table (each target of each
// backend): the GEMM at a few shapes (gemm/: one weight matrix; gemm4w/:
// four in turn, as in a forward) and whole attention forwards on the
// workloads of the speed issue. Counters report GFLOP/s.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "bench/packed_gemm.h"
#include "bench/random_fill.h"
#include "bench/workloads.h"
#include "dispatch/dispatch.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::bench {
namespace {

// C = A * W, cycling through `weights` packed W (PackedGemm).
void BenchGemm(benchmark::State& state, const KernelTable* t, size_t m,
               size_t k, size_t n, size_t weights) {
  PackedGemm gemm(*t, m, k, n, weights);
  for (auto _ : state) {
    gemm.Run();
    benchmark::DoNotOptimize(gemm.c());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      gemm.Flops(), benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

void BenchAttention(benchmark::State& state, const KernelTable* t,
                    const Workload& w) {
  MhaConfig config;
  config.d_model = w.d_model;
  config.num_heads = w.heads;
  MultiHeadAttention mha(config, *t);
  const size_t d = w.d_model;
  const float s = 1.0f / std::sqrt(float(d));
  const std::vector<float> wq = RandomVector(d * d, s, 1), wk = RandomVector(d * d, s, 2),
                           wv = RandomVector(d * d, s, 3), wo = RandomVector(d * d, s, 4),
                           bias = RandomVector(d, 0.1f, 5);
  mha.SetWeights({wq, wk, wv, wo, bias, bias, bias, bias});
  const std::vector<float> xq = RandomVector(w.tq * d, 1.0f, 6);
  const std::vector<float> xkv = RandomVector(w.tk * d, 1.0f, 7);
  const Tensor3 query{xq, 1, w.tq, d};
  const Tensor3 kv = w.cross ? Tensor3{xkv, 1, w.tk, d} : query;
  MhaOptions options;
  options.causal = w.causal;
  for (auto _ : state) {
    benchmark::DoNotOptimize(mha.Forward(query, kv, kv, options).output.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      WorkloadFlops(w), benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

// A decode step (D1): one new token over w.cache_len cached ones. The
// cache is rolled back each iteration so every step sees the same length.
void BenchDecodeStep(benchmark::State& state, const KernelTable* t,
                     const Workload& w) {
  const size_t d = w.d_model, heads = w.heads, cached = w.cache_len;
  MhaConfig config;
  config.d_model = d;
  config.num_heads = heads;
  MultiHeadAttention mha(config, *t);
  const float s = 1.0f / std::sqrt(float(d));
  const std::vector<float> wq = RandomVector(d * d, s, 1), wk = RandomVector(d * d, s, 2),
                           wv = RandomVector(d * d, s, 3), wo = RandomVector(d * d, s, 4),
                           bias = RandomVector(d, 0.1f, 5);
  mha.SetWeights({wq, wk, wv, wo, bias, bias, bias, bias});
  KVCache cache = mha.CreateKVCache(1, cached + 1);
  const std::vector<float> prompt = RandomVector(cached * d, 1.0f, 6);
  mha.ForwardIncremental(Tensor3{prompt, 1, cached, d}, cache);
  const std::vector<float> token = RandomVector(d, 1.0f, 7);
  for (auto _ : state) {
    cache.Truncate(cached);
    benchmark::DoNotOptimize(
        mha.ForwardIncremental(Tensor3{token, 1, 1, d}, cache).output.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      WorkloadFlops(w), benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

void RegisterAll() {
  // Every projection shape of the workloads, from a few rows (S1) and one
  // row (D1) to 512.
  const std::vector<GemmShape> shapes = ProjectionShapes();
  for (Backend backend : AvailableBackends()) {
    for (const KernelTable& t : KernelTables(backend)) {
      for (const GemmShape& s : shapes) {
        const std::string name = std::string("gemm/") + t.name + "/" + std::to_string(s.m) +
                                 "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
        benchmark::RegisterBenchmark(name.c_str(), BenchGemm, &t, s.m, s.k, s.n, 1);
        benchmark::RegisterBenchmark(("gemm4w" + name.substr(4)).c_str(), BenchGemm, &t, s.m,
                                     s.k, s.n, 4);
      }
      for (const Workload& w : Workloads()) {
        const std::string name = std::string("attention/") + t.name + "/" + w.name;
        if (w.cache_len > 0) {
          benchmark::RegisterBenchmark(name.c_str(), BenchDecodeStep, &t, w);
        } else {
          benchmark::RegisterBenchmark(name.c_str(), BenchAttention, &t, w);
        }
      }
    }
  }
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  simd_attention::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
