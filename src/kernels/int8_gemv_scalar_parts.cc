#include <algorithm>
#include <cmath>

#include "kernels/int8_gemv.h"

namespace simd_attention {

float Int8Step(float largest, float* inverse) {
  *inverse = largest > 0 ? 32767.0f / largest : 0.0f;
  return largest / 32767.0f;
}

float Int8RowScale(const float* a, size_t k, float* inverse) {
  float largest = 0;
  for (size_t kk = 0; kk < k; ++kk) largest = std::max(largest, std::fabs(a[kk]));
  return Int8Step(largest, inverse);
}

void QuantizePairs(const float* a, size_t k, size_t first, size_t p0, size_t pairs,
                   float inverse, int32_t* words) {
  auto q = [&](size_t j) -> uint32_t {
    if (j < first || j - first >= k) return 0;
    return static_cast<uint32_t>(static_cast<int32_t>(std::nearbyint(a[j - first] * inverse)));
  };
  for (size_t i = 0; i < pairs; ++i) {
    const size_t j = 2 * (p0 + i);
    words[i] = static_cast<int32_t>((q(j) & 0xffffu) | (q(j + 1) << 16));
  }
}

}  // namespace simd_attention
