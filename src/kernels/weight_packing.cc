#include "kernels/weight_packing.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/gemm.h"

namespace simd_attention {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint16_t ToBF16(float f) {
  const uint32_t u = Bits(f);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// IEEE binary16, round to nearest even; |f| <= 65504 (CheckStorable).
uint16_t ToF16(float f) {
  const uint32_t u = Bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const float a = std::fabs(f);
  if (a < 0x1p-14f) {  // subnormal half: a multiple of 2^-24
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 0x1p24f)));
  }
  const uint32_t au = Bits(a);
  // Rebias 127 -> 15 and drop 13 mantissa bits, rounding to nearest even.
  const uint32_t rounded = au + 0xfffu + ((au >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

// IEEE binary16 to float, exact (infinities and NaNs too, for the caller's
// finiteness check to name).
float FromF16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = float(mantissa) * 0x1p-24f;
  } else if (exponent == 0x1fu) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    const uint32_t u = ((exponent + 112u) << 23) | (mantissa << 13);
    std::memcpy(&magnitude, &u, 4);
  }
  uint32_t u;
  std::memcpy(&u, &magnitude, 4);
  u |= sign;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

void WidenBits(const uint16_t* bits, size_t count, WeightType type, float* out) {
  for (size_t i = 0; i < count; ++i) {
    if (type == WeightType::kF16) {
      out[i] = FromF16(bits[i]);
    } else {
      const uint32_t u = uint32_t(bits[i]) << 16;
      std::memcpy(out + i, &u, 4);
    }
  }
}

void Int8ColumnScales(const float* w, size_t k, size_t n, float* scales) {
  for (size_t j = 0; j < n; ++j) {
    float largest = 0;
    for (size_t kk = 0; kk < k; ++kk) largest = std::max(largest, std::fabs(w[kk * n + j]));
    scales[j] = largest > 0 ? largest / 127.0f : 1.0f;
  }
}

void QuantizeColumns(const float* w, size_t k, size_t n, const float* scales, float* q) {
  for (size_t kk = 0; kk < k; ++kk) {
    for (size_t j = 0; j < n; ++j) {
      q[kk * n + j] = std::clamp(std::nearbyint(w[kk * n + j] / scales[j]), -127.0f, 127.0f);
    }
  }
}

void QuantizeInt8Row(const float* x, size_t count, int8_t* q, float* scale) {
  float largest = 0;
  for (size_t i = 0; i < count; ++i) largest = std::max(largest, std::fabs(x[i]));
  *scale = largest > 0 ? std::max(largest / 127.0f, std::numeric_limits<float>::denorm_min())
                       : 1.0f;
  // The largest value held, 127 * scale, stays finite: a scale that rounded
  // up past FLT_MAX / 127 steps down one ulp (x / scale then clamps to 127).
  if (!(127.0f * *scale <= std::numeric_limits<float>::max())) {
    *scale = std::nextafter(*scale, 0.0f);
  }
  // Rounded to nearest even by adding and taking away 1.5 * 2^23, which
  // leaves no fraction bits for |y| < 2^22 (std::nearbyint is a library
  // call in wasm: 10% of a decoding step's time there).
  constexpr float kRound = 0x1.8p23f;
  for (size_t i = 0; i < count; ++i) {
    const float y = std::clamp(x[i] / *scale, -127.0f, 127.0f);
    q[i] = static_cast<int8_t>((y + kRound) - kRound);
  }
}

void DequantizeInt8Rows(const int8_t* q, const float* scales, size_t count, size_t row,
                        float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = float(q[i]) * scales[i / row];
}

void InterleaveRowPairs(float* packed, size_t count, size_t panel_width) {
  std::vector<float> pair(2 * panel_width);
  for (float* rows = packed; rows < packed + count; rows += 2 * panel_width) {
    for (size_t c = 0; c < panel_width; ++c) {
      pair[2 * c] = rows[c];
      pair[2 * c + 1] = rows[panel_width + c];
    }
    std::copy(pair.begin(), pair.end(), rows);
  }
}

void NarrowPacked(const float* packed, size_t count, WeightType type, void* out) {
  switch (type) {
    case WeightType::kF32:
      std::memcpy(out, packed, count * sizeof(float));
      return;
    case WeightType::kF16: {
      auto* h = static_cast<F16Bits*>(out);
      for (size_t i = 0; i < count; ++i) h[i].bits = ToF16(packed[i]);
      return;
    }
    case WeightType::kBF16: {
      auto* h = static_cast<BF16Bits*>(out);
      for (size_t i = 0; i < count; ++i) h[i].bits = ToBF16(packed[i]);
      return;
    }
    case WeightType::kInt8: {
      auto* q = static_cast<int8_t*>(out);
      for (size_t i = 0; i < count; ++i) q[i] = static_cast<int8_t>(packed[i]);
      return;
    }
    case WeightType::kQ4:  // blocks quantized from the floats by PackQ4 (q4_packing.h)
      return;
  }
}

}  // namespace simd_attention
