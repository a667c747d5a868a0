// The activations of an int8 product quantized once, before ParallelGemm
// (threading/parallel.h) splits it by columns: every task would otherwise
// quantize the whole of A for its own columns (S2's 128 x 768 rows 96 times
// on 8-column panels, a decoding step's one row as often).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "dispatch/kernel_table.h"
#include "kernels/int8_gemm.h"
#include "training/training_module.h"

namespace simd_attention {

class Int8Activations {
 public:
  // `g` as given, with int8_rows set for int8 weights.
  Int8Activations(const KernelTable& kernels, const GemmArgs& g) : args_(g) {
    if (HeldType(g.weight_type) != WeightType::kInt8 || g.m == 0 ||
        kernels.int8_quantize == nullptr) {
      return;
    }
    words_.reset(new int32_t[Int8Words(g.m, kernels.gemm_tile_rows, g.k, g.k_begin)]);
    scales_.reset(new float[g.m]);
    kernels.int8_quantize(g, words_.get(), scales_.get());
    rows_ = {words_.get(), scales_.get()};
    args_.int8_rows = &rows_;
  }
  Int8Activations(const Int8Activations&) = delete;
  Int8Activations& operator=(const Int8Activations&) = delete;

  const GemmArgs& args() const { return args_; }

 private:
  GemmArgs args_;
  std::unique_ptr<int32_t[]> words_;
  std::unique_ptr<float[]> scales_;
  Int8Rows rows_{};
};

}  // namespace simd_attention
