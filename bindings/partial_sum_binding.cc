// sumPartials: the sum of a split call's partial outputs, made by the pool
// worker that gathers the call's parts (web/src/pool-worker.js), in C++ so
// that an attention's sum is checked, and refused, as MultiHeadAttention
// checks its own output (src/layers/partial_outputs.h). JS names the method in
// front of the message.
#include <emscripten/bind.h>

#include <memory>
#include <string>

#include "glue.h"
#include "layers/partial_outputs.h"
#include "simd_attention/backend.h"

namespace simd_attention::bindings {
namespace {

// parts: the workers' Float32Arrays in worker order (at least one),
// added in that order by `backend`'s kernels; attention: whether they are an
// attention's (else a feed-forward network's). A new Float32Array of their
// sum.
val SumPartialsJs(const val& parts, bool attention, const std::string& backend) {
  return Guard([&] {
    const KernelTable& k = BestKernels(ParseBackend(backend));
    const size_t count = parts["length"].as<size_t>();
    const size_t length = count == 0 ? 0 : parts[0]["length"].as<size_t>();
    const std::unique_ptr<float[]> sum = CopyFloatsUninitialized(parts[0], length);
    for (size_t i = 1; i < count; ++i) {
      const size_t n = parts[i]["length"].as<size_t>();
      const std::unique_ptr<float[]> part = CopyFloatsUninitialized(parts[i], n);
      AddPartial(k, {sum.get(), length}, {part.get(), n});
    }
    if (attention) CheckSummedOutput({sum.get(), length});
    return val::global("Float32Array").new_(emscripten::typed_memory_view(length, sum.get()));
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(simd_attention_partial_sum) {
  emscripten::function("sumPartials", &SumPartialsJs);
}

}  // namespace simd_attention::bindings
