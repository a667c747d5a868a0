// Bytes the module's C++ side holds on the wasm heap (allocation_counter.cc).
#pragma once

#include <cstddef>

namespace simd_attention::bindings {

size_t AllocatedBytes();

}  // namespace simd_attention::bindings
