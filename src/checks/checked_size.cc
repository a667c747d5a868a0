#include "checks/checked_size.h"

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__EMSCRIPTEN__)
#include <emscripten/heap.h>
#include <malloc.h>
#else
#include <unistd.h>
#endif

namespace simd_attention {
namespace {

// The largest single allocation: std::vector holds at most PTRDIFF_MAX bytes.
constexpr uint64_t kMaxAllocationBytes =
    static_cast<uint64_t>(std::numeric_limits<ptrdiff_t>::max());

#if !defined(__EMSCRIPTEN__)
// Natively one buffer larger than the machine's memory cannot be used: with
// overcommit the allocation may even succeed and the process be killed when
// the buffer is first written. 0 if the system does not say.
uint64_t PhysicalMemoryBytes() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t{0};
  }();
  return bytes;
}
#endif

#if defined(__EMSCRIPTEN__)
// Below this, a request is let through without asking the allocator how
// much is in use (mallinfo walks the heap): the heap either has it or fails
// with std::bad_alloc without growing far.
constexpr uint64_t kSmallRequestBytes = uint64_t{16} << 20;
#endif

std::string Joined(std::initializer_list<Dim> dims, bool names) {
  std::string s;
  for (const Dim& d : dims) {
    if (!s.empty()) s += " * ";
    s += names ? std::string(d.name) : std::to_string(d.value);
  }
  return s;
}

[[noreturn]] void Refuse(const char* what, std::initializer_list<Dim> dims,
                         const Product& count, size_t element_bytes,
                         const std::string& limit) {
  std::string s = std::string(what) + ": " + Joined(dims, true);
  if (dims.size() > 1) s += " = " + Joined(dims, false);
  s += " = " + ProductString(count) +
       (element_bytes == 1 ? " bytes" : element_bytes == sizeof(float) ? " floats" : " elements");
  if (!count.overflow && element_bytes != 1) {
    s += " (" + BytesString(double(count.value) * double(element_bytes)) + ")";
  }
  throw SizeLimitError(s + " " + limit);
}

}  // namespace

Product ProductOf(std::initializer_list<size_t> dims) {
  Product p;
  for (const size_t d : dims) {
    if (__builtin_mul_overflow(p.value, uint64_t{d}, &p.value)) p.overflow = true;
  }
  if (p.overflow) p.value = 0;
  return p;
}

std::string ProductString(const Product& p) {
  return p.overflow ? "more than " + std::to_string(std::numeric_limits<uint64_t>::max())
                    : std::to_string(p.value);
}

std::string BytesString(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  // Six significant digits, so that a request and a limit a few MiB apart
  // read apart: "16 GiB", "1.99992 GiB".
  return NumberString(bytes) + " " + kUnits[unit];
}

std::string NumberString(double x) {
  if (x != x) return "NaN";
  char text[32];
  char* out = text;
  if (x < 0) {
    *out++ = '-';
    x = -x;
  }
  if (x > std::numeric_limits<double>::max()) return std::string(text, out) + "inf";
  if (x == 0) return "0";
  // x = m * 10^exponent with m in [1, 10), then 6 significant digits of m.
  int exponent = 0;
  for (; x >= 10; x /= 10) ++exponent;
  for (; x < 1; x *= 10) --exponent;
  long long m = std::llround(x * 1e5);
  if (m >= 1000000) {
    m /= 10;
    ++exponent;
  }
  char digits[6];
  for (int i = 5; i >= 0; --i, m /= 10) digits[i] = char('0' + m % 10);
  int n = 6;
  while (n > 1 && digits[n - 1] == '0') --n;
  const bool scientific = exponent < -4 || exponent >= 6;
  const int point = scientific ? 1 : exponent + 1;  // digits before the point
  if (point <= 0) {
    *out++ = '0';
    *out++ = '.';
    for (int i = point; i < 0; ++i) *out++ = '0';
  }
  for (int i = 0; i < std::max(n, point); ++i) {
    if (i == point && point > 0) *out++ = '.';
    *out++ = i < n ? digits[i] : '0';
  }
  if (scientific) {
    const int e = exponent < 0 ? -exponent : exponent;
    *out++ = 'e';
    *out++ = exponent < 0 ? '-' : '+';
    if (e >= 100) *out++ = char('0' + e / 100);
    *out++ = char('0' + e / 10 % 10);
    *out++ = char('0' + e % 10);
  }
  return std::string(text, out);
}

size_t CheckedCount(const char* what, std::initializer_list<Dim> dims,
                    size_t element_bytes) {
  Product count;
  for (const Dim& d : dims) {
    if (__builtin_mul_overflow(count.value, uint64_t{d.value}, &count.value)) {
      count.overflow = true;
    }
  }
  uint64_t bytes = 0;
  if (count.overflow ||
      __builtin_mul_overflow(count.value, uint64_t{element_bytes}, &bytes)) {
    if (count.overflow) count.value = 0;
    Refuse(what, dims, count, element_bytes, "overflows a 64-bit size");
  }
#if defined(__EMSCRIPTEN__)
  const uint64_t heap_max = emscripten_get_heap_max();
  if (bytes > heap_max) {
    Refuse(what, dims, count, element_bytes,
           "exceeds the " + BytesString(double(heap_max)) +
               " a wasm32 module can hold");
  }
  if (bytes > kSmallRequestBytes) {
    // Fail before the heap grows for a request it cannot satisfy: a grown
    // wasm memory never shrinks.
    const uint64_t in_use = mallinfo().uordblks;
    const uint64_t available = heap_max > in_use ? heap_max - in_use : 0;
    if (bytes > available) {
      Refuse(what, dims, count, element_bytes,
             "exceeds the " + BytesString(double(available)) +
                 " this module can still allocate (" + BytesString(double(in_use)) +
                 " of its " + BytesString(double(heap_max)) + " are in use)");
    }
  }
#else
  const uint64_t physical = PhysicalMemoryBytes();
  if (physical != 0 && bytes > physical) {
    Refuse(what, dims, count, element_bytes,
           "exceeds the " + BytesString(double(physical)) + " of memory this machine has");
  }
#endif
  if (bytes > kMaxAllocationBytes) {
    Refuse(what, dims, count, element_bytes,
           "exceeds the largest allocation this platform allows (" +
               BytesString(double(kMaxAllocationBytes)) + ")");
  }
  return static_cast<size_t>(count.value);
}

}  // namespace simd_attention
