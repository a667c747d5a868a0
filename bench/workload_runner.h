// One workload of web/bench-kit/workloads.json as the native benchmarks
// run it (threads_bench, weight_types_bench), and what they print with it.
#pragma once

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/random_fill.h"
#include "bench/timing.h"
#include "bench/workloads.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::bench {

inline std::string CpuName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

// A workload's weights (W_Q, W_K, W_V, W_O, then their biases) and inputs:
// the query rows x [tq, d_model], the memory [tk, d_model] of
// cross-attention and the prompt [cache_len, d_model] a decode step's cache
// is filled from.
struct WorkloadData {
  std::vector<std::vector<float>> weights;
  std::vector<float> x, memory, prompt;
};

// Deterministic random inputs, `weights` for all four projections, biases
// 0.01.
inline WorkloadData RandomData(const Workload& w, const std::vector<float>& weights) {
  const std::vector<float> bias(w.d_model, 0.01f);
  return {{weights, weights, weights, weights, bias, bias, bias, bias},
          RandomVector(w.tq * w.d_model, 1.0f, 1),
          RandomVector(w.tk * w.d_model, 1.0f, 2),
          RandomVector(w.cache_len * w.d_model, 1.0f, 3)};
}

// One forward of the workload on `mha` (a decode step appends one token to a
// cache of cache_len tokens, then rolls back).
struct Runner {
  const Workload& w;
  std::unique_ptr<MultiHeadAttention> mha;
  std::vector<float> x, memory;
  std::unique_ptr<KVCache> cache;

  // `config`'s threads and storage types; its d_model and heads the workload's.
  Runner(const Workload& workload, MhaConfig c, const WorkloadData& data)
      : w(workload), x(data.x), memory(data.memory) {
    c.d_model = w.d_model;
    c.num_heads = w.heads;
    mha = std::make_unique<MultiHeadAttention>(c);
    const auto& p = data.weights;
    mha->SetWeights({p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]});
    if (w.cache_len > 0) {
      cache = std::make_unique<KVCache>(mha->CreateKVCache(1, w.tk));
      mha->ForwardIncremental(Tensor3{data.prompt, 1, w.cache_len, w.d_model}, *cache);
    }
  }
  Runner(const Workload& workload, MhaConfig c, const std::vector<float>& weights)
      : Runner(workload, c, RandomData(workload, weights)) {}

  std::vector<float> Run() {
    MhaOptions o;
    o.causal = w.causal;
    const Tensor3 q{x, 1, w.tq, w.d_model};
    if (cache) {
      std::vector<float> out = mha->ForwardIncremental(q, *cache).output;
      cache->Truncate(w.cache_len);
      return out;
    }
    if (w.cross) {
      const Tensor3 m{memory, 1, w.tk, w.d_model};
      return mha->Forward(q, m, m, o).output;
    }
    return mha->Forward(q, o).output;
  }
};

}  // namespace simd_attention::bench
