// Highway backend: the kernels instantiated once per Highway target
// (foreach_target), exported as one KernelTable per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/highway.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/kernels_prelude.h"

HWY_BEFORE_NAMESPACE();
namespace simd_attention {
namespace HWY_NAMESPACE {

#include "simd/ops_highway-inl.h"
#include "simd/ops_scalar-inl.h"  // row tails of the elementwise kernels
#include "kernels/copy-inl.h"
#include "kernels/exp-inl.h"
#include "kernels/gemm-inl.h"
#include "kernels/attention-inl.h"
#include "kernels/elementwise-inl.h"
#include "kernels/kernel_table-inl.h"

KernelTable HighwayKernelTable() {
  return MakeKernelTable<HighwayOps>(
#if HWY_TARGET == HWY_AVX3_DL
      "highway:AVX3_DL",
#elif HWY_TARGET == HWY_AVX3
      "highway:AVX3",
#elif HWY_TARGET == HWY_AVX2
      "highway:AVX2",
#elif HWY_TARGET == HWY_SSE4
      "highway:SSE4",
#elif HWY_TARGET == HWY_SSSE3
      "highway:SSSE3",
#elif HWY_TARGET == HWY_WASM
      "highway:WASM",
#elif HWY_TARGET == HWY_EMU128
      "highway:EMU128",
#else
      "highway:SCALAR",
#endif
      Backend::kHighway);
}

}  // namespace HWY_NAMESPACE
}  // namespace simd_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <vector>

#include "backends/backend_tables.h"

namespace simd_attention {

HWY_EXPORT(HighwayKernelTable);

std::vector<KernelTable> HighwayKernelTables() {
#if HWY_COMPILE_ONLY_STATIC
  return {HWY_STATIC_DISPATCH(HighwayKernelTable)()};
#else
  // Dynamic dispatch picks the best of the supported targets; narrowing the
  // supported set one target at a time yields each target's table.
  std::vector<KernelTable> tables;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    tables.push_back(HWY_DYNAMIC_DISPATCH(HighwayKernelTable)());
  }
  hwy::SetSupportedTargetsForTest(0);
  return tables;
#endif
}

}  // namespace simd_attention
#endif  // HWY_ONCE
