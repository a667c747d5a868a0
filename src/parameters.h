// A trainable object's parameter as an optimizer sees it: the value an
// object computes with (packed weights, a LayerNorm's gamma) and its last
// Backward's gradient in the same layout, so one fused pass updates it in
// place.
#pragma once

#include <cstddef>

namespace simd_attention {

struct Parameter {
  float* value;
  const float* gradient;
  size_t size;
};

}  // namespace simd_attention
