// ScaledDotProductAttention's specification written plainly: double
// precision, the full score matrix, every option as its definition reads.
// Tests and benchmarks only; shares no code with the fast path.
#pragma once

#include "simd_attention/scaled_dot_product_attention.h"

namespace simd_attention {

// Inputs must be valid (ScaledDotProductAttention::Forward would accept
// them): the reference checks nothing. Fills every output of SdpaResult.
SdpaResult ReferenceScaledDotProductAttention(const HeadsTensor& q, const HeadsTensor& k,
                                              const HeadsTensor& v, const SdpaOptions& options);

}  // namespace simd_attention
