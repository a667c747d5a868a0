// FreeFloats (glue.h), compiled with inlining (bindings/CMakeLists.txt): the
// rest of the glue is compiled at -Os, where emcc adds -fno-inline-functions
// and ~vector<float> walks its floats through one out-of-line call each.
#include "glue.h"

namespace simd_attention::bindings {

void FreeFloats(std::vector<float>& v) { std::vector<float>().swap(v); }

}  // namespace simd_attention::bindings
