#include "layers/norms.h"

#include <stdexcept>
#include <string>

#include "checks/validate.h"
#include "layers/residual.h"
#include "threading/parallel.h"
#include "training/training_hooks.h"

namespace simd_attention {

std::vector<float> NormScales(std::string_view name, std::span<const float> gamma, size_t d,
                              NormKind kind) {
  CheckLength(name, gamma.size(), {d});
  CheckFinite(name, gamma);
  std::vector<float> scales(gamma.begin(), gamma.end());
  if (Traits(kind).plus_one) {
    for (float& s : scales) s += 1.0f;
  }
  return scales;
}

BlockNorm::BlockNorm(NormKind kind, size_t d, float eps, const KernelTable& kernels,
                     std::shared_ptr<ThreadPool> pool)
    : kind_(kind), d_(d), eps_(eps), kernels_(&kernels), pool_(std::move(pool)) {}

void BlockNorm::SetWeights(std::string_view name, std::span<const float> gamma,
                           std::span<const float> beta) {
  const std::string prefix(name);
  std::vector<float> scales = NormScales(prefix + ".gamma", gamma, d_, kind_);
  std::vector<float> shift;
  if (Traits(kind_).has_beta) {
    // Absent: zeros, as PyTorch's LayerNorm(bias=False) (OLMo, ModernBERT).
    shift = BiasOrZeros(prefix + ".beta", beta, d_);
  } else if (!beta.empty()) {
    ThrowInvalidArgument({prefix, ".beta: ", Traits(kind_).name, " has no shift, so none may be "
                          "given; got ", std::to_string(beta.size()), " values"});
  }
  gamma_ = std::move(scales);
  beta_ = std::move(shift);
  stored_gamma_.clear();
  if (Traits(kind_).plus_one) stored_gamma_.assign(gamma.begin(), gamma.end());
  DropTraining(training_);  // the gradients belonged to the old weights
}

void BlockNorm::Forward(const char* what, const float* x, size_t rows, float* out) const {
  CheckNormRange(what, {x, rows * d_}, d_);
  // Rows are independent; ~0.5 ns an element over their two passes.
  const Split split = SplitWork(*pool_, 0.5 * double(rows * d_), rows);
  ParallelRanges(*pool_, rows, split, [&](size_t begin, size_t end) {
    if (Traits(kind_).has_beta) {
      kernels_->layer_norm(x + begin * d_, end - begin, d_, gamma_.data(), beta_.data(), eps_,
                           out + begin * d_);
    } else {
      kernels_->rms_norm(x + begin * d_, end - begin, d_, d_, gamma_.data(), eps_,
                         out + begin * d_);
    }
  });
}

}  // namespace simd_attention
