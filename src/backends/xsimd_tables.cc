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

std::vector<KernelTable> XsimdKernelTables() {
  std::vector<KernelTable> tables;
#if SA_XSIMD_HAVE_WASM
  tables.push_back(XsimdKernelTable_wasm());
#else
  const auto cpu = xsimd::available_architectures();
#if SA_XSIMD_HAVE_AVX512BW
  if (cpu.avx512bw) tables.push_back(XsimdKernelTable_avx512bw());
#endif
#if SA_XSIMD_HAVE_AVX2
  if (cpu.avx2 && cpu.fma3_avx2) tables.push_back(XsimdKernelTable_avx2());
#endif
#if SA_XSIMD_HAVE_SSE4_2
  if (cpu.sse4_2) tables.push_back(XsimdKernelTable_sse4_2());
#endif
#endif
  return tables;
}

}  // namespace simd_attention
