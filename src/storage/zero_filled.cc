#include "storage/zero_filled.h"

#include <cstddef>
#include <iterator>

namespace simd_attention {
namespace {

// n zeros as an iterator range. vector::resize's out-of-line parts are
// instantiated in the -Os files too, and the link keeps one copy of each,
// possibly theirs; assign() from an iterator type of this file alone is
// instantiated, and inlined into a memset, here only.
struct Zeros {
  using iterator_category = std::forward_iterator_tag;
  using value_type = float;
  using difference_type = std::ptrdiff_t;
  using pointer = const float*;
  using reference = float;
  size_t i = 0;
  float operator*() const { return 0.0f; }
  Zeros& operator++() {
    ++i;
    return *this;
  }
  Zeros operator++(int) {
    Zeros old = *this;
    ++i;
    return old;
  }
  bool operator==(const Zeros& o) const { return i == o.i; }
  bool operator!=(const Zeros& o) const { return i != o.i; }
};

}  // namespace

void ZeroFilled(std::vector<float>& v, size_t n) { v.assign(Zeros{0}, Zeros{n}); }

}  // namespace simd_attention
