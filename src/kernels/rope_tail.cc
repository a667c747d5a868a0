#include "kernels/rope.h"

namespace simd_attention {

void RotateTail(const RopeArgs& a, float* head, const float* angles, size_t begin) {
  const size_t r = a.rotary_dim, half = r / 2;
  if (a.interleaved) {
    const float *c = angles, *s = angles + r;
    for (size_t i = begin; i < r; i += 2) {
      const float x0 = head[i], x1 = head[i + 1];
      head[i] = x0 * c[i] + x1 * s[i];
      head[i + 1] = x1 * c[i + 1] + x0 * s[i + 1];
    }
  } else {
    const float *c = angles, *s = angles + half;
    for (size_t i = begin; i < half; ++i) {
      const float x0 = head[i], x1 = head[i + half];
      head[i] = x0 * c[i] - x1 * s[i];
      head[i + half] = x0 * s[i] + x1 * c[i];
    }
  }
}

}  // namespace simd_attention
