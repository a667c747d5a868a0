// Argument checks shared by the public API: each throws
// std::invalid_argument whose message names the argument, what was expected
// and what was given.
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

}  // namespace simd_attention
