// GatedFeedForward's backward, given dL/d(out), from the record of its
// training forward (GU = x [W_gate | W_up] + [b_gate | b_up], gate G and up
// U its halves, H = act(G) * U, out = H W_down + b_down):
//   dW_down, db_down = [H^T; 1^T] d_out,  dH = d_out W_down^T
//   dG = dH * U * act'(G),  dU = dH * act(G)      (gated_activation_backward)
//   d[W_gate | W_up], d[b_gate | b_up] = [x^T; 1^T] [dG | dU]
//   dx = [dG | dU] [W_gate | W_up]^T
// one GEMM each, as the forward's, the fused gate and up matrix included.
#include <algorithm>
#include <utility>
#include <vector>

#include "checks/validate.h"
#include "dispatch/dispatch.h"
#include "layers/gated_feed_forward.h"
#include "threading/parallel.h"
#include "training/gradients.h"

namespace simd_attention {

void GatedFeedForward::Backward(const FfnRecord& r, const float* d_out, size_t rows,
                                float* d_x, GatedFfnGradients& g) {
  if (training_ == nullptr) training_ = MakeTrainingOnly<Training>();
  Training& t = *training_;
  const KernelTable& k = *kernels_;
  const size_t d = d_model_, f = ffn_dim_;
  if (t.gate_up_t.empty()) {
    t.gate_up_t = PackTransposed(k, gate_up_);
    t.down_t = PackTransposed(k, down_);
  }
  t.has_gradients = false;  // until this one is complete
  if (rows == 0) {  // nothing to differentiate (a mixture's expert no row chose): zeros
    const std::vector<float> zeros(std::max((d + 1) * 2 * f, (f + 1) * d), 0.0f);
    PackGradient(k, zeros.data(), d, 2 * f, true, t.d_gate_up, t.d_gate_up_bias);
    PackGradient(k, zeros.data(), f, d, true, t.d_down, t.d_down_bias);
    for (auto [v, n] : {std::pair{&g.d_w_gate, d * f}, {&g.d_w_up, d * f}, {&g.d_w_down, f * d},
                        {&g.d_b_gate, f}, {&g.d_b_up, f}, {&g.d_b_down, d}}) {
      v->assign(n, 0.0f);
    }
    t.has_gradients = true;
    return;
  }
  const float* down = WeightGradients(*pool_, k, t.weight_workspace, r.hidden.data(), rows, f,
                                      true, d_out, d);
  PackGradient(k, down, f, d, true, t.d_down, t.d_down_bias);
  g.d_w_down.assign(down, down + f * d);
  g.d_b_down.assign(down + f * d, down + (f + 1) * d);
  Sized(t.d_hidden, rows * f);
  ParallelMultiplyPacked(*pool_, k, d_out, rows, t.down_t, t.d_hidden.data(), f);
  Sized(t.d_gate_up_rows, rows * 2 * f);
  const TrainingKernels& training = TrainingKernelsFor(k);
  // Rows are independent; ~1 ns an element (the activation twice).
  const Split split = SplitWork(*pool_, 1.0 * double(rows * f), rows);
  ParallelRanges(*pool_, rows, split, [&](size_t begin, size_t end) {
    training.gated_activation_backward(activation_, r.pre_activation.data() + begin * 2 * f,
                                       t.d_hidden.data() + begin * f, end - begin, f, 2 * f,
                                       t.d_gate_up_rows.data() + begin * 2 * f);
  });
  const float* both = WeightGradients(*pool_, k, t.weight_workspace, r.input.data(), rows, d,
                                      true, t.d_gate_up_rows.data(), 2 * f);
  PackGradient(k, both, d, 2 * f, true, t.d_gate_up, t.d_gate_up_bias);
  // Row i of d[W_gate | W_up] is row i of each, side by side.
  Sized(g.d_w_gate, d * f);
  Sized(g.d_w_up, d * f);
  for (size_t i = 0; i < d; ++i) {
    std::copy_n(both + i * 2 * f, f, g.d_w_gate.data() + i * f);
    std::copy_n(both + i * 2 * f + f, f, g.d_w_up.data() + i * f);
  }
  g.d_b_gate.assign(both + d * 2 * f, both + d * 2 * f + f);
  g.d_b_up.assign(both + d * 2 * f + f, both + (d + 1) * 2 * f);
  ParallelMultiplyPacked(*pool_, k, t.d_gate_up_rows.data(), rows, t.gate_up_t, d_x, d);
  t.has_gradients = true;
}

void GatedFeedForward::TrainableParameters(std::vector<Parameter>& out,
                                           std::string_view prefix) {
  if (training_ == nullptr || !training_->has_gradients) ThrowNoGradients();
  Training& t = *training_;
  out.push_back({gate_up_.w.data(), t.d_gate_up.data(), gate_up_.w.size(),
                 Cat({prefix, "w_gate, ", prefix, "w_up"})});
  out.push_back({gate_up_.bias.data(), t.d_gate_up_bias.data(), gate_up_.bias.size(),
                 Cat({prefix, "b_gate, ", prefix, "b_up"})});
  out.push_back({down_.w.data(), t.d_down.data(), down_.w.size(), Cat({prefix, "w_down"})});
  out.push_back({down_.bias.data(), t.d_down_bias.data(), down_.bias.size(),
                 Cat({prefix, "b_down"})});
}

void GatedFeedForward::ParametersUpdated() {
  if (training_ == nullptr) return;
  training_->gate_up_t = {};
  training_->down_t = {};
}

}  // namespace simd_attention
