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
#include "simd_attention/training_only.h"
#include "simd_attention/transformer_block.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention {

class GatedFeedForward : private FfnMixerShape {
 public:
  GatedFeedForward(size_t d_model, size_t ffn_dim, Activation activation,
                   const KernelTable& kernels, std::shared_ptr<ThreadPool> pool,
                   WeightType weights);
  // Biases may be empty (zero). Messages name gated_ffn.<weight>.
  void SetWeights(const GatedFfnWeights& w);
  // With a record (a training forward): x, the gate and up projections
  // before the activation and the gated product into it, for Backward.
  void Forward(const float* x, size_t rows, float* out, FfnRecord* record = nullptr);
  // d_x [rows, d_model] and the weights' gradients given d_out, from the
  // record of a training Forward of `rows` rows with the current weights.
  void Backward(const FfnRecord& record, const float* d_out, size_t rows, float* d_x,
                GatedFfnGradients& g);
  // The packed weights and biases with the last Backward's gradients
  // (trainable.h); W_gate and W_up are one matrix, one parameter named
  // after both. After an update, the transposes are stale.
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix);
  void ParametersUpdated();
  size_t WeightBytes() const { return gate_up_.WeightBytes() + down_.WeightBytes(); }

 private:
  PackedMatrix gate_up_, down_;
  std::vector<float> gate_up_out_, hidden_;  // [rows, 2 * ffn_dim], [rows, ffn_dim]; grow
  // Training, made by the first Backward (training_only.h): [W_gate |
  // W_up]^T and W_down^T, packed once per weight change; the gradients
  // packed as the weights; workspaces.
  struct Training {
    PackedMatrix gate_up_t, down_t;
    std::vector<float> d_gate_up, d_gate_up_bias, d_down, d_down_bias;
    std::vector<float> d_hidden, d_gate_up_rows, weight_workspace;
    bool has_gradients = false;
  };
  TrainingOnly<Training> training_;
};

}  // namespace simd_attention
