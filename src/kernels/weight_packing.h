// Packed weights in the narrow types of WeightType: the panels of
// Gemm::PackB (kernels/gemm.h), each float rounded to the storage type. One
// element-wise conversion for every vector layer, so compiled once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simd_attention/weight_type.h"

namespace simd_attention {

// Per-column scales of symmetric int8 weights: max |w[:, j]| / 127 (1 for an
// all-zero column), for w [k, n] row-major.
void Int8ColumnScales(const float* w, size_t k, size_t n, float* scales);

// w [k, n] divided by its column scales and rounded to integers in
// [-127, 127], still as floats (to be packed, then narrowed).
void QuantizeColumns(const float* w, size_t k, size_t n, const float* scales, float* q);

// Packed floats (panels of panel_width columns, an even number of rows)
// reordered into int8's pair-interleaved layout (kernels/gemm.h): each pair
// of rows becomes one row of (k, k + 1) per column.
void InterleaveRowPairs(float* packed, size_t count, size_t panel_width);

// `count` packed floats to `type` (F16Bits, BF16Bits or int8_t) at `out`,
// rounding to nearest even; every float within the type's range (see
// CheckStorable in validate.h).
// float16 or bfloat16 bits to floats (exact).
void WidenBits(const uint16_t* bits, size_t count, WeightType type, float* out);

// A row of `count` floats (finite) quantized as an int8 KV cache holds it
// (kv_cache.h): *scale = max |x| / 127, at least the smallest positive
// float and one ulp less where 127 times it would overflow (1 for a row of
// zeros); q = x / *scale rounded to nearest even, within [-127, 127].
void QuantizeInt8Row(const float* x, size_t count, int8_t* q, float* scale);
// `count` int8 elements from a row's first on, in rows of `row` elements
// with one scale each, as floats q * scale.
void DequantizeInt8Rows(const int8_t* q, const float* scales, size_t count, size_t row,
                        float* out);

void NarrowPacked(const float* packed, size_t count, WeightType type, void* out);

}  // namespace simd_attention
