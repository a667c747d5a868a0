#include "layers/partial_outputs.h"

#include <stdexcept>

#include "dispatch/kernel_table.h"
#include "checks/validate.h"

namespace simd_attention {

void AddPartial(const KernelTable& k, std::span<float> sum, std::span<const float> part) {
  if (part.size() != sum.size()) {
    throw std::logic_error("AddPartial: partial outputs of different lengths");
  }
  k.add(sum.data(), part.data(), sum.size(), sum.data());
}

void CheckSummedOutput(std::span<const float> sum) {
  CheckComputed(kOutputProjection, sum, kTooLarge);
}

}  // namespace simd_attention
