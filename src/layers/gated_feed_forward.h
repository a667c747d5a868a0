// A gated FFN, (act(x W_gate + b_gate) * (x W_up + b_up)) W_down + b_down
// (SwiGLU with SiLU, GeGLU with GELU): W_gate and W_up packed side by side
// as one [d_model, 2 * ffn_dim] matrix, so one GEMM reads x once for both
// (a checkpoint's fused gate_up_proj is the same matrix), then the gated
// product in one kernel pass, then W_down.
#pragma once

#include <cstddef>
#include <memory>

#include "dispatch/dispatch.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_block.h"

namespace simd_attention {

class GatedFeedForward {
 public:
  GatedFeedForward(size_t d_model, size_t ffn_dim, Activation activation,
                   const KernelTable& kernels, std::shared_ptr<ThreadPool> pool,
                   WeightType weights);
  // Biases may be empty (zero). Messages name gated_ffn.<weight>.
  void SetWeights(const GatedFfnWeights& w);
  void Forward(const float* x, size_t rows, float* out);
  size_t WeightBytes() const { return gate_up_.WeightBytes() + down_.WeightBytes(); }

 private:
  size_t d_model_, ffn_dim_;
  Activation activation_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  WeightType weights_;
  PackedMatrix gate_up_, down_;
  std::vector<float> gate_up_out_, hidden_;  // [rows, 2 * ffn_dim], [rows, ffn_dim]; grow
};

}  // namespace simd_attention
