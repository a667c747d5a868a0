#include "layers/gated_feed_forward.h"

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "checks/validate.h"
#include "storage/packed_weights.h"
#include "threading/parallel.h"
#include "training/training_hooks.h"

namespace simd_attention {

namespace {

// Rows of a and b, each `cols` wide, side by side: [rows, 2 * cols].
std::vector<float> SideBySide(std::span<const float> a, std::span<const float> b, size_t cols) {
  std::vector<float> out(2 * a.size());
  for (size_t r = 0; r < a.size() / cols; ++r) {
    std::copy_n(a.data() + r * cols, cols, out.data() + r * 2 * cols);
    std::copy_n(b.data() + r * cols, cols, out.data() + r * 2 * cols + cols);
  }
  return out;
}

}  // namespace

GatedFeedForward::GatedFeedForward(size_t d_model, size_t ffn_dim, Activation activation,
                                   const KernelTable& kernels, std::shared_ptr<ThreadPool> pool,
                                   WeightType weights)
    : FfnMixerShape(d_model, ffn_dim, activation, kernels, std::move(pool), weights) {}

void GatedFeedForward::SetWeights(const GatedFfnWeights& w) {
  const size_t d = d_model_, f = ffn_dim_;
  const std::string config_name = ConfigName(CppArgNames().weights);
  const WeightValues gate =
      ReadWeight("gated_ffn.w_gate", w.w_gate, w.stored_w_gate, weights_, d, f, config_name);
  const WeightValues up =
      ReadWeight("gated_ffn.w_up", w.w_up, w.stored_w_up, weights_, d, f, config_name);
  const WeightValues down =
      ReadWeight("gated_ffn.w_down", w.w_down, w.stored_w_down, weights_, f, d, config_name);
  if (gate.scales.empty() != up.scales.empty()) {
    throw std::invalid_argument(
        "gated_ffn.w_gate, gated_ffn.w_up: expected both in the storage type (int8 values and "
        "scales, q4 blocks) or both as float32, got one of each");
  }
  const std::vector<float> b_gate = BiasOrZeros("gated_ffn.b_gate", w.b_gate, f);
  const std::vector<float> b_up = BiasOrZeros("gated_ffn.b_up", w.b_up, f);
  const std::vector<float> b_down = BiasOrZeros("gated_ffn.b_down", w.b_down, d);
  // Row r of [W_gate | W_up], and the columns' given scales (int8's one
  // row, q4's a row per block), biases alike.
  CheckedCount("gated_ffn gate and up", {{"d_model", d}, {"2 * ffn_dim", 2 * f}});
  const std::vector<float> both = SideBySide(gate.values, up.values, f);
  const std::vector<float> scales = SideBySide(gate.scales, up.scales, f);
  const std::vector<float> bias = SideBySide(b_gate, b_up, f);
  PackedMatrix gate_up = PackWeights(*kernels_, both, scales, bias, d, 2 * f, weights_);
  down_ = PackWeights(*kernels_, down.values, down.scales, b_down, f, d, weights_);
  gate_up_ = std::move(gate_up);
  DropTraining(training_);  // transposes and gradients of the old weights
}

void GatedFeedForward::Forward(const float* x, size_t rows, float* out, FfnRecord* record) {
  if (down_.empty()) throw std::logic_error("GatedFeedForward: forward before SetWeights");
  const size_t f = ffn_dim_;
  const size_t both = CheckedCount("gated feed-forward hidden units",
                                   {{"batch * tokens", rows}, {"2 * ffn_dim", 2 * f}});
  if (gate_up_out_.size() < both) gate_up_out_.resize(both);
  if (hidden_.size() < both / 2) hidden_.resize(both / 2);
  ParallelMultiplyPacked(*pool_, *kernels_, x, rows, gate_up_, gate_up_out_.data(), 2 * f);
  if (record != nullptr) {
    record->input.assign(x, x + rows * d_model_);
    record->pre_activation.assign(gate_up_out_.begin(), gate_up_out_.begin() + both);
  }
  // The gate's activation and the product, ~0.5 ns an element, by rows.
  const Split split = SplitWork(*pool_, 0.5 * double(rows * f), rows);
  ParallelRanges(*pool_, rows, split, [&](size_t begin, size_t end) {
    kernels_->gated_activation(activation_, gate_up_out_.data() + begin * 2 * f, end - begin, f,
                               2 * f, hidden_.data() + begin * f);
  });
  if (record != nullptr) record->hidden.assign(hidden_.begin(), hidden_.begin() + both / 2);
  ParallelMultiplyPacked(*pool_, *kernels_, hidden_.data(), rows, down_, out, d_model_);
}

}  // namespace simd_attention
