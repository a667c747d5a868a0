#include "held_bytes.h"

#include "glue.h"

namespace simd_attention::bindings {
namespace {

// [Held][WeightType]; the threaded builds change them on the calling thread
// only (the one that runs every binding call).
size_t totals[2][4];

val Totals(Held what, int types) {
  val v = val::object();
  for (int t = 0; t < types; ++t) {
    v.set(WeightTypeName(static_cast<WeightType>(t)),
          static_cast<double>(totals[static_cast<int>(what)][t]));
  }
  return v;
}

}  // namespace

void HeldBytes::Set(WeightType type, size_t bytes) {
  size_t* row = totals[static_cast<int>(what_)];
  row[static_cast<int>(type_)] -= bytes_;
  row[static_cast<int>(type)] += bytes;
  type_ = type;
  bytes_ = bytes;
}

void SetHeldBytes(val& stats) {
  stats.set("weightBytes", Totals(Held::kWeights, 4));
  stats.set("cacheBytes", Totals(Held::kCache, 3));
}

}  // namespace simd_attention::bindings
