// Which SIMD library runs the kernels. Every backend runs the same algorithm
// (src/kernels); they differ only in the vector layer under it (src/simd).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "simd_attention/traits_table.h"

namespace simd_attention {

enum class Backend { kHighway, kXsimd, kScalar };

using BackendTraits = NamedValue<Backend>;

// config.backend in JavaScript (BackendName), in the order messages list them.
inline constexpr BackendTraits kBackends[] = {
    {Backend::kHighway, "highway"},
    {Backend::kXsimd, "xsimd"},
    {Backend::kScalar, "scalar"},
};

constexpr const BackendTraits& Traits(Backend b) { return RowFor(kBackends, b); }

static_assert(RowsAreExactly(kBackends, {Backend::kHighway, Backend::kXsimd, Backend::kScalar}),
              "kBackends: one row per Backend and name");

// "highway", "xsimd", "scalar".
const char* BackendName(Backend backend);

// Inverse of BackendName; throws std::invalid_argument naming the valid
// choices for anything else.
Backend ParseBackend(std::string_view name);

// Backends compiled into this build (a build option may leave xsimd out).
std::vector<Backend> AvailableBackends();

// The kernels of one SIMD target of one backend, e.g. Highway's AVX2 code.
// Opaque here (src/dispatch/kernel_table.h); obtained from BestKernels and
// passed to the constructors that take one.
struct KernelTable;

// What a new object of `backend` runs on unless told otherwise: the best
// target this CPU supports. Throws std::invalid_argument if the backend is
// not compiled in.
const KernelTable& BestKernels(Backend backend);

struct KernelsInfo {
  Backend backend;
  const char* name;  // "highway:AVX2", "xsimd:avx2", "scalar"
  size_t lanes;      // floats per vector
};
KernelsInfo DescribeKernels(const KernelTable& kernels);

}  // namespace simd_attention
