// The GEMM as the benchmarks time it: C [m, n] = A [m, k] times B [k, n]
// through one kernel table, B packed once in the table's panel layout, no
// bias. With several weight matrices each Run() multiplies by the next, as a
// forward's four projections do: at 768 x 768 (2.36 MB each) they come from
// L3, where one matrix multiplied again and again partly stays in L2.
#pragma once

#include <cstddef>
#include <vector>

#include "bench/random_fill.h"
#include "dispatch/dispatch.h"

namespace simd_attention::bench {

class PackedGemm {
 public:
  PackedGemm(const KernelTable& table, size_t m, size_t k, size_t n, size_t weights = 1)
      : table_(table), m_(m), k_(k), n_(n), a_(RandomVector(m * k, 1.0f, 1)), c_(m * n) {
    for (size_t i = 0; i < weights; ++i) {
      const std::vector<float> w = RandomVector(k * n, 1.0f, static_cast<unsigned>(2 + i));
      packed_.emplace_back(PackedFloats(table, k, n));
      table.pack_b(w.data(), k, n, packed_.back().data());
    }
  }

  // C = A times the next weight matrix.
  void Run() {
    table_.gemm({.a = a_.data(),
                 .lda = k_,
                 .m = m_,
                 .k = k_,
                 .packed_b = packed_[next_].data(),
                 .packed_rows = k_,
                 .k_begin = 0,
                 .n = n_,
                 .packed_bias = nullptr,
                 .c = c_.data(),
                 .ldc = n_});
    next_ = (next_ + 1) % packed_.size();
  }

  double Flops() const { return 2.0 * double(m_) * double(n_) * double(k_); }
  const float* c() const { return c_.data(); }

 private:
  const KernelTable& table_;
  size_t m_, k_, n_;
  std::vector<float> a_, c_;
  std::vector<std::vector<float>> packed_;
  size_t next_ = 0;
};

}  // namespace simd_attention::bench
