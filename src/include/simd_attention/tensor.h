// The tensors the API reads: [batch, tokens, features], row-major, borrowed.
#pragma once

#include <cstddef>
#include <span>

namespace simd_attention {

// A read-only [batch, tokens, features] tensor, row-major.
struct Tensor3 {
  std::span<const float> data;
  size_t batch = 0;
  size_t tokens = 0;
  size_t features = 0;
};

}  // namespace simd_attention
