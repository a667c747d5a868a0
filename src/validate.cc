#include "validate.h"

#include <cmath>
#include <stdexcept>

namespace simd_attention {

std::string ShapeString(std::initializer_list<size_t> dims) {
  std::string s = "[";
  for (size_t d : dims) {
    if (s.size() > 1) s += ", ";
    s += std::to_string(d);
  }
  return s + "]";
}

void CheckLength(const char* what, size_t given,
                 std::initializer_list<size_t> shape) {
  size_t expected = 1;
  for (size_t d : shape) expected *= d;
  if (given != expected) {
    throw std::invalid_argument(std::string(what) + ": expected " +
                                std::to_string(expected) +
                                " values for shape " + ShapeString(shape) +
                                ", got " + std::to_string(given));
  }
}

void CheckEqual(const char* what, size_t given, size_t expected,
                const char* detail) {
  if (given != expected) {
    throw std::invalid_argument(std::string(what) + ": expected " +
                                std::to_string(expected) + " (" + detail +
                                "), got " + std::to_string(given));
  }
}

namespace {

void ThrowBadValue(const char* what, size_t index, float value) {
  throw std::invalid_argument(
      std::string(what) + ": element " + std::to_string(index) + " is " +
      (std::isnan(value) ? "NaN" : value > 0 ? "+Infinity" : "-Infinity"));
}

}  // namespace

void CheckFinite(const char* what, std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) ThrowBadValue(what, i, values[i]);
  }
}

void CheckMask(const char* what, std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i]) || values[i] == INFINITY) {
      ThrowBadValue(what, i, values[i]);
    }
  }
}

}  // namespace simd_attention
