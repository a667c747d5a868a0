#include "simd_attention/backend.h"

#include <stdexcept>
#include <string>

#include "validate.h"

namespace simd_attention {

const char* BackendName(Backend backend) { return Traits(backend).name; }

Backend ParseBackend(std::string_view name) {
  if (const BackendTraits* row = RowNamed(kBackends, name)) return row->value;
  std::vector<std::string> names;
  for (const BackendTraits& b : kBackends) names.push_back(b.name);
  ThrowInvalidArgument({"backend: expected ", Choices(names, true), ", got '", name, "'"});
}

}  // namespace simd_attention
