// 4-bit weights packed into the panels of q4_layout.h from float32, with
// GGUF q4_0's rounding, or from blocks already quantized, and read back
// (for tests and references).
#pragma once

#include <cstddef>
#include <cstdint>

namespace simd_attention {

// w [rows, cols] (row-major, X @ W layout) into q4 panels of `width`
// columns at `out` (PanelBytes(WeightType::kQ4, rows, width) per panel).
// Each column's block of 32 rows (zeros past the last row) is quantized as
// ggml's quantize_row_q4_0_ref quantizes a block: m its largest-magnitude
// weight (signed), d = m / -8, q = min(15, floor(w / d + 8.5)) (w times
// 1 / d, 0 where d is 0), d stored as float16 (nearest even). Every |w| at
// most 8 * 65504, so that d is finite (CheckStorable with kQ4's largest).
void PackQ4(const float* w, size_t rows, size_t cols, size_t width, uint8_t* out);

// Blocks already quantized into q4 panels, as they are: q [rows, cols]
// holds each weight's q - 8 (an integer in [-8, 7], as a float) and d
// [Q4Blocks(rows), cols] each column's block scales (float16 values, as
// floats). rows is a whole number of blocks.
void PackQ4Blocks(const float* q, const float* d, size_t rows, size_t cols, size_t width,
                  uint8_t* out);

// The weights q4 panels hold, (q - 8) * d, as w [rows, cols].
void UnpackQ4(const uint8_t* packed, size_t rows, size_t cols, size_t width, float* w);

}  // namespace simd_attention
