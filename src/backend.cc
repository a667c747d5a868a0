#include "simd_attention/backend.h"

#include <stdexcept>
#include <string>

namespace simd_attention {

const char* BackendName(Backend backend) {
  switch (backend) {
    case Backend::kHighway:
      return "highway";
    case Backend::kXsimd:
      return "xsimd";
    case Backend::kScalar:
      return "scalar";
  }
  return "unknown";
}

Backend ParseBackend(std::string_view name) {
  for (Backend b : {Backend::kHighway, Backend::kXsimd, Backend::kScalar}) {
    if (name == BackendName(b)) return b;
  }
  throw std::invalid_argument("backend: expected 'highway', 'xsimd' or "
                              "'scalar', got '" + std::string(name) + "'");
}

}  // namespace simd_attention
