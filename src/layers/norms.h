// A sublayer's normalization, of any NormKind, over rows of width d: what a
// TransformerBlock runs before or after each of its sublayers, and the
// scales QK-norm multiplies each head by.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "dispatch/dispatch.h"
#include "simd_attention/norm_kind.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/training_only.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention {

// The scale a kernel multiplies by, from the stored one: gamma as given, or
// 1 + gamma for a kind whose weights are stored that way (Gemma's). Throws
// std::invalid_argument naming `name` for a length other than d or a value
// that is not finite.
std::vector<float> NormScales(std::string_view name, std::span<const float> gamma, size_t d,
                              NormKind kind);

class BlockNorm {
 public:
  // eps already judged (CheckEps) by the caller's config.
  BlockNorm(NormKind kind, size_t d, float eps, const KernelTable& kernels,
            std::shared_ptr<ThreadPool> pool);
  // `name` prefixes messages ("sublayers[0].norm"); beta only for a kind
  // that has one (LayerNorm).
  void SetWeights(std::string_view name, std::span<const float> gamma,
                  std::span<const float> beta);
  // out may alias x; checks x's range first (a std::range_error naming
  // `what`).
  void Forward(const char* what, const float* x, size_t rows, float* out) const;
  // d_x (not aliasing d_out) given d_out, x the forward's input; the
  // gradients of gamma (the stored one: Gemma's 1 + gamma has gamma's) and
  // of beta (LayerNorm's; else empty) into g.
  void Backward(const float* x, size_t rows, const float* d_out, float* d_x, NormGradients& g);
  // gamma (as stored) and beta with the last Backward's gradients, named
  // `prefix` + "gamma", "beta" (trainable.h); after an update the scales
  // are recomputed from the stored gamma.
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix);
  void ParametersUpdated();

 private:
  NormKind kind_;
  size_t d_;
  float eps_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<float> gamma_, beta_;  // the scales the kernels multiply by; the shift
  // Gemma's kind's gamma as stored (the scales less 1), what an optimizer
  // updates (its weight decay pulls it to 0, the scales to 1); else empty.
  std::vector<float> stored_gamma_;
  // The last Backward's gradients and workspace, made by the first one (a
  // program that never trains makes none: training_only.h).
  struct Training {
    std::vector<float> d_gamma, d_beta, dy_xhat;
  };
  TrainingOnly<Training> training_;
};

}  // namespace simd_attention
