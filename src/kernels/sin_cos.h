// sin and cos of doubles without the C library's, whose argument reduction
// (__rem_pio2, 3 kB of .wasm, with sin and cos 4 kB) every module would
// carry for the few tables computed with them (the rotary angles, the
// sinusoidal encoding, the tiny model's Box-Muller draws).
#pragma once

#include <cmath>

namespace simd_attention {

// sin x and cos x to about an ulp: x less the nearest multiple n of pi/2
// (pi/2 in three parts of 33 bits, so that n times each is exact for |n|
// below 2^20, and beyond loses what x's own rounding does), then the Taylor
// series of both on [-pi/4, pi/4], nested from their tenth terms (the next
// are below 1e-19), and the quadrant n mod 4.
inline void SinCos(double x, double& sin_x, double& cos_x) {
  const double n = std::floor(x * 0.63661977236758134308 + 0.5);  // x / (pi / 2)
  const double r = ((x - n * 1.57079632673412561417e+00) - n * 6.07710050630396597660e-11) -
                   n * 2.02226624871116645580e-21;
  const double r2 = r * r;
  double s = 1, c = 1;
  for (int k = 10; k >= 1; --k) {
    s = 1 - r2 / double((2 * k) * (2 * k + 1)) * s;
    c = 1 - r2 / double((2 * k - 1) * (2 * k)) * c;
  }
  s *= r;
  const double q = n - 4 * std::floor(n / 4);  // 0 ... 3
  sin_x = q == 0 ? s : q == 1 ? c : q == 2 ? -s : -c;
  cos_x = q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s;
}

}  // namespace simd_attention
