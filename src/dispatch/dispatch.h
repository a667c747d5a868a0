// The one place that decides which kernels run: per backend, the tables of
// every target this build compiled and this CPU supports, best first.
#pragma once

#include <vector>

#include "backend.h"
#include "dispatch/kernel_table.h"

namespace simd_attention {

// Backends compiled into this build (a build option may leave xsimd out).
std::vector<Backend> AvailableBackends();

// Every usable target of `backend`, best first. Tests and benchmarks walk
// this list; throws std::invalid_argument if the backend is not compiled in.
const std::vector<KernelTable>& KernelTables(Backend backend);

// What a MultiHeadAttention uses unless told otherwise: the best target.
const KernelTable& BestKernels(Backend backend);

}  // namespace simd_attention
