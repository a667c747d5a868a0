#include "kernels/q4_packing.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/q4_layout.h"
#include "kernels/weight_packing.h"

namespace simd_attention {
namespace {

// Byte of a panel block holding (block row k, column c)'s nibble: the low
// one for k < 16, the high one for k >= 16 (q4_layout.h).
size_t NibbleByte(size_t k, size_t c, size_t width) {
  return (k % kQ4BlockPairs) / 2 * 2 * width + 2 * c + k % 2;
}

// Column c of a panel block: its 32 q (0..15) and its scale d.
void StoreBlockColumn(const uint8_t* q, float d, size_t c, size_t width, uint8_t* block) {
  for (size_t k = 0; k < kQ4BlockRows; ++k) {
    block[NibbleByte(k, c, width)] |= k < kQ4BlockPairs ? q[k] : q[k] << 4;
  }
  NarrowPacked(&d, 1, WeightType::kF16, block + kQ4BlockPairs * width + 2 * c);
}

}  // namespace

void PackQ4(const float* w, size_t rows, size_t cols, size_t width, uint8_t* out) {
  const size_t panels = (cols + width - 1) / width, blocks = Q4Blocks(rows);
  std::memset(out, 0, panels * Q4PanelBytes(rows, width));
  for (size_t p = 0; p < panels; ++p) {
    for (size_t b = 0; b < blocks; ++b) {
      uint8_t* block = out + (p * blocks + b) * Q4BlockBytes(width);
      for (size_t c = 0; c < width; ++c) {
        const size_t col = p * width + c;
        float x[kQ4BlockRows] = {};
        for (size_t k = 0; k < kQ4BlockRows && col < cols && b * kQ4BlockRows + k < rows; ++k) {
          x[k] = w[(b * kQ4BlockRows + k) * cols + col];
        }
        float largest = 0, signed_largest = 0;
        for (const float v : x) {
          if (largest < std::fabs(v)) {
            largest = std::fabs(v);
            signed_largest = v;
          }
        }
        const float d = signed_largest / -8, inverse = d != 0 ? 1.0f / d : 0.0f;
        uint8_t q[kQ4BlockRows];
        for (size_t k = 0; k < kQ4BlockRows; ++k) {
          // floor by truncation, as ggml: x * inverse + 8.5 >= 0 up to rounding.
          q[k] = static_cast<uint8_t>(std::clamp(static_cast<int>(x[k] * inverse + 8.5f), 0, 15));
        }
        StoreBlockColumn(q, d, c, width, block);
      }
    }
  }
}

void PackQ4Blocks(const float* q, const float* d, size_t rows, size_t cols, size_t width,
                  uint8_t* out) {
  const size_t panels = (cols + width - 1) / width, blocks = Q4Blocks(rows);
  std::memset(out, 0, panels * Q4PanelBytes(rows, width));
  // A panel's columns past cols as PackQ4 leaves them: q 8, d 0.
  for (size_t col = 0; col < panels * width; ++col) {
    for (size_t b = 0; b < blocks; ++b) {
      uint8_t nibbles[kQ4BlockRows];
      for (size_t k = 0; k < kQ4BlockRows; ++k) {
        nibbles[k] = col < cols ? static_cast<uint8_t>(q[(b * kQ4BlockRows + k) * cols + col] + 8)
                                : 8;
      }
      StoreBlockColumn(nibbles, col < cols ? d[b * cols + col] : 0.0f, col % width, width,
                       out + (col / width * blocks + b) * Q4BlockBytes(width));
    }
  }
}

void UnpackQ4(const uint8_t* packed, size_t rows, size_t cols, size_t width, float* w) {
  const size_t blocks = Q4Blocks(rows);
  for (size_t col = 0; col < cols; ++col) {
    const size_t c = col % width;
    for (size_t row = 0; row < rows; ++row) {
      const size_t k = row % kQ4BlockRows;
      const uint8_t* block =
          packed + (col / width * blocks + row / kQ4BlockRows) * Q4BlockBytes(width);
      uint16_t bits;
      std::memcpy(&bits, block + kQ4BlockPairs * width + 2 * c, 2);
      float d;
      WidenBits(&bits, 1, WeightType::kF16, &d);
      const uint8_t byte = block[NibbleByte(k, c, width)];
      const int q = k < kQ4BlockPairs ? byte & 15 : byte >> 4;
      w[row * cols + col] = static_cast<float>(q - 8) * d;
    }
  }
}

}  // namespace simd_attention
