#include "simd_attention/backend.h"

#include <stdexcept>
#include <string>

#include "checks/validate.h"

namespace simd_attention {

const char* BackendName(Backend backend) { return Traits(backend).name; }

Backend ParseBackend(std::string_view name) {
  if (const BackendTraits* row = RowNamed(kBackends, name)) return row->value;
  static constexpr ChoiceList kChoices = ChoicesOf(kBackends, &BackendTraits::name, true);
  ThrowInvalidArgument({"backend: expected ", kChoices.view(), ", got '", name, "'"});
}

}  // namespace simd_attention
