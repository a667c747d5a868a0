// The bytes the C++ side holds on the wasm heap, counted where they are
// allocated: every operator new and delete of the module (the library's
// buffers, Embind's objects and strings) goes through here, and
// memoryStats() reports the sum as allocatedBytes. The allocator cannot
// tell it exactly: emmalloc's mallinfo counts the headers of free regions
// too, and a live block's usable size can grow when it absorbs a sliver
// next to it, so both move with how the free space happens to be split.
// Each block carries the size it was asked for in a prefix instead (16
// bytes: the library allocates few blocks, most of them large).
#include "allocation_counter.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace simd_attention::bindings {
namespace {

// Atomic for the threaded builds, whose pool threads may allocate too.
std::atomic<size_t> allocated_bytes{0};

// The prefix keeps the block's alignment (max_align_t's, or the one asked)
// and holds, right before the block, its size and the prefix's length.
static_assert(2 * sizeof(size_t) <= alignof(std::max_align_t));
size_t PrefixBytes(size_t alignment) {
  return alignment > alignof(std::max_align_t) ? alignment : alignof(std::max_align_t);
}

// Blocks of at least this many bytes (weights, KV caches, workspaces) start
// on a 64-byte cache line. malloc gives 8-byte alignment here, and a
// stream of 16-byte vector loads from an address 8 past a multiple of 16
// splits every fourth load across two cache lines: a decoding step (D1),
// which streams its weights and cache, ran 5-10% slower or not depending
// on where the heap happened to place them.
constexpr size_t kLineAlignedBytes = 1024;
constexpr size_t kCacheLine = 64;

void* Allocate(size_t size, size_t alignment) {
  if (size >= kLineAlignedBytes && alignment < kCacheLine) alignment = kCacheLine;
  const size_t prefix = PrefixBytes(alignment);
  if (size > SIZE_MAX - 2 * prefix) return nullptr;
  void* block = prefix == alignof(std::max_align_t)
                    ? std::malloc(prefix + size)
                    : std::aligned_alloc(prefix, (prefix + size + prefix - 1) / prefix * prefix);
  if (block == nullptr) return nullptr;
  char* p = static_cast<char*>(block) + prefix;
  reinterpret_cast<size_t*>(p)[-1] = size;
  reinterpret_cast<size_t*>(p)[-2] = prefix;
  allocated_bytes.fetch_add(size, std::memory_order_relaxed);
  return p;
}

void Release(void* p) {
  if (p == nullptr) return;
  const size_t* header = static_cast<size_t*>(p);
  allocated_bytes.fetch_sub(header[-1], std::memory_order_relaxed);
  std::free(static_cast<char*>(p) - header[-2]);
}

void* AllocateOrThrow(size_t size, size_t alignment) {
  void* p = Allocate(size, alignment);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

size_t AllocatedBytes() { return allocated_bytes.load(std::memory_order_relaxed); }

}  // namespace simd_attention::bindings

using simd_attention::bindings::Allocate;
using simd_attention::bindings::AllocateOrThrow;
using simd_attention::bindings::Release;

void* operator new(size_t n) { return AllocateOrThrow(n, 0); }
void* operator new[](size_t n) { return AllocateOrThrow(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return AllocateOrThrow(n, size_t(a)); }
void* operator new[](size_t n, std::align_val_t a) { return AllocateOrThrow(n, size_t(a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return Allocate(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return Allocate(n, 0); }
void operator delete(void* p) noexcept { Release(p); }
void operator delete[](void* p) noexcept { Release(p); }
void operator delete(void* p, size_t) noexcept { Release(p); }
void operator delete[](void* p, size_t) noexcept { Release(p); }
void operator delete(void* p, std::align_val_t) noexcept { Release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { Release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { Release(p); }
