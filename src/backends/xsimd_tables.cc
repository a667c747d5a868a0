// The xsimd ISAs this build compiled (SA_XSIMD_HAVE_<ISA>), filtered by what
// the CPU supports, best first. Compiled without ISA flags: it only asks.
#include <vector>
#include <xsimd/xsimd.hpp>

#include "backends/backend_tables.h"

namespace simd_attention {

KernelTable XsimdKernelTable_avx512bw();
KernelTable XsimdKernelTable_avx2();
KernelTable XsimdKernelTable_sse4_2();
KernelTable XsimdKernelTable_wasm();
TrainingKernels XsimdTrainingKernel_avx512bw();
TrainingKernels XsimdTrainingKernel_avx2();
TrainingKernels XsimdTrainingKernel_sse4_2();
TrainingKernels XsimdTrainingKernel_wasm();

#if SA_XSIMD_HAVE_WASM
// Two plain calls, so that a program that never trains links no training
// kernel.
std::vector<KernelTable> XsimdKernelTables() { return {XsimdKernelTable_wasm()}; }
std::vector<TrainingKernels> XsimdTrainingKernels() { return {XsimdTrainingKernel_wasm()}; }
#else
// f(kernel table, training kernels) of each ISA the CPU runs, best first.
template <class F>
void ForEachSupported(F&& f) {
  const auto cpu = xsimd::available_architectures();
#if SA_XSIMD_HAVE_AVX512BW
  if (cpu.avx512bw) f(&XsimdKernelTable_avx512bw, &XsimdTrainingKernel_avx512bw);
#endif
#if SA_XSIMD_HAVE_AVX2
  if (cpu.avx2 && cpu.fma3_avx2) f(&XsimdKernelTable_avx2, &XsimdTrainingKernel_avx2);
#endif
#if SA_XSIMD_HAVE_SSE4_2
  if (cpu.sse4_2) f(&XsimdKernelTable_sse4_2, &XsimdTrainingKernel_sse4_2);
#endif
  static_cast<void>(cpu);
}

std::vector<KernelTable> XsimdKernelTables() {
  std::vector<KernelTable> tables;
  ForEachSupported([&](auto table, auto) { tables.push_back(table()); });
  return tables;
}

std::vector<TrainingKernels> XsimdTrainingKernels() {
  std::vector<TrainingKernels> kernels;
  ForEachSupported([&](auto, auto training) { kernels.push_back(training()); });
  return kernels;
}
#endif

}  // namespace simd_attention
