// The activations of an int8 or q4 product quantized once, before ParallelGemm
// (threading/parallel.h) splits it by columns: every task would otherwise
// quantize the whole of A for its own columns (S2's 128 x 768 rows 96 times
// on 8-column panels, a decoding step's one row as often).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "dispatch/kernel_table.h"
#include "kernels/int8_gemm.h"
#include "kernels/q4_gemm.h"
#include "training/training_module.h"

namespace simd_attention {

class Int8Activations {
 public:
  // `g` as given, with int8_rows set for int8 and q4 weights (for q4, A
  // padded to whole blocks: Q4ActivationArgs).
  Int8Activations(const KernelTable& kernels, const GemmArgs& g) : args_(g) {
    const WeightType type = HeldType(g.weight_type);
    if ((type != WeightType::kInt8 && type != WeightType::kQ4) || g.m == 0 ||
        kernels.int8_quantize == nullptr) {
      return;
    }
    std::unique_ptr<float[]> padded;
    const GemmArgs a = type == WeightType::kQ4 ? Q4ActivationArgs(g, &padded) : g;
    words_.reset(new int32_t[Int8Words(a.m, kernels.gemm_tile_rows, a.k, a.k_begin)]);
    scales_.reset(new float[a.m]);
    kernels.int8_quantize(a, words_.get(), scales_.get());
    pairs_ = Int8Pairs(a.k, a.k_begin);
    rows_ = {words_.get(), scales_.get()};
    args_.int8_rows = &rows_;
  }
  Int8Activations(const Int8Activations&) = delete;
  Int8Activations& operator=(const Int8Activations&) = delete;

  const GemmArgs& args() const { return args_; }

  // The quantized rows from row0 on, for a task of rows [row0, ...): row0 a
  // multiple of the table's gemm_tile_rows (Int8Words groups rows by tiles).
  Int8Rows RowsFrom(size_t row0) const {
    return {words_.get() + row0 * pairs_, scales_.get() + row0};
  }

 private:
  GemmArgs args_;
  std::unique_ptr<int32_t[]> words_;
  std::unique_ptr<float[]> scales_;
  Int8Rows rows_{};
  size_t pairs_ = 0;
};

}  // namespace simd_attention
