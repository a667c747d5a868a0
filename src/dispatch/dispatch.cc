#include "dispatch/dispatch.h"

#include <stdexcept>
#include <string>

#include "backends/backend_tables.h"

namespace simd_attention {

// Why a backend is missing from this build, after its name in the message.
#if defined(__EMSCRIPTEN_PTHREADS__)
#define SA_NOT_COMPILED \
  " is not compiled into this build (the threaded wasm builds carry only the highway backend)"
#elif defined(__EMSCRIPTEN__)
#define SA_NOT_COMPILED                                                                 \
  " is not compiled into this build (every wasm build carries the highway backend; only " \
  "the SIMD build has xsimd, only the non-SIMD build has scalar)"
#else
#define SA_NOT_COMPILED " is not compiled into this build"
#endif

namespace {

#if SIMD_ATTENTION_HAVE_XSIMD
constexpr bool kHaveXsimd = true;
#else
constexpr bool kHaveXsimd = false;
#endif
#if SIMD_ATTENTION_HAVE_SCALAR
constexpr bool kHaveScalar = true;
#else
constexpr bool kHaveScalar = false;
#endif

constexpr bool Compiled(Backend backend) {
  switch (backend) {  // no default: -Werror=switch names a backend left out
    case Backend::kHighway:
      return true;
    case Backend::kXsimd:
      return kHaveXsimd;
    case Backend::kScalar:
      return kHaveScalar;
  }
  return false;
}

}  // namespace

std::vector<Backend> AvailableBackends() {
  Backend compiled[std::size(kBackends)];
  size_t n = 0;
  for (const BackendTraits& b : kBackends) {
    if (Compiled(b.value)) compiled[n++] = b.value;
  }
  return std::vector<Backend>(compiled, compiled + n);
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
      throw std::invalid_argument("backend 'xsimd'" SA_NOT_COMPILED);
#endif
    }
    case Backend::kScalar: {
#if SIMD_ATTENTION_HAVE_SCALAR
      static const std::vector<KernelTable> tables = ScalarKernelTables();
      return tables;
#else
      throw std::invalid_argument("backend 'scalar'" SA_NOT_COMPILED);
#endif
    }
  }
  throw std::invalid_argument("backend: not one of the Backend enumerators");
}

const TrainingKernels& TrainingKernelsFor(const KernelTable& kernels) {
  // The backends list a target's training kernels at its table's index.
  static const std::vector<TrainingKernels> highway = HighwayTrainingKernels();
#if SIMD_ATTENTION_HAVE_XSIMD
  static const std::vector<TrainingKernels> xsimd = XsimdTrainingKernels();
#endif
#if SIMD_ATTENTION_HAVE_SCALAR
  static const std::vector<TrainingKernels> scalar = ScalarTrainingKernels();
#endif
  const std::vector<KernelTable>& tables = KernelTables(kernels.backend);
  const std::vector<TrainingKernels>* training = &highway;
#if SIMD_ATTENTION_HAVE_XSIMD
  if (kernels.backend == Backend::kXsimd) training = &xsimd;
#endif
#if SIMD_ATTENTION_HAVE_SCALAR
  if (kernels.backend == Backend::kScalar) training = &scalar;
#endif
  for (size_t i = 0; i < tables.size(); ++i) {
    if (&tables[i] == &kernels) return (*training)[i];
  }
  throw std::logic_error(std::string("TrainingKernelsFor: the kernel table ") + kernels.name +
                         " is not one of KernelTables(backend)");
}

const KernelTable& BestKernels(Backend backend) {
  return KernelTables(backend).front();
}

KernelsInfo DescribeKernels(const KernelTable& kernels) {
  return {kernels.backend, kernels.name, kernels.lanes};
}

}  // namespace simd_attention
