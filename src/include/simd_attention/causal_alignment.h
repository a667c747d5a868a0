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

struct CausalAlignmentTraits {
  CausalAlignment value;
  const char* name;  // options.causal's string in JavaScript
};

// In the order messages list them.
inline constexpr CausalAlignmentTraits kCausalAlignments[] = {
    {CausalAlignment::kNone, "none"},
    {CausalAlignment::kTopLeft, "top-left"},
    {CausalAlignment::kBottomRight, "bottom-right"},
};

constexpr const CausalAlignmentTraits& Traits(CausalAlignment a) {
  return RowFor(kCausalAlignments, a);
}

static_assert(RowsDistinct(kCausalAlignments), "kCausalAlignments: one row per alignment and name");
static_assert(Traits(CausalAlignment::kNone).value == CausalAlignment::kNone &&
                  Traits(CausalAlignment::kTopLeft).value == CausalAlignment::kTopLeft &&
                  Traits(CausalAlignment::kBottomRight).value == CausalAlignment::kBottomRight,
              "every CausalAlignment has its row");

}  // namespace simd_attention
