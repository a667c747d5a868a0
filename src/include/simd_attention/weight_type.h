// How packed weights are held in memory. The arithmetic is float32 in every
// case: the GEMM widens each weight in registers as it loads it.
#pragma once

#include <cstddef>

namespace simd_attention {

enum class WeightType {
  kF32,
  kF16,   // IEEE binary16, rounded to nearest even at packing
  kBF16,  // the high half of a float32, rounded to nearest even at packing
  kInt8,  // symmetric per output column: w = q * scale[column], |q| <= 127
};

constexpr size_t WeightBytes(WeightType t) {
  return t == WeightType::kF32 ? 4 : t == WeightType::kInt8 ? 1 : 2;
}

}  // namespace simd_attention
