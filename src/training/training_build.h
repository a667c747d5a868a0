// Whether this build can train (CMake option SA_TRAINING). The npm package's
// inference builds are compiled without: what a training forward keeps, and
// the backward it feeds, are then absent from their .wasm (about 7 kB, which
// their size budget has no room for), and options.training is refused.
#pragma once

#include "checks/validate.h"

namespace simd_attention {

inline constexpr bool kTrainingBuild = SA_TRAINING != 0;

// options.training as this build honours it: the value itself, or false in a
// build without training (which refuses true). Always inlined (emcc's -Os
// turns inlining off), so that the compiler sees false there and drops every
// training path after it.
[[gnu::always_inline]] inline bool TrainingRequested(bool training) {
  if constexpr (kTrainingBuild) {
    return training;
  } else {
    if (training) RefuseTrainingInThisBuild();
    return false;
  }
}

}  // namespace simd_attention
