#include "kernels/weight_packing.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

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

// IEEE binary16, round to nearest even; |f| <= 65504 (checked by the caller).
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

}  // namespace

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

void NarrowPacked(const float* packed, size_t count, WeightType type, void* out,
                  const char* what) {
  switch (type) {
    case WeightType::kF32:
      std::memcpy(out, packed, count * sizeof(float));
      return;
    case WeightType::kF16: {
      auto* h = static_cast<F16Bits*>(out);
      for (size_t i = 0; i < count; ++i) {
        if (!(std::fabs(packed[i]) <= 65504.0f)) {
          throw std::range_error(std::string(what) + ": " + std::to_string(packed[i]) +
                                 " is beyond float16's range (+-65504)");
        }
        h[i].bits = ToF16(packed[i]);
      }
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
  }
}

}  // namespace simd_attention
