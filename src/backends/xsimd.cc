// xsimd backend, one architecture per compilation: CMake builds this file
// once per ISA with that ISA's -m flags and SA_XSIMD_<ISA> defined (xsimd
// selects instructions by compiler flags, not by attributes). Each object
// exports XsimdKernelTable_<isa>(); xsimd_tables.cc picks among them.
#include <type_traits>

// GCC 12 reports its own AVX-512 intrinsics' _mm512_undefined_*() (a
// self-initialized variable) as used uninitialized once they are inlined
// (GCC bug 105593, fixed in 13); the pragma must precede <immintrin.h>.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <xsimd/xsimd.hpp>

#include "kernels/kernels_prelude.h"

#if defined(SA_XSIMD_AVX512BW)
#define SA_XSIMD_ISA avx512bw
#define SA_XSIMD_ARCH xsimd::avx512bw
#elif defined(SA_XSIMD_AVX2)
#define SA_XSIMD_ISA avx2
#define SA_XSIMD_ARCH xsimd::fma3<xsimd::avx2>
#elif defined(SA_XSIMD_SSE4_2)
#define SA_XSIMD_ISA sse4_2
#define SA_XSIMD_ARCH xsimd::sse4_2
#elif defined(SA_XSIMD_WASM)
#define SA_XSIMD_ISA wasm
#define SA_XSIMD_ARCH xsimd::wasm
#else
#error "define one SA_XSIMD_<ISA>"
#endif

#define SA_CONCAT_(a, b) a##b
#define SA_CONCAT(a, b) SA_CONCAT_(a, b)
#define SA_STRINGIFY_(a) #a
#define SA_STRINGIFY(a) SA_STRINGIFY_(a)

namespace simd_attention {
namespace SA_CONCAT(xsimd_, SA_XSIMD_ISA) {

// Row tails of the elementwise kernels, and what the backend's layer shares.
#include "simd/ops_scalar-inl.h"
#include "simd/ops_xsimd-inl.h"
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

}  // namespace SA_CONCAT(xsimd_, SA_XSIMD_ISA)

KernelTable SA_CONCAT(XsimdKernelTable_, SA_XSIMD_ISA)() {
  using namespace SA_CONCAT(xsimd_, SA_XSIMD_ISA);
  return MakeKernelTable<XsimdOps<SA_XSIMD_ARCH>>(
      "xsimd:" SA_STRINGIFY(SA_XSIMD_ISA), Backend::kXsimd);
}

TrainingKernels SA_CONCAT(XsimdTrainingKernel_, SA_XSIMD_ISA)() {
  using namespace SA_CONCAT(xsimd_, SA_XSIMD_ISA);
  return MakeTrainingKernels<XsimdOps<SA_XSIMD_ARCH>>();
}

}  // namespace simd_attention
