// A mixture of experts' routing in double, as MixtralSparseMoeBlock routes:
// the softmax of each row's logits over every expert, its top k (a tie to
// the lower index) in expert order, their weights the probabilities (divided
// by their sum when normalized). What the block's forward and backward
// references share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace simd_attention {

struct MoeRouting64 {
  std::vector<double> probabilities;  // [rows, E]
  std::vector<size_t> chosen;         // [rows, k], each row's in expert order
  std::vector<double> weights;        // [rows, k]
};

inline MoeRouting64 RouteMoe64(const std::vector<double>& logits, size_t rows, size_t experts,
                               size_t k, bool normalize) {
  MoeRouting64 r{logits, std::vector<size_t>(rows * k), std::vector<double>(rows * k)};
  for (size_t row = 0; row < rows; ++row) {
    double* p = &r.probabilities[row * experts];
    const double top = *std::max_element(p, p + experts);
    double sum = 0;
    for (size_t e = 0; e < experts; ++e) sum += p[e] = std::exp(p[e] - top);
    for (size_t e = 0; e < experts; ++e) p[e] /= sum;
    std::vector<size_t> order(experts);
    for (size_t e = 0; e < experts; ++e) order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
    std::sort(order.begin(), order.begin() + k);
    double chosen = 0;
    for (size_t j = 0; j < k; ++j) chosen += p[order[j]];
    for (size_t j = 0; j < k; ++j) {
      r.chosen[row * k + j] = order[j];
      r.weights[row * k + j] = p[order[j]] / (normalize ? chosen : 1.0);
    }
  }
  return r;
}

}  // namespace simd_attention
