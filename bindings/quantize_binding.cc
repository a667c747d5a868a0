// quantizeInt8: a float32 matrix as the int8 weights { values, scales } that
// setWeights takes, quantized by the C++ API's QuantizeInt8, which checks
// the matrix and its sizes (its names, matrix, rows and cols, are the JS
// ones too). The worker pool quantizes a matrix it splits by rows with it.
#include <emscripten/bind.h>

#include <vector>

#include "glue.h"
#include "simd_attention/weight_type.h"

namespace simd_attention::bindings {
namespace {

val QuantizeInt8Js(const val& matrix, size_t rows, size_t cols) {
  return Guard([&] {
    const std::vector<float> floats = CopyFloats(matrix);
    const Int8Matrix q = QuantizeInt8(floats, rows, cols);
    val out = val::object();
    out.set("values", val::global("Int8Array")
                          .new_(emscripten::typed_memory_view(q.values.size(), q.values.data())));
    out.set("scales", ToFloat32Array(q.scales));
    return out;
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(simd_attention_quantize) {
  emscripten::function("quantizeInt8", &QuantizeInt8Js);
}

}  // namespace simd_attention::bindings
