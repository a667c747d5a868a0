// Powers and roots of doubles without std::pow, whose 2 kB of .wasm every
// module would carry for the few constants computed with it (the rotary
// frequencies, the sinusoidal encoding's rates, Adam's bias corrections).
#pragma once

#include <algorithm>
#include <cstddef>

namespace simd_attention {

// b^n by squaring: what std::pow gives to a few ulps.
inline double Power(double b, size_t n) {
  double r = 1;
  for (; n > 0; n >>= 1, b *= b) {
    if (n & 1) r *= b;
  }
  return r;
}

// a^(1/n) for a > 0, n >= 1: bisection on Power(y, n), which rises with y,
// down to the last bits of y.
inline double RootOf(double a, size_t n) {
  double lo = std::min(1.0, a), hi = std::max(1.0, a);
  for (int i = 0; i < 1100 && lo < hi; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (mid == lo || mid == hi) break;
    (Power(mid, n) < a ? lo : hi) = mid;
  }
  return lo + (hi - lo) / 2;
}

}  // namespace simd_attention
