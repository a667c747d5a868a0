// What a transformer layer does around each sublayer besides the sublayer
// itself: the residual sum with its overflow check, and the range check of
// a LayerNorm's input. The synchronous layers (transformer_layers.cc) and
// the worker that sums a split layer's partial outputs in the wasm pool
// (bindings/sublayer_norm_binding.cc) both run them, so that a pooled layer
// refuses what the synchronous one refuses, with the same message.
#pragma once

#include <cstddef>
#include <span>

#include "dispatch/dispatch.h"
#include "simd_attention/thread_pool.h"

namespace simd_attention {

// x += y, split across the pool (element-wise: any split is exact), then
// the sum checked: a non-finite element is a std::range_error naming
// `sublayer` ("the self-attention sublayer overflowed float32 ..."). The next
// sublayer would otherwise see an overflow as if the caller had passed a
// non-finite value.
void AddResidual(const char* sublayer, ThreadPool& pool, const KernelTable& k,
                 std::span<float> x, std::span<const float> y);

// A std::range_error naming `what` when rows of d floats are so large that
// LayerNorm's float32 variance could overflow.
void CheckNormRange(const char* what, std::span<const float> x, size_t d);

}  // namespace simd_attention
