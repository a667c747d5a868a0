// Bytes of weights and KV caches the module's live objects hold, by storage
// type, for memoryStats(). Each binding keeps a HeldBytes, sets it whenever
// its weights or cache change size or type, and gives its bytes back when
// Embind deletes it (dispose(), or the collector).
#pragma once

#include <emscripten/val.h>

#include <cstddef>

#include "simd_attention/weight_type.h"

namespace simd_attention::bindings {

enum class Held { kWeights, kCache };

class HeldBytes {
 public:
  explicit HeldBytes(Held what) : what_(what) {}
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;
  ~HeldBytes() { Set(type_, 0); }
  // This object now holds `bytes` of `type` (instead of what it held).
  void Set(WeightType type, size_t bytes);

 private:
  Held what_;
  WeightType type_ = WeightType::kF32;
  size_t bytes_ = 0;
};

// stats.weightBytes = {f32, f16, bf16, int8, q4} (a key per row of kWeightTypes),
// stats.cacheBytes = {f32, f16, bf16} (the rows caches hold): the sums over
// the live objects.
void SetHeldBytes(emscripten::val& stats);

}  // namespace simd_attention::bindings
