// The specification written plainly: scalar loops in double precision, no
// blocking, the full score matrix. The oracle for tests and benchmarks; it
// shares no code with the fast path.
#pragma once

#include "simd_attention/multi_head_attention.h"

namespace simd_attention {

// `config` must be resolved (MultiHeadAttention::config()) and every input
// valid: the reference checks nothing.
MhaResult ReferenceAttention(const MhaConfig& config, const MhaWeights& weights,
                             const Tensor3& query, const Tensor3& key,
                             const Tensor3& value, const MhaOptions& options);

}  // namespace simd_attention
