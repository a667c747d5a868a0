// Scalar backend: the same kernels with one-float "vectors". A portable
// baseline and a check that the algorithm does not depend on a SIMD width.
#include <vector>

#include "backends/backend_tables.h"
#include "kernels/kernels_prelude.h"

namespace simd_attention {
namespace scalar {

#include "simd/ops_scalar-inl.h"
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

}  // namespace scalar

std::vector<KernelTable> ScalarKernelTables() {
  return {scalar::MakeKernelTable<scalar::ScalarOps>("scalar", Backend::kScalar)};
}

std::vector<TrainingKernels> ScalarTrainingKernels() {
  return {scalar::MakeTrainingKernels<scalar::ScalarOps>()};
}

}  // namespace simd_attention
