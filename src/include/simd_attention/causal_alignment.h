// How a causal mask aligns queries with keys when Tq != Tk.
#pragma once

#include "simd_attention/traits_table.h"

namespace simd_attention {

// Which keys a causal mask leaves to query i of Tq, over Tk keys.
enum class CausalAlignment {
  kNone,
  kTopLeft,      // j <= i (PyTorch's is_causal, ONNX Attention without a cache)
  kBottomRight,  // j <= i + Tk - Tq (the last query sees every key: decoding
                 // with a cache; MultiHeadAttention's default)
};

using CausalAlignmentTraits = NamedValue<CausalAlignment>;

// options.causal's strings in JavaScript, in the order messages list them.
inline constexpr CausalAlignmentTraits kCausalAlignments[] = {
    {CausalAlignment::kNone, "none"},
    {CausalAlignment::kTopLeft, "top-left"},
    {CausalAlignment::kBottomRight, "bottom-right"},
};

constexpr const CausalAlignmentTraits& Traits(CausalAlignment a) {
  return RowFor(kCausalAlignments, a);
}

static_assert(RowsAreExactly(kCausalAlignments, {CausalAlignment::kNone, CausalAlignment::kTopLeft,
                                                 CausalAlignment::kBottomRight}),
              "kCausalAlignments: one row per alignment and name");

}  // namespace simd_attention
