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

 private:
  NormKind kind_;
  size_t d_;
  float eps_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  std::vector<float> gamma_, beta_;
};

}  // namespace simd_attention
