// What the API throws besides the standard exceptions. Invalid arguments are
// std::invalid_argument naming the argument, what was expected and what was
// given; float32 overflow of valid inputs is std::range_error naming the
// computation; a request too large for the platform is SizeLimitError.
#pragma once

#include <stdexcept>

namespace simd_attention {

// A request whose size overflows or exceeds what can be allocated. The
// message names the buffer, its factors and the bytes requested.
class SizeLimitError : public std::length_error {
 public:
  using std::length_error::length_error;
};

}  // namespace simd_attention
