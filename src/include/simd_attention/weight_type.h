// How packed weights are held in memory, and weights a caller already holds
// in such a type. The arithmetic is float32 in every case: the GEMM widens
// each weight in registers as it loads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

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

// A weight matrix [rows, cols] (X @ W layout) given in the object's storage
// type instead of as float32: a float16 or bfloat16 checkpoint's bits, or an
// int8 checkpoint's values with one float scale per column (w = value *
// scale). Taken as it is: nothing is rounded again.
struct StoredMatrix {
  std::span<const uint16_t> bits;  // kF16, kBF16: rows * cols
  std::span<const int8_t> values;  // kInt8: rows * cols
  std::span<const float> scales;   // kInt8: cols
  bool empty() const { return bits.empty() && values.empty() && scales.empty(); }
};

// int8 weights [rows, cols] with their column scales, as StoredMatrix views them.
struct Int8Matrix {
  std::vector<int8_t> values;  // rows * cols
  std::vector<float> scales;   // cols
};

// `matrix` [rows, cols] (row-major, X @ W layout) quantized exactly as
// SetWeights quantizes float32 weights for WeightType::kInt8: scale[c] =
// max |w[:, c]| / 127 (1 for an all-zero column), value = w / scale rounded
// to nearest even. Given to SetWeights as a StoredMatrix, the same weights.
// Lets a caller that splits a matrix by rows (the JS worker pool) quantize
// it whole once. Throws std::invalid_argument naming `rows` or `cols` (0)
// or `matrix` (a length other than rows * cols, a value that is not finite).
Int8Matrix QuantizeInt8(std::span<const float> matrix, size_t rows, size_t cols);

}  // namespace simd_attention
