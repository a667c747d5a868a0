// The costs of the attention variants against the plain workloads, one
// thread, interleaved rounds, medians:
//  - grouped-query decode: D1's attention part (one query over 513 cached
//    tokens, 12 heads of 64) reading 12 key/value heads against 2 (a sixth of
//    the cache bytes; target: at most 0.4x);
//  - rotary positions: S2 (768 wide, 12 heads, T = 128) through
//    MultiHeadAttention with and without rope (target: at most +5%).
//
//   build/native/bench/variants_bench [--rounds R]
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench/flags.h"
#include "bench/random_fill.h"
#include "bench/timing.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/scaled_dot_product_attention.h"

namespace simd_attention::bench {
namespace {

int Main(int argc, char** argv) {
  const size_t rounds = Flags(argc, argv).Number("--rounds", 31);

  // D1's attention: q [1, 12, 1, 64] over k, v [1, Hkv, 513, 64], repeated
  // 64 times a sample so that one sample is well above the clock's grain.
  const size_t heads = 12, d = 64, tk = 513, reps = 64;
  const std::vector<float> q = RandomVector(heads * d, 1.0f, 1);
  const std::vector<float> k = RandomVector(heads * tk * d, 1.0f, 2);
  const std::vector<float> v = RandomVector(heads * tk * d, 1.0f, 3);
  ScaledDotProductAttention sdpa;
  SdpaOptions decode;
  decode.causal = CausalAlignment::kBottomRight;
  auto attend = [&](size_t kv_heads) {
    const size_t n = kv_heads * tk * d;
    const HeadsTensor qt{q, 1, heads, 1, d}, kt{{k.data(), n}, 1, kv_heads, tk, d},
        vt{{v.data(), n}, 1, kv_heads, tk, d};
    return Ms([&] {
      for (size_t i = 0; i < reps; ++i) {
        if (sdpa.Forward(qt, kt, vt, decode).output.empty()) std::abort();
      }
    }) / double(reps);
  };

  // S2 through MultiHeadAttention, rope off and on.
  const size_t dm = 768, tokens = 128;
  const std::vector<float> x = RandomVector(tokens * dm, 1.0f, 4);
  const std::vector<float> w = RandomVector(dm * dm, 0.036f, 5), b = RandomVector(dm, 0.036f, 6);
  MhaConfig plain_config{.d_model = dm, .num_heads = heads};
  MhaConfig rope_config = plain_config;
  rope_config.rope.style = RopeStyle::kHalf;
  MultiHeadAttention plain(plain_config), rotary(rope_config);
  for (MultiHeadAttention* m : {&plain, &rotary}) m->SetWeights({w, w, w, w, b, b, b, b});
  const Tensor3 s2{x, 1, tokens, dm};
  auto forward = [&](MultiHeadAttention& m) {
    return Ms([&] {
      if (m.Forward(s2).output.empty()) std::abort();
    });
  };

  std::vector<double> mha_ms, gqa_ms, plain_ms, rope_ms;
  for (size_t round = 0; round < rounds; ++round) {
    mha_ms.push_back(attend(heads));
    gqa_ms.push_back(attend(2));
    plain_ms.push_back(forward(plain));
    rope_ms.push_back(forward(rotary));
  }
  const double m = Median(mha_ms), g = Median(gqa_ms), p = Median(plain_ms),
               r = Median(rope_ms);
  std::printf("variants_bench: %s, 1 thread, %zu rounds (medians)\n",
              DescribeKernels(sdpa.kernels()).name, rounds);
  std::printf("  D1 attention, 12 kv heads  %8.4f ms\n", m);
  std::printf("  D1 attention,  2 kv heads  %8.4f ms  (%.2fx; target <= 0.4x)\n", g, g / m);
  std::printf("  S2 forward                 %8.3f ms\n", p);
  std::printf("  S2 forward with rope       %8.3f ms  (%+.1f%%; target <= +5%%)\n", r,
              100.0 * (r / p - 1.0));
  return 0;
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) { return simd_attention::bench::Main(argc, argv); }
