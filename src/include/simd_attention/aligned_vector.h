// Storage that starts on a 64-byte cache line, for the buffers the kernels
// stream: packed weights, KV caches, attention workspaces. malloc aligns to
// 16 bytes (8 in wasm32), so a stream of vector loads from such a block can
// split loads across two cache lines: every 64-byte AVX-512 load from an
// address 16 past a line, every fourth 16-byte wasm load from 8 past one.
// A decoding step (D1, native, AVX-512) ran 9-16% faster with these aligned,
// in wasm 5-10%.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace simd_attention {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};

  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}  // NOLINT: rebinding

  // n is at most max_size() (std::vector checks), so n * sizeof(T) fits.
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlignment)); }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, kAlignment); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};

// The package's wasm modules align every block of 1 KiB or more in their
// own operator new (bindings/allocation_counter.cc), so there the plain
// vector serves: a second instantiation of each vector member cost every
// .wasm about 850 bytes.
#ifdef __EMSCRIPTEN__
template <class T>
using AlignedVector = std::vector<T>;
#else
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;
#endif

}  // namespace simd_attention
