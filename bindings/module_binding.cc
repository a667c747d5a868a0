// Module-level Embind functions: which build this is, which backends it has,
// which kernels a backend runs on, and heap statistics (for leak tests and apps
// that watch memory).
#include <emscripten/bind.h>
#include <emscripten/heap.h>

#include <string>

#include "allocation_counter.h"
#include "glue.h"
#include "held_bytes.h"
#include "simd_attention/activation.h"
#include "simd_attention/backend.h"
#include "simd_attention/causal_alignment.h"
#include "simd_attention/norm_kind.h"
#include "simd_attention/scores_stage.h"
#include "simd_attention/transformer_block.h"
#include "simd_attention/weight_type.h"

namespace simd_attention::bindings {
namespace {

val Backends() {
  val names = val::array();
  for (Backend b : AvailableBackends()) {
    names.call<void>("push", std::string(BackendName(b)));
  }
  return names;
}

// {backend, kernels: the KernelTable name a new object of this backend runs
// on, lanes}; an unknown or missing backend is an error value.
val KernelInfo(const std::string& backend) {
  return Guard([&] {
    const KernelsInfo t = DescribeKernels(BestKernels(ParseBackend(backend)));
    val v = val::object();
    v.set("backend", std::string(BackendName(t.backend)));
    v.set("kernels", std::string(t.name));
    v.set("lanes", t.lanes);
    return v;
  });
}

// The names of one traits table's rows (and their aliases), in its order.
template <class Row, size_t N>
val NamesOf(const Row (&rows)[N], bool (*keep)(const Row&) = &EveryRow<Row>) {
  val names = val::array();
  for (const Row& row : rows) {
    if (!keep(row)) continue;
    names.call<void>("push", std::string(row.name));
    if constexpr (requires { row.alias; }) {
      if (row.alias != nullptr) names.call<void>("push", std::string(row.alias));
    }
  }
  return names;
}

bool InCaches(const WeightTypeTraits& row) { return row.in_caches; }

// Every name a config field takes, from the C++ tables that judge them: the
// package's one list of each (module.choices).
val Choices() {
  val v = val::object();
  v.set("activation", NamesOf(kActivations));
  v.set("norm", NamesOf(kNormKinds));
  v.set("mixer", NamesOf(kMixerKinds));
  v.set("normPlacement", NamesOf(kNormPlacements));
  v.set("weights", NamesOf(kWeightTypes));
  v.set("cacheType", NamesOf(kWeightTypes, &InCaches));
  v.set("causal", NamesOf(kCausalAlignments));
  v.set("returnScores", NamesOf(kScoresStages));
  return v;
}

val MemoryStats() {
  val v = val::object();
  v.set("heapBytes", static_cast<double>(emscripten_get_heap_size()));
  v.set("maxHeapBytes", static_cast<double>(emscripten_get_heap_max()));
  v.set("allocatedBytes", static_cast<double>(AllocatedBytes()));
  SetHeldBytes(v);
  return v;
}

// Which of the package's builds this is, as web/index.js names them; the
// loader checks it against the file it meant to load.
std::string Build() {
#if defined(SA_TRAINING_MODULE)
  return "training";
#elif defined(__wasm_relaxed_simd__)
  return "relaxed-simd";
#elif defined(__wasm_simd128__)
  return "simd";
#else
  return "nosimd";
#endif
}

}  // namespace

EMSCRIPTEN_BINDINGS(simd_attention_module) {
  emscripten::function("backends", &Backends);
  emscripten::function("kernelInfo", &KernelInfo);
  emscripten::function("memoryStats", &MemoryStats);
  emscripten::function("choices", &Choices);
  emscripten::function("build", &Build);
}

}  // namespace simd_attention::bindings
