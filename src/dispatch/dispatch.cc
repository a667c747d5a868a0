#include "dispatch/dispatch.h"

#include <stdexcept>
#include <string>

#include "backends/backend_tables.h"

namespace simd_attention {

std::vector<Backend> AvailableBackends() {
#if SIMD_ATTENTION_HAVE_XSIMD
  return {Backend::kHighway, Backend::kXsimd, Backend::kScalar};
#else
  return {Backend::kHighway, Backend::kScalar};
#endif
}

const std::vector<KernelTable>& KernelTables(Backend backend) {
  switch (backend) {
    case Backend::kHighway: {
      static const std::vector<KernelTable> tables = HighwayKernelTables();
      return tables;
    }
    case Backend::kXsimd: {
#if SIMD_ATTENTION_HAVE_XSIMD
      static const std::vector<KernelTable> tables = XsimdKernelTables();
      return tables;
#else
      throw std::invalid_argument(
          "backend 'xsimd' is not compiled into this build");
#endif
    }
    case Backend::kScalar: {
      static const std::vector<KernelTable> tables = ScalarKernelTables();
      return tables;
    }
  }
  throw std::invalid_argument("unknown backend " +
                              std::to_string(static_cast<int>(backend)));
}

const KernelTable& BestKernels(Backend backend) {
  return KernelTables(backend).front();
}

KernelsInfo DescribeKernels(const KernelTable& kernels) {
  return {kernels.backend, kernels.name, kernels.lanes};
}

}  // namespace simd_attention
