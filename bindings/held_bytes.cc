#include "held_bytes.h"

#include "glue.h"

namespace simd_attention::bindings {
namespace {

// One total per row of kWeightTypes, for weights and for caches; the
// threaded builds change them on the calling thread only (the one that runs
// every binding call).
struct Totals {
  size_t weights[std::size(kWeightTypes)];
  size_t cache[std::size(kWeightTypes)];
};
Totals totals;

size_t& Total(Held what, WeightType type) {
  const size_t row = &Traits(type) - kWeightTypes;
  switch (what) {  // no default: -Werror=switch names a kind left out
    case Held::kWeights:
      return totals.weights[row];
    case Held::kCache:
      return totals.cache[row];
  }
  __builtin_trap();
}

// {name: bytes} over the types `what` may hold.
val TotalsToJs(Held what) {
  val v = val::object();
  for (const WeightTypeTraits& t : kWeightTypes) {
    if (what == Held::kWeights || t.in_caches) {
      v.set(t.name, static_cast<double>(Total(what, t.value)));
    }
  }
  return v;
}

}  // namespace

void HeldBytes::Set(WeightType type, size_t bytes) {
  Total(what_, type_) -= bytes_;
  Total(what_, type) += bytes;
  type_ = type;
  bytes_ = bytes;
}

void SetHeldBytes(val& stats) {
  stats.set("weightBytes", TotalsToJs(Held::kWeights));
  stats.set("cacheBytes", TotalsToJs(Held::kCache));
}

}  // namespace simd_attention::bindings
