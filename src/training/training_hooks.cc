// The training library's answer to training_hooks.h: this program trains.
// (The other hooks, each object's training side, are defined beside their
// backwards in this folder.)
#include "training/training_hooks.h"

namespace simd_attention {

const bool kTrainingLinked = true;

}  // namespace simd_attention
