#include "checked_size.h"

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
  s += " = " + ProductString(count) + (element_bytes == 1 ? " bytes" : " floats");
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
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0) return "0";
  std::string s = x < 0 ? "-" : "";
  x = std::fabs(x);
  int exponent = static_cast<int>(std::floor(std::log10(x)));
  long long digits = std::llround(x / std::pow(10.0, exponent - 5));  // 6 significant
  if (digits >= 1000000) {  // rounded up to the next power of ten
    digits /= 10;
    ++exponent;
  }
  std::string d = std::to_string(digits);
  if (exponent < -4 || exponent >= 6) {
    d.erase(d.find_last_not_of('0') + 1);
    s += d.substr(0, 1);
    if (d.size() > 1) s += "." + d.substr(1);
    s += exponent < 0 ? "e-" : "e+";
    const int e = std::abs(exponent);
    return s + (e < 10 ? "0" : "") + std::to_string(e);
  }
  // Fixed: the point after exponent + 1 digits (zeros before for e < 0).
  if (exponent < 0) d = std::string(size_t(-exponent), '0') + d;
  const size_t point = size_t(std::max(exponent, 0)) + 1;
  std::string whole = d.substr(0, point), fraction = d.substr(point);
  fraction.erase(fraction.find_last_not_of('0') + 1);
  return s + whole + (fraction.empty() ? "" : "." + fraction);
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
