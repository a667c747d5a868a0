// Which SIMD library runs the kernels. Every backend runs the same algorithm
// (src/kernels); they differ only in the vector layer under it (src/simd).
#pragma once

#include <string>
#include <string_view>

namespace simd_attention {

enum class Backend { kHighway, kXsimd, kScalar };

// "highway", "xsimd", "scalar".
const char* BackendName(Backend backend);

// Inverse of BackendName; throws std::invalid_argument naming the valid
// choices for anything else.
Backend ParseBackend(std::string_view name);

}  // namespace simd_attention
