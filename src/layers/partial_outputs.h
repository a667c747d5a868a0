// The output of an attention split by heads over the wasm worker pool
// (web/src/pool.js), or of a feed-forward network split by hidden units, is
// the sum of its workers' partial outputs. The worker that gathers a call's
// parts adds them here, in worker order, and an attention's sum is refused
// as MultiHeadAttention refuses an output that overflowed float32, with the
// same message, instead of going on as Infinity. A feed-forward network's
// sum goes on to its layer's residual sum, whose check (AddResidual) is the
// one the synchronous layer makes of it.
#pragma once

#include <span>

#include "dispatch/dispatch.h"

namespace simd_attention {

// What MultiHeadAttention's overflow message calls its output.
inline constexpr char kOutputProjection[] = "the output projection z W_o + b_o";

// sum += part, element by element by the kernels' vector add: float32
// additions, whose results do not depend on the kernels, so a sum depends
// only on the order in which the parts are added. Another length is a
// std::logic_error.
void AddPartial(const KernelTable& k, std::span<float> sum, std::span<const float> part);

// An attention's summed partial outputs, checked as its output
// (std::range_error).
void CheckSummedOutput(std::span<const float> sum);

}  // namespace simd_attention
