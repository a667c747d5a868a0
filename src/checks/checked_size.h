// Sizes derived from the caller's dimensions, computed with overflow checks.
//
// Dimensions come from users (up to 2^32 - 1 each from JS), and their
// products wrap silently in size_t: in wasm32 it is 32 bits, so a KV cache of
// 2^29 tokens x 8 floats would allocate 0 bytes and the kernels would write
// past it. Every buffer whose size follows from user input is sized through
// CheckedCount, which multiplies in 64 bits with overflow detection and
// refuses what the platform cannot allocate, before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "simd_attention/errors.h"

namespace simd_attention {

// One factor of a size, named as the caller knows it ("maxLength").
struct Dim {
  const char* name;
  size_t value;
};

// The product of `dims`, exactly, or `overflow` past 2^64 - 1.
struct Product {
  uint64_t value = 1;
  bool overflow = false;
};
Product ProductOf(std::initializer_list<size_t> dims);

// "4294967296", or "more than 18446744073709551615" on overflow.
std::string ProductString(const Product& p);

// A number as %g writes it, 6 significant digits ("1e+20", "0.353553",
// "3.40282e+38"), without printf: its formatting code would add several kB
// to every .wasm for the few messages that print a double.
std::string NumberString(double x);

// The number of elements of a buffer [dims...] of `element_bytes` each.
// Throws SizeLimitError ("what: a * b = 2 * 3 = 6 floats (24 B) exceeds ...")
// if the product overflows, its bytes exceed the largest allocation the
// platform allows, or (wasm) the memory the module can still obtain. A count
// it returns is at most PTRDIFF_MAX, half of SIZE_MAX, so adding a small
// scratch size to it cannot wrap.
size_t CheckedCount(const char* what, std::initializer_list<Dim> dims,
                    size_t element_bytes = sizeof(float));

// Bytes as people read them: "24 B", "16 GiB", "1.5 MiB", "1.99992 GiB".
std::string BytesString(double bytes);

}  // namespace simd_attention
