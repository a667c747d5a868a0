// Helpers shared by the tests: every kernel table this machine can run, and
// element-wise comparison with a useful failure message.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "dispatch/kernel_table.h"

namespace simd_attention::testing {

// Every target of every backend compiled in and supported by this CPU.
std::vector<const KernelTable*> AllKernelTables();

// gtest parameter name for a table: "highway_AVX3" etc.
std::string TableTestName(const KernelTable& table);

// Asserts |actual - expected| <= tolerance everywhere; reports the worst.
::testing::AssertionResult AllNear(std::span<const float> actual,
                                   std::span<const float> expected,
                                   double tolerance);

}  // namespace simd_attention::testing
