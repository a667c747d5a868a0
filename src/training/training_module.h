// Whether this is the npm package's training module (SA_TRAINING_MODULE,
// defined for every source of the SA_WASM_TRAINING tree): the build that
// trains, whose .wasm keeps the package's 200 kB budget by leaving out what
// only inference uses. Each of those is refused where it is asked for
// (RefuseInTrainingModule, validate.h); the rest of the code sees
// kTrainingModule and HeldType, so that the compiler drops what follows a
// refusal.
#pragma once

#include "simd_attention/weight_type.h"

namespace simd_attention {

#if defined(SA_TRAINING_MODULE)
inline constexpr bool kTrainingModule = true;
#else
inline constexpr bool kTrainingModule = false;
#endif

// A weight's or a KV cache's storage type as this build holds it: float32
// alone in the training module (MultiHeadAttention refuses the others in
// its config; the optimizers update float32 weights), so that every branch
// on the 16-bit and int8 types folds away there.
constexpr WeightType HeldType(WeightType type) {
  return kTrainingModule ? WeightType::kF32 : type;
}

}  // namespace simd_attention
