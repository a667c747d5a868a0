// The per-value scans of validate.h: every input and computed value passes
// through them on every call, so they are compiled for speed (vectorized
// integer tests on the float bits) while the message code in validate.cc is
// compiled for size.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "checks/validate.h"

namespace simd_attention {

namespace {

const char* ValueName(float value) {
  return std::isnan(value) ? "NaN" : value > 0 ? "+Infinity" : "-Infinity";
}

void ThrowBadValue(std::string_view what, size_t index, float value) {
  throw std::invalid_argument(std::string(what) + ": element " + std::to_string(index) +
                              " is " + ValueName(value));
}

// Every input value is checked on every call, so the common case is one
// branch-free pass the compiler vectorizes (integer tests on the exponent
// bits); the offending index is looked for only after it fails.
bool AllFinite(std::span<const float> values) {
  uint32_t non_finite = 0;
  for (const float x : values) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    non_finite |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return non_finite == 0;
}

// |x| as bits orders like |x| itself, +inf is kExponentBits and every NaN
// lies above it: one integer max (vectorized) finds the largest magnitude
// and whether anything is not finite.
constexpr uint32_t kExponentBits = 0x7f800000u;

uint32_t MaxAbsBits(std::span<const float> values) {
  uint32_t m = 0;
  for (const float x : values) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    m = std::max(m, bits & 0x7fffffffu);
  }
  return m;
}

float BitsToFloat(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

}  // namespace

void CheckFinite(std::string_view what, std::span<const float> values) {
  if (AllFinite(values)) return;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) ThrowBadValue(what, i, values[i]);
  }
}

double CheckComputed(std::string_view what, std::span<const float> values, const char* hint) {
  const uint32_t max_bits = MaxAbsBits(values);
  if (max_bits < kExponentBits) return BitsToFloat(max_bits);
  size_t i = 0;
  while (std::isfinite(values[i])) ++i;  // there is one: max_bits says so
  throw std::range_error(std::string(what) + " overflowed float32 (element " +
                         std::to_string(i) + " is " + ValueName(values[i]) + "); " + hint);
}

void ComputedScan::Scan(const float* rows, size_t count, size_t ld, size_t width) {
  uint32_t m = 0;
  for (size_t r = 0; r < count; ++r) m = std::max(m, MaxAbsBits({rows + r * ld, width}));
  uint32_t seen = max_bits_.load(std::memory_order_relaxed);
  while (m > seen && !max_bits_.compare_exchange_weak(seen, m, std::memory_order_relaxed)) {
  }
}

double ComputedScan::Judge(std::string_view what, std::span<const float> all,
                           const char* hint) const {
  const uint32_t max_bits = max_bits_.load(std::memory_order_relaxed);
  return max_bits < kExponentBits ? BitsToFloat(max_bits) : CheckComputed(what, all, hint);
}

double MaxAbs(std::span<const float> values) {
  return BitsToFloat(std::min(MaxAbsBits(values), kExponentBits - 1));
}

void CheckMask(std::string_view what, std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i]) || values[i] == INFINITY) {
      ThrowBadValue(what, i, values[i]);
    }
  }
}

}  // namespace simd_attention
