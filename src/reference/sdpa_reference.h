// ScaledDotProductAttention's specification written plainly: double
// precision, the full score matrix, every option as its definition reads.
// Tests and benchmarks only; shares no code with the fast path.
#pragma once

#include "simd_attention/scaled_dot_product_attention.h"

namespace simd_attention {

// Index of (b, h, i, j) in a mask of `shape` ([Tq, Tk] or [B or 1, H or 1,
// Tq, Tk]; empty = [Tq, Tk]) broadcast to [B, H, Tq, Tk]; its last
// dimension may be less than Tk, and then key j must be below it (the keys
// past it are masked).
size_t ReferenceMaskIndex(const std::vector<size_t>& shape, size_t b, size_t h, size_t i,
                          size_t j, size_t tq, size_t tk);
// The keys a mask of `shape` covers: its last dimension, or tk.
size_t ReferenceMaskKeys(const std::vector<size_t>& shape, size_t tk);

// Inputs must be valid (ScaledDotProductAttention::Forward would accept
// them): the reference checks nothing. Fills every output of SdpaResult.
SdpaResult ReferenceScaledDotProductAttention(const HeadsTensor& q, const HeadsTensor& k,
                                              const HeadsTensor& v, const SdpaOptions& options);

}  // namespace simd_attention
