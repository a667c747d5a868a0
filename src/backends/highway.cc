// Highway backend: the kernels instantiated once per Highway target
// (foreach_target), exported as one KernelTable per target.
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/highway.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/kernels_prelude.h"

HWY_BEFORE_NAMESPACE();
namespace simd_attention {
namespace HWY_NAMESPACE {

// Row tails of the elementwise kernels, and what the backend's layer shares.
#include "simd/ops_scalar-inl.h"
#include "simd/ops_highway-inl.h"
#include "kernels/copy-inl.h"
#include "kernels/exp-inl.h"
#include "kernels/gemm-inl.h"
#include "kernels/int8_gemm-inl.h"
#include "kernels/q4_gemm-inl.h"
#include "kernels/attention-inl.h"
#include "kernels/attention_backward-inl.h"
#include "kernels/rope-inl.h"
#include "kernels/elementwise-inl.h"
#include "kernels/optimizer-inl.h"
#include "kernels/kernel_table-inl.h"

KernelTable HighwayKernelTable() {
  // Highway's name of the target ("AVX2", "WASM"), alive as long as the table.
  static const std::string name = std::string("highway:") + hwy::TargetName(HWY_TARGET);
  return MakeKernelTable<HighwayOps>(name.c_str(), Backend::kHighway);
}

TrainingKernels HighwayTrainingKernel() { return MakeTrainingKernels<HighwayOps>(); }

}  // namespace HWY_NAMESPACE
}  // namespace simd_attention
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstdint>
#include <vector>

#include "backends/backend_tables.h"

namespace simd_attention {

#if HWY_COMPILE_ONLY_STATIC
std::vector<KernelTable> HighwayKernelTables() {
  return {HWY_STATIC_DISPATCH(HighwayKernelTable)()};
}

std::vector<TrainingKernels> HighwayTrainingKernels() {
  return {HWY_STATIC_DISPATCH(HighwayTrainingKernel)()};
}
#else
// foreach_target.h compiled HighwayKernelTable into namespace N_<target> for
// every target in HWY_TARGETS. Highway 1.0.3 has no HWY_VISIT_TARGETS to list
// them, so here they are, for every target it can generate.
struct CompiledTarget {
  int64_t target;
  KernelTable (*table)();
  TrainingKernels (*training)();
};
constexpr CompiledTarget kCompiledTargets[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {HWY_AVX3_DL, &N_AVX3_DL::HighwayKernelTable, &N_AVX3_DL::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_AVX3
    {HWY_AVX3, &N_AVX3::HighwayKernelTable, &N_AVX3::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_AVX2
    {HWY_AVX2, &N_AVX2::HighwayKernelTable, &N_AVX2::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_SSE4
    {HWY_SSE4, &N_SSE4::HighwayKernelTable, &N_SSE4::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {HWY_SSSE3, &N_SSSE3::HighwayKernelTable, &N_SSSE3::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_SVE2_128
    {HWY_SVE2_128, &N_SVE2_128::HighwayKernelTable, &N_SVE2_128::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_SVE_256
    {HWY_SVE_256, &N_SVE_256::HighwayKernelTable, &N_SVE_256::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_SVE2
    {HWY_SVE2, &N_SVE2::HighwayKernelTable, &N_SVE2::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_SVE
    {HWY_SVE, &N_SVE::HighwayKernelTable, &N_SVE::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_NEON
    {HWY_NEON, &N_NEON::HighwayKernelTable, &N_NEON::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_RVV
    {HWY_RVV, &N_RVV::HighwayKernelTable, &N_RVV::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_WASM_EMU256
    {HWY_WASM_EMU256, &N_WASM_EMU256::HighwayKernelTable, &N_WASM_EMU256::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_WASM
    {HWY_WASM, &N_WASM::HighwayKernelTable, &N_WASM::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_EMU128
    {HWY_EMU128, &N_EMU128::HighwayKernelTable, &N_EMU128::HighwayTrainingKernel},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {HWY_SCALAR, &N_SCALAR::HighwayKernelTable, &N_SCALAR::HighwayTrainingKernel},
#endif
};

// The list holds exactly HWY_TARGETS, best (lowest bit) first.
constexpr bool ListsEveryTargetBestFirst() {
  int64_t listed = 0;
  for (const CompiledTarget& t : kCompiledTargets) {
    if (t.target <= listed) return false;  // not above every earlier bit
    listed |= t.target;
  }
  return listed == HWY_TARGETS;
}
static_assert(ListsEveryTargetBestFirst(),
              "kCompiledTargets must list every target of HWY_TARGETS, best first");

// What `make` gives for each target this CPU supports, best first.
template <class T>
std::vector<T> ForSupportedTargets(T (*CompiledTarget::*make)()) {
  const int64_t supported = hwy::SupportedTargets();
  std::vector<T> out;
  for (const CompiledTarget& t : kCompiledTargets) {
    if (supported & t.target) out.push_back((t.*make)());
  }
  return out;
}

std::vector<KernelTable> HighwayKernelTables() {
  return ForSupportedTargets(&CompiledTarget::table);
}

std::vector<TrainingKernels> HighwayTrainingKernels() {
  return ForSupportedTargets(&CompiledTarget::training);
}
#endif  // HWY_COMPILE_ONLY_STATIC

}  // namespace simd_attention
#endif  // HWY_ONCE
