// MixtureOfExperts' backward with the routing as the training forward chose
// it (as torch differentiates MixtralSparseMoeBlock: top-k picks, it has no
// gradient). With y_e the output of expert e on a row, w_e its weight and p
// the softmax of the router's logits z = x W_router:
//   d(expert e's output) = w_e d_out,  d w_e = d_out . y_e
//   normalized, w_e = p_e / S over the chosen: d p_e = (d w_e - sum_j d w_j w_j) / S
//   d z = p * (d p - sum_j d p_j p_j)   (d p 0 for the experts not chosen)
//   d W_router = x^T d z,  d x = sum_e (expert e's d x) + d z W_router^T
#include <algorithm>
#include <string>

#include "checks/validate.h"
#include "dispatch/dispatch.h"
#include "layers/mixture_of_experts.h"
#include "threading/parallel.h"
#include "training/gradients.h"

namespace simd_attention {

struct MixtureOfExperts::Training {
  PackedMatrix router_t;                // W_router^T, packed once per weight change
  std::vector<float> d_router, d_bias;  // packed as the router (no bias: d_bias empty)
  std::vector<float> d_weights, d_logits, d_rows, dx_rows, weight_workspace;
  bool has_gradients = false;
};

void MixtureOfExperts::Backward(const MoeRecord& r, const float* d_out, size_t rows,
                                float* d_x, MoeGradients& g) {
  if (training_ == nullptr) training_ = MakeTrainingOnly<Training>();
  Training& t = *training_;
  const KernelTable& kt = *kernels_;
  const size_t d = d_model_, n = num_experts_, k = top_k_;
  if (t.router_t.empty()) t.router_t = PackTransposed(kt, router_);
  t.has_gradients = false;  // until this one is complete
  std::fill_n(d_x, rows * d, 0.0f);
  Sized(t.d_weights, rows * k);
  g.experts.resize(n);
  std::vector<size_t>& members = members_;  // the expert's slots, in the forward's order
  members.resize(rows * k);
  for (size_t e = 0; e < n; ++e) {
    const size_t m = Members(r.chosen.data(), rows * k, e, members.data());
    Sized(t.d_rows, m * d);
    Sized(t.dx_rows, m * d);
    for (size_t i = 0; i < m; ++i) {
      const float* dy = d_out + members[i] / k * d;
      const float* y = r.outputs.data() + members[i] * d;
      const float w = r.weights[members[i]];
      float dot = 0;
      for (size_t c = 0; c < d; ++c) {
        dot += dy[c] * y[c];
        t.d_rows[i * d + c] = w * dy[c];
      }
      t.d_weights[members[i]] = dot;
    }
    experts_[e].Backward(r.experts[e], t.d_rows.data(), m, t.dx_rows.data(), g.experts[e]);
    for (size_t i = 0; i < m; ++i) {
      float* dx = d_x + members[i] / k * d;
      for (size_t c = 0; c < d; ++c) dx[c] += t.dx_rows[i * d + c];
    }
  }
  Sized(t.d_logits, rows * n);
  for (size_t row = 0; row < rows; ++row) {
    const float* p = r.probabilities.data() + row * n;
    const uint32_t* c = r.chosen.data() + row * k;
    const float* w = r.weights.data() + row * k;
    const float* dw = t.d_weights.data() + row * k;
    float* dz = t.d_logits.data() + row * n;
    std::fill_n(dz, n, 0.0f);
    float chosen_sum = 0, weighted = 0;
    for (size_t j = 0; j < k; ++j) {
      chosen_sum += p[c[j]];
      weighted += dw[j] * w[j];
    }
    float dot = 0;
    for (size_t j = 0; j < k; ++j) {
      dz[c[j]] = normalize_ ? (dw[j] - weighted) / chosen_sum : dw[j];
      dot += dz[c[j]] * p[c[j]];
    }
    for (size_t e = 0; e < n; ++e) dz[e] = p[e] * (dz[e] - dot);
  }
  const float* router = WeightGradients(*pool_, kt, t.weight_workspace, r.input.data(), rows, d,
                                        false, t.d_logits.data(), n);
  g.d_router.assign(router, router + d * n);
  PackGradient(kt, router, d, n, false, t.d_router, t.d_bias);
  Sized(t.dx_rows, rows * d);
  ParallelMultiplyPacked(*pool_, kt, t.d_logits.data(), rows, t.router_t, t.dx_rows.data(), d);
  for (size_t i = 0; i < rows * d; ++i) d_x[i] += t.dx_rows[i];
  t.has_gradients = true;
}

void MixtureOfExperts::TrainableParameters(std::vector<Parameter>& out,
                                           std::string_view prefix) {
  if (training_ == nullptr || !training_->has_gradients) ThrowNoGradients();
  out.push_back({router_.w.data(), training_->d_router.data(), router_.w.size(),
                 Cat({prefix, "router"})});
  for (size_t e = 0; e < experts_.size(); ++e) {
    experts_[e].TrainableParameters(out, Cat({prefix, "experts[", std::to_string(e), "]."}));
  }
}

void MixtureOfExperts::ParametersUpdated() {
  for (GatedFeedForward& e : experts_) e.ParametersUpdated();
  if (training_ != nullptr) training_->router_t = {};
}

}  // namespace simd_attention
