// Weight matrices from the caller to PackedMatrix: read (float32 or already
// in the storage type), checked with the caller's names, packed into GEMM
// panels in the storage type. MultiHeadAttention's projections and the FFN
// share it, and QuantizeInt8 (simd_attention/weight_type.h) quantizes as
// PackWeights does.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "dispatch/kernel_table.h"
#include "simd_attention/packed_matrix.h"
#include "simd_attention/weight_type.h"

namespace simd_attention {

// A weight's float32 values and, for int8 or q4 given as stored, its
// scales: values holds int8's q or q4's q - 8.
struct WeightValues {
  std::vector<float> values;  // rows * cols
  std::vector<float> scales;  // given int8 scales [cols], q4 block scales [rows / 32, cols];
                              // empty = quantize values
};

// Exactly one of `f32` and `stored` given (config field `config_name` says
// which type `stored` must hold): its length rows * cols, its values finite
// and within `type`'s range; int8 scales [cols], finite; q4 blocks
// (StoredMatrix::q4) of rows a multiple of 32, their scales finite.
// Messages name `what` ("what.scales", "what.q4" for those).
WeightValues ReadWeight(const char* what, std::span<const float> f32, const StoredMatrix& stored,
                        WeightType type, size_t rows, size_t cols, std::string_view config_name);

// w [rows, cols] (and bias [cols] or empty) packed as `type`. int8: w holds
// the int8 values when `scales` is given, else it is quantized per column.
// q4: w holds each weight's q - 8 and `scales` its block scales where
// given (PackQ4Blocks), else it is quantized per block of 32 rows (PackQ4,
// kernels/q4_packing.h).
PackedMatrix PackWeights(const KernelTable& kernels, std::span<const float> w,
                         std::span<const float> scales, std::span<const float> bias, size_t rows,
                         size_t cols, WeightType type);

}  // namespace simd_attention
