// The references' linear map in double, for inputs and weights held in float
// or in double: the one copy the forward and backward references share.
#pragma once

#include <cstddef>
#include <vector>

namespace simd_attention {

// y [rows, out] = x [rows, in] w [in, out] + b (b empty: none); x, w and b
// index like arrays (std::vector, std::span) of float or double.
template <class X, class W, class B>
std::vector<double> Linear64(const X& x, size_t rows, size_t in, const W& w, const B& b,
                             size_t out) {
  std::vector<double> y(rows * out);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t o = 0; o < out; ++o) {
      double acc = b.empty() ? 0.0 : double(b[o]);
      for (size_t i = 0; i < in; ++i) acc += double(x[r * in + i]) * double(w[i * out + o]);
      y[r * out + o] = acc;
    }
  }
  return y;
}

}  // namespace simd_attention
