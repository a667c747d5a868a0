#include "layers/mixture_of_experts.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "checks/validate.h"
#include "storage/packed_weights.h"
#include "threading/parallel.h"
#include "training/training_hooks.h"

namespace simd_attention {

MixtureOfExperts::MixtureOfExperts(const BlockConfig& c, const KernelTable& kernels,
                                   std::shared_ptr<ThreadPool> pool)
    : d_model_(c.d_model),
      ffn_dim_(c.ffn_dim),
      num_experts_(c.num_experts),
      top_k_(c.experts_per_token),
      normalize_(c.normalize_top_k),
      names_(c.names),
      kernels_(&kernels),
      pool_(std::move(pool)) {
  experts_.reserve(num_experts_);
  for (size_t e = 0; e < num_experts_; ++e) {
    experts_.emplace_back(d_model_, ffn_dim_, c.activation, kernels, pool_, c.weights);
  }
}

MixtureOfExperts::MixtureOfExperts(MixtureOfExperts&&) noexcept = default;
MixtureOfExperts::~MixtureOfExperts() = default;

void MixtureOfExperts::SetWeights(const MoeWeights& w) {
  const WeightValues router = ReadWeight("router", w.router, {}, WeightType::kF32, d_model_,
                                         num_experts_, ConfigName(names_->weights));
  CheckEqual("experts (one gated FFN per expert)", w.experts.size(), num_experts_,
             ConfigName(names_->num_experts));
  for (size_t e = 0; e < num_experts_; ++e) {
    try {
      experts_[e].SetWeights(w.experts[e]);
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument(Cat({"experts[", std::to_string(e), "].", error.what()}));
    }
  }
  router_ = PackWeights(*kernels_, router.values, {}, {}, d_model_, num_experts_,
                        WeightType::kF32);
  DropTraining(training_);  // the transpose and gradient of the old router
}

void MixtureOfExperts::Route(float* logits, size_t rows, std::vector<uint32_t>& chosen,
                             std::vector<float>& weights) const {
  const size_t n = num_experts_, k = top_k_;
  chosen.resize(rows * k);
  weights.resize(rows * k);
  for (size_t r = 0; r < rows; ++r) {
    float* p = logits + r * n;
    const float top = *std::max_element(p, p + n);
    float sum = 0;
    for (size_t e = 0; e < n; ++e) {
      p[e] = std::exp(p[e] - top);
      sum += p[e];
    }
    for (size_t e = 0; e < n; ++e) p[e] /= sum;
    // The k largest, a tie to the lower index (torch.topk's order on CPU):
    // each pass takes the largest not yet taken, marking it by its sign;
    // then listed in expert order, the order the outputs are summed in.
    for (size_t j = 0; j < k; ++j) {
      size_t best = n;
      for (size_t e = 0; e < n; ++e) {
        if (!std::signbit(p[e]) && (best == n || p[e] > p[best])) best = e;
      }
      p[best] = -p[best];
    }
    uint32_t* c = chosen.data() + r * k;
    for (size_t e = 0, j = 0; e < n; ++e) {
      if (std::signbit(p[e])) {
        p[e] = -p[e];
        c[j++] = uint32_t(e);
      }
    }
    float chosen_sum = 0;
    for (size_t j = 0; j < k; ++j) chosen_sum += p[c[j]];
    for (size_t j = 0; j < k; ++j) {
      weights[r * k + j] = normalize_ ? p[c[j]] / chosen_sum : p[c[j]];
    }
  }
}

size_t MixtureOfExperts::Members(const uint32_t* chosen, size_t slots, size_t expert,
                                 size_t* members) {
  size_t m = 0;
  for (size_t slot = 0; slot < slots; ++slot) {
    if (chosen[slot] == expert) members[m++] = slot;
  }
  return m;
}

void MixtureOfExperts::Forward(const float* x, size_t rows, float* out, MoeRecord* record) {
  if (router_.empty()) throw std::logic_error("MixtureOfExperts: forward before SetWeights");
  const size_t d = d_model_, n = num_experts_, k = top_k_;
  logits_.resize(rows * n);
  ParallelMultiplyPacked(*pool_, *kernels_, x, rows, router_, logits_.data(), n);
  Route(logits_.data(), rows, chosen_, weights_);
  if (record != nullptr) {
    record->input.assign(x, x + rows * d);
    record->probabilities.assign(logits_.begin(), logits_.end());
    record->chosen = chosen_;
    record->weights = weights_;
    record->experts.resize(n);
    record->outputs.resize(rows * k * d);
  }
  std::fill_n(out, rows * d, 0.0f);
  std::vector<size_t>& members = members_;  // the expert's rows, each as its slot r * k + j
  members.resize(rows * k);
  for (size_t e = 0; e < n; ++e) {
    const size_t m = Members(chosen_.data(), rows * k, e, members.data());
    if (m == 0) continue;
    rows_in_.resize(m * d);
    rows_out_.resize(m * d);
    for (size_t i = 0; i < m; ++i) {
      std::copy_n(x + members[i] / k * d, d, rows_in_.data() + i * d);
    }
    experts_[e].Forward(rows_in_.data(), m, rows_out_.data(),
                        record != nullptr ? &record->experts[e] : nullptr);
    for (size_t i = 0; i < m; ++i) {
      const float w = weights_[members[i]];
      float* o = out + members[i] / k * d;
      const float* y = rows_out_.data() + i * d;
      for (size_t c = 0; c < d; ++c) o[c] += w * y[c];
      if (record != nullptr) std::copy_n(y, d, record->outputs.data() + members[i] * d);
    }
  }
}

size_t MixtureOfExperts::WeightBytes() const {
  size_t bytes = router_.WeightBytes();
  for (const GatedFeedForward& e : experts_) bytes += e.WeightBytes();
  return bytes;
}

}  // namespace simd_attention
