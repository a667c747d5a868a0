// The worked example: B = 2, T = 10, d_model = 512, 8 heads (d_k = 64)
// through self-attention and cross-attention (T_k = 16), printing each
// stage's shape, an output checksum, how well the per-head contributions
// add up to the output, and the median time per forward. Built natively and
// for wasm (run under node) so the two can be compared.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "bench/random_fill.h"
#include "simd_attention/multi_head_attention.h"
#include "checks/validate.h"

namespace simd_attention::bench {
namespace {

constexpr size_t kBatch = 2, kTokens = 10, kDModel = 512, kHeads = 8;
constexpr size_t kDk = kDModel / kHeads;

void PrintStage(const char* stage, std::initializer_list<size_t> shape) {
  std::printf("  %-34s %s\n", stage, ShapeString(shape).c_str());
}

double MedianMicroseconds(MultiHeadAttention& mha, const Tensor3& q,
                          const Tensor3& kv) {
  std::vector<double> us;
  for (int i = 0; i < 60; ++i) {
    const auto start = std::chrono::steady_clock::now();
    mha.Forward(q, kv, kv);
    us.push_back(std::chrono::duration<double, std::micro>(
                     std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(us.begin() + 10, us.begin() + 35, us.end());  // skip warm-up
  return us[35];
}

void Walk(const char* title, MultiHeadAttention& mha, const Tensor3& x,
          const Tensor3& memory) {
  const size_t tk = memory.tokens;
  std::printf("%s (backend %s)\n", title, DescribeKernels(mha.kernels()).name);
  PrintStage("X (queries)", {kBatch, kTokens, kDModel});
  PrintStage("keys/values source", {kBatch, tk, kDModel});
  PrintStage("Q = X W_Q + b_Q", {kBatch, kTokens, kHeads * kDk});
  PrintStage("K = X_kv W_K + b_K, V likewise", {kBatch, tk, kHeads * kDk});
  PrintStage("Q split into heads", {kBatch, kHeads, kTokens, kDk});
  PrintStage("K, V split into heads", {kBatch, kHeads, tk, kDk});
  PrintStage("scores Q_h K_h^T / sqrt(d_k)", {kBatch, kHeads, kTokens, tk});
  MhaOptions options;
  options.need_weights = true;
  options.need_per_head_output = true;
  const MhaResult r = mha.Forward(x, memory, memory, options);
  PrintStage("softmax (attention weights)", {r.batch, kHeads, r.tq, r.tk});
  PrintStage("head outputs z_h = P_h V_h", {kBatch, kHeads, kTokens, kDk});
  PrintStage("concat(heads)", {kBatch, kTokens, kHeads * kDk});
  PrintStage("output = concat W_O + b_O", {r.batch, r.tq, kDModel});
  PrintStage("per-head contributions z_h W_O^h", {r.batch, kHeads, r.tq, kDModel});

  double checksum = 0;
  for (float v : r.output) checksum += v;
  // output = sum_h per_head_output[h] + b_O: the per-head view adds up.
  double worst = 0;
  for (size_t b = 0; b < kBatch; ++b) {
    for (size_t i = 0; i < kTokens * kDModel; ++i) {
      double sum = 0;
      for (size_t h = 0; h < kHeads; ++h) {
        sum += r.per_head_output[(b * kHeads + h) * kTokens * kDModel + i];
      }
      const double bias = 0.01 * double((i % kDModel) % 7);  // b_O below
      worst = std::max(worst, std::fabs(sum + bias - r.output[b * kTokens * kDModel + i]));
    }
  }
  std::printf("  output checksum %.6f; |sum_h heads + b_O - output| <= %.2e\n",
              checksum, worst);
  std::printf("  median time per forward: %.1f us\n\n", MedianMicroseconds(mha, x, memory));
}

}  // namespace
}  // namespace simd_attention::bench

int main() {
  using namespace simd_attention;
  using namespace simd_attention::bench;
  MhaConfig config;
  config.d_model = kDModel;
  config.num_heads = kHeads;
  MultiHeadAttention mha(config);
  const float s = 1.0f / std::sqrt(float(kDModel));
  const std::vector<float> wq = RandomVector(kDModel * kDModel, s, 1),
                           wk = RandomVector(kDModel * kDModel, s, 2),
                           wv = RandomVector(kDModel * kDModel, s, 3),
                           wo = RandomVector(kDModel * kDModel, s, 4),
                           zero(kDModel, 0.0f);
  std::vector<float> bo(kDModel);
  for (size_t i = 0; i < kDModel; ++i) bo[i] = 0.01f * float(i % 7);
  mha.SetWeights({wq, wk, wv, wo, zero, zero, zero, bo});

  const std::vector<float> x = RandomVector(kBatch * kTokens * kDModel, 1.0f, 5);
  const std::vector<float> memory = RandomVector(kBatch * 16 * kDModel, 1.0f, 6);
  const Tensor3 xt{x, kBatch, kTokens, kDModel};
  Walk("Self-attention, B=2 T=10 d_model=512 heads=8", mha, xt, xt);
  Walk("Cross-attention, Tq=10 attending to Tk=16", mha, xt,
       Tensor3{memory, kBatch, 16, kDModel});
  return 0;
}
