// Where 4-bit weights (WeightType::kQ4) lie in a GEMM panel of `width`
// columns (kernels/gemm.h). K is cut into blocks of 32 rows, as GGUF q4_0
// cuts a row: each column's 32 weights of a block share one float16 scale
// d, and weight k of it is (q_k - 8) * d with 0 <= q_k <= 15. A block of
// the panel is 16 * width bytes of nibbles, then width float16 scales:
//   byte p * 2 * width + 2 * c + h (p < 8, h < 2) holds column c's q of
//   block row 2p + h in its low nibble and of row 2p + h + 16 in its high
//   nibble (GGUF pairs rows j and j + 16 in a byte the same way),
// so one load of 2 * lanes bytes gives the kernel (q4_gemm-inl.h) a K pair
// of lanes columns in its low nibbles and the pair 8 later in its high
// ones, each nibble an int16 lane of the int8 kernel's pairwise
// multiply-add. K is padded with zero weights to whole blocks.
//
// Blocks run along the packed rows: those of GGUF's rows, but for
// MultiHeadAttention's W_O where d_v is not a multiple of the table's lanes:
// there each head's rows are padded with zero rows to whole vectors (as the
// heads of Z are), and a block holds fewer heads' rows.
#pragma once

#include <cstddef>

namespace simd_attention {

constexpr size_t kQ4BlockRows = 32;
constexpr size_t kQ4BlockPairs = kQ4BlockRows / 2;

inline size_t Q4Blocks(size_t rows) { return (rows + kQ4BlockRows - 1) / kQ4BlockRows; }

// A block of a panel: 16 bytes of nibbles and a 2-byte scale per column
// (GGUF's 18 bytes per 32 weights).
inline size_t Q4BlockBytes(size_t width) { return (kQ4BlockRows / 2 + 2) * width; }

inline size_t Q4PanelBytes(size_t rows, size_t width) {
  return Q4Blocks(rows) * Q4BlockBytes(width);
}

}  // namespace simd_attention
