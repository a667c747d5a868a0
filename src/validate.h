// Argument checks shared by the public API: each throws
// std::invalid_argument whose message names the argument, what was expected
// and what was given (CheckComputed: std::range_error naming the
// computation). Expected lengths are products computed without wrapping.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>

namespace simd_attention {

// "[2, 10, 512]"
std::string ShapeString(std::initializer_list<size_t> dims);

// "what: expected N values for shape [..], got M"
void CheckLength(const char* what, size_t given,
                 std::initializer_list<size_t> shape);

// "what: expected D (detail), got G"
void CheckEqual(const char* what, size_t given, size_t expected,
                const char* detail);

// Rejects NaN and +-inf: "what: element i is NaN".
void CheckFinite(const char* what, std::span<const float> values);

// Rejects NaN and +inf; -inf is a valid additive mask entry.
void CheckMask(const char* what, std::span<const float> values);

// LayerNorm's epsilon: a finite number > 0 that float32 holds (1e40 is
// refused, not rounded to +inf): "what: expected a finite number > 0 ...".
void CheckEps(const char* what, double eps);

// Values computed from valid (finite) inputs that overflowed float32: throws
// std::range_error "what overflowed float32 (element i is +Infinity); hint".
// The caller's arguments were valid, so the message names the computation,
// never an argument, and says what is too large. Returns the largest |x|,
// found in the same pass.
double CheckComputed(const char* what, std::span<const float> values, const char* hint);

// The largest |x| of `values` (0 for none), in double: products of maxima
// are compared against float32's range without overflowing themselves.
double MaxAbs(std::span<const float> values);

}  // namespace simd_attention
