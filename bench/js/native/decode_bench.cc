// D1 (a decode step: one new token over a KV cache) through the C++ API's
// KV cache (MultiHeadAttention::ForwardIncremental), which the JS package
// does not expose yet. Built natively and with Emscripten by
// bench/js/tools/decode_bench.sh; prints the median time per step of each
// backend's best kernels and the output, for a comparison with the peers' D1
// in `npm run bench`. Its shape, weights and inputs are the ones the JS side
// uses: bench/js/decode_preview.js writes them into DATA_DIR (the shape as
// "d_model heads cached_tokens" in DATA_DIR/shape, from
// web/bench-kit/workloads.json).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/raw_floats.h"
#include "dispatch/dispatch.h"
#include "simd_attention/multi_head_attention.h"

using namespace simd_attention;
using simd_attention::bench::ReadFloats;

namespace {

double Now() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: decode_bench DATA_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  size_t d = 0, heads = 0, cache = 0;
  {
    std::ifstream f(dir + "/shape");
    if (!(f >> d >> heads >> cache) || d == 0 || heads == 0 || cache == 0) {
      std::fprintf(stderr, "cannot read d_model, heads, cached tokens from %s/shape\n", dir.c_str());
      return 1;
    }
  }
  const auto wq = ReadFloats(dir + "/wq", d * d), wk = ReadFloats(dir + "/wk", d * d),
             wv = ReadFloats(dir + "/wv", d * d), wo = ReadFloats(dir + "/wo", d * d),
             bq = ReadFloats(dir + "/bq", d), bk = ReadFloats(dir + "/bk", d),
             bv = ReadFloats(dir + "/bv", d), bo = ReadFloats(dir + "/bo", d),
             xpast = ReadFloats(dir + "/xpast", cache * d), xq = ReadFloats(dir + "/xq", d);
  std::printf("[");
  bool first = true;
  for (Backend backend : AvailableBackends()) {
    const KernelTable& t = BestKernels(backend);
    MhaConfig config;
    config.d_model = d;
    config.num_heads = heads;
    config.backend = backend;
    MultiHeadAttention mha(config, t);
    mha.SetWeights({wq, wk, wv, wo, bq, bk, bv, bo});
    KVCache kv = mha.CreateKVCache(1, cache + 1);
    mha.ForwardIncremental(Tensor3{xpast, 1, cache, d}, kv);  // prefill
    std::vector<double> times;
    MhaResult r;
    const double t_end = Now() + 2000;
    while (Now() < t_end || times.size() < 20) {
      const double t0 = Now();
      r = mha.ForwardIncremental(Tensor3{xq, 1, 1, d}, kv);
      times.push_back(Now() - t0);
      kv.Truncate(cache);
    }
    std::sort(times.begin(), times.end());
    std::printf("%s{\"table\": \"%s\", \"median_ms\": %.4f, \"p25_ms\": %.4f, \"p75_ms\": %.4f, "
                "\"n\": %zu, \"out0\": %.7f, \"out1\": %.7f}",
                first ? "" : ", ", t.name, times[times.size() / 2], times[times.size() / 4],
                times[times.size() * 3 / 4], times.size(), r.output[0], r.output[1]);
    first = false;
  }
  std::printf("]\n");
  return 0;
}
