#include "kernels/q4_activation_sums.h"

#include "kernels/q4_layout.h"

namespace simd_attention {

void Q4BlockEights(const int32_t* words, size_t stride, size_t blocks, int32_t* out) {
  for (size_t b = 0; b < blocks; ++b) {
    int32_t sum = 0;
    for (size_t p = b * kQ4BlockPairs; p < (b + 1) * kQ4BlockPairs; ++p) {
      const int32_t word = words[p * stride];
      sum += static_cast<int16_t>(word & 0xffff) + static_cast<int16_t>(word >> 16);
    }
    out[b * stride] = 8 * sum;
  }
}

}  // namespace simd_attention
