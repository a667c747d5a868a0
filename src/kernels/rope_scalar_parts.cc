#include <cmath>
#include <vector>

#include "kernels/powers.h"
#include "kernels/rope.h"
#include "kernels/sin_cos.h"

namespace simd_attention {

void FillRopeAngles(double base, size_t rotary_dim, bool interleaved, size_t first,
                    size_t positions, float* table) {
  const size_t r = rotary_dim, half = r / 2, row = RopeTableRow(r, interleaved);
  std::vector<double> inv_freq(half);
  // base^(-2i / r) = q^i, q the square of the r-th root of 1 / base.
  const double q = Power(RootOf(1 / base, r), 2);
  for (size_t i = 0; i < half; ++i) inv_freq[i] = Power(q, i);
  for (size_t t = 0; t < positions; ++t) {
    float* c = table + t * row;
    float* s = c + (interleaved ? r : half);
    for (size_t i = 0; i < half; ++i) {
      // In double: positions past 2^24 still get their own angle.
      const double angle = (double(first) + double(t)) * inv_freq[i];
      double sin_angle, cos_angle;
      SinCos(angle, sin_angle, cos_angle);
      const float cos = float(cos_angle), sin = float(sin_angle);
      if (interleaved) {
        c[2 * i] = c[2 * i + 1] = cos;
        s[2 * i] = -sin;
        s[2 * i + 1] = sin;
      } else {
        c[i] = cos;
        s[i] = sin;
      }
    }
  }
}

void RotateTail(const RopeArgs& a, float* head, const float* angles, size_t begin, bool back) {
  const size_t r = a.rotary_dim, half = r / 2;
  // By -a, sin a changes sign and cos a stays.
  const float sign = back ? -1.0f : 1.0f;
  if (a.interleaved) {
    const float *c = angles, *s = angles + r;
    for (size_t i = begin; i < r; i += 2) {
      const float x0 = head[i], x1 = head[i + 1];
      head[i] = x0 * c[i] + x1 * (sign * s[i]);
      head[i + 1] = x1 * c[i + 1] + x0 * (sign * s[i + 1]);
    }
  } else {
    const float *c = angles, *s = angles + half;
    for (size_t i = begin; i < half; ++i) {
      const float x0 = head[i], x1 = head[i + half], sin = sign * s[i];
      head[i] = x0 * c[i] - x1 * sin;
      head[i + half] = x0 * sin + x1 * c[i];
    }
  }
}

}  // namespace simd_attention
