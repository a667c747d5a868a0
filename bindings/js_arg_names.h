// The JS package's names for C++ arguments, config fields and options, as
// web/index.d.ts spells them; passed in every config the glue builds, so the
// C++ messages reach JS as they are.
#pragma once

#include "simd_attention/arg_names.h"

namespace simd_attention::bindings {

const ArgNames& JsArgNames();

}  // namespace simd_attention::bindings
