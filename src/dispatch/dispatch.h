// The one place that decides which kernels run: per backend, the tables of
// every target this build compiled and this CPU supports, best first.
#pragma once

#include <vector>

#include "dispatch/kernel_table.h"
#include "simd_attention/backend.h"

namespace simd_attention {

// Every usable target of `backend`, best first. Tests and benchmarks walk
// this list; throws std::invalid_argument if the backend is not compiled in.
const std::vector<KernelTable>& KernelTables(Backend backend);

// The training kernels of the target `kernels` belongs to (one of
// KernelTables' entries). Only the backward passes and the optimizers call
// it, so a program that never trains links no training kernel.
const TrainingKernels& TrainingKernelsFor(const KernelTable& kernels);

}  // namespace simd_attention
