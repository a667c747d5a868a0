// The module functions of web/src/module-functions.js, which every module
// binds (the attention module too): positionalEncoding, layerNorm, and
// quantizeInt8, a float32 matrix as the int8 weights { values, scales } that
// setWeights takes, quantized by the C++ API's QuantizeInt8, which checks the
// matrix and its sizes (its names, matrix, rows and cols, are the JS ones
// too). The worker pool quantizes a matrix it splits by rows with it.
#include <emscripten/bind.h>

#include <string>
#include <vector>

#include "glue.h"
#include "js_arg_names.h"
#include "simd_attention/transformer_layers.h"
#include "simd_attention/weight_type.h"
#include "checks/validate.h"
#include "training/training_module.h"

namespace simd_attention::bindings {
namespace {

val PositionalEncodingJs(size_t t, size_t d_model) {
  return Guard([&] { return ToFloat32Array(PositionalEncoding(t, d_model, JsArgNames())); });
}

// x {data, batch, tokens, features}; options {gamma, beta, eps, backend}.
val LayerNormJs(const val& x, const val& options) {
  return Guard([&] {
    const Input in(x);
    const std::vector<float> gamma = CopyFloats(options["gamma"]);
    const std::vector<float> beta = CopyFloats(options["beta"]);
    const KernelTable& kernels = BestKernels(ParseBackend(options["backend"].as<std::string>()));
    return ToFloat32Array(LayerNormForward(in.tensor, NormWeights{gamma, beta},
                                           options["eps"].as<double>(), kernels, JsArgNames()));
  });
}

val QuantizeInt8Js(const val& matrix, size_t rows, size_t cols) {
  // The training module holds float32 weights alone (training_module.h).
  if constexpr (kTrainingModule) return Guard([] { RefuseInTrainingModule("int8 weights"); });
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

EMSCRIPTEN_BINDINGS(simd_attention_module_functions) {
  emscripten::function("positionalEncoding", &PositionalEncodingJs);
  emscripten::function("layerNorm", &LayerNormJs);
  emscripten::function("quantizeInt8", &QuantizeInt8Js);
}

}  // namespace simd_attention::bindings
