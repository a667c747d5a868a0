// What each backend's instantiation file exports to dispatch.cc: the tables
// of every target it compiled and this CPU supports, best first.
#pragma once

#include <vector>

#include "dispatch/kernel_table.h"

namespace simd_attention {

std::vector<KernelTable> HighwayKernelTables();
std::vector<KernelTable> XsimdKernelTables();
std::vector<KernelTable> ScalarKernelTables();
// The same targets' training kernels, in the same order.
std::vector<TrainingKernels> HighwayTrainingKernels();
std::vector<TrainingKernels> XsimdTrainingKernels();
std::vector<TrainingKernels> ScalarTrainingKernels();

}  // namespace simd_attention
