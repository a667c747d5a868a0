// A trainable object's parameter as an optimizer sees it: the value an
// object computes with (packed weights, a LayerNorm's gamma) and its last
// Backward's gradient in the same layout, so one fused pass updates it in
// place; its name as SetWeights names it, for the optimizer's messages.
#pragma once

#include <cstddef>
#include <string>

namespace simd_attention {

struct Parameter {
  float* value;
  const float* gradient;
  size_t size;
  std::string name;  // "selfAttention.wQ", "ffn.b1", "weights.layers[0].w1" ...
};

}  // namespace simd_attention
