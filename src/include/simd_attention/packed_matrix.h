// A weight matrix as the objects hold it (each has these as private
// members): panels for the GEMM (src/kernels/gemm.h) in the storage type,
// and a float32 bias padded as the panels. Not an API of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "simd_attention/aligned_vector.h"
#include "simd_attention/weight_type.h"

namespace simd_attention {

struct PackedMatrix {
  WeightType type = WeightType::kF32;
  size_t rows = 0, cols = 0;
  AlignedVector<float> w;         // kF32 panels
  AlignedVector<uint8_t> narrow;  // the panels in a narrower type, in place of w
  std::vector<float> scales;     // kInt8: one per column, padded as the bias
  std::vector<float> bias;       // empty = none

  bool empty() const { return w.empty() && narrow.empty(); }
  const void* data() const {
    return type == WeightType::kF32 ? static_cast<const void*>(w.data()) : narrow.data();
  }
  const float* packed_bias() const { return bias.empty() ? nullptr : bias.data(); }
  const float* packed_scales() const { return scales.empty() ? nullptr : scales.data(); }
  // Bytes of the weights (with int8's scales), the bias apart.
  size_t WeightBytes() const {
    return w.size() * sizeof(float) + narrow.size() + scales.size() * sizeof(float);
  }
};

}  // namespace simd_attention
