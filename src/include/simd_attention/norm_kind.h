// Which normalization a layer's sublayers (and QK-norm) run.
#pragma once

#include "simd_attention/traits_table.h"

namespace simd_attention {

enum class NormKind {
  kLayerNorm,      // (x - mean) / sqrt(var + eps) * gamma + beta
  kRmsNorm,        // x / sqrt(mean(x^2) + eps) * gamma (Llama, Qwen, Mistral, Phi-3)
  kGemmaRmsNorm,   // x / sqrt(mean(x^2) + eps) * (1 + gamma) (Gemma's stored weights)
  kLayerNorm1p,    // (x - mean) / sqrt(var + eps) * (1 + gamma) + beta (Nemotron's LayerNorm1P)
};

struct NormKindTraits {
  NormKind value;
  const char* name;  // its name in JavaScript, as info() reports it
  bool has_beta;     // takes a shift (beta) besides its scale (gamma)
  // The scale is stored as gamma - 1 (the kernel multiplies by 1 + stored).
  bool plus_one;
};

// In the order messages list them.
inline constexpr NormKindTraits kNormKinds[] = {
    {NormKind::kLayerNorm, "layer_norm", true, false},
    {NormKind::kRmsNorm, "rms_norm", false, false},
    {NormKind::kGemmaRmsNorm, "gemma_rms_norm", false, true},
    {NormKind::kLayerNorm1p, "layer_norm_1p", true, true},
};

constexpr const NormKindTraits& Traits(NormKind k) { return RowFor(kNormKinds, k); }

static_assert(RowsAreExactly(kNormKinds, {NormKind::kLayerNorm, NormKind::kRmsNorm,
                                          NormKind::kGemmaRmsNorm, NormKind::kLayerNorm1p}),
              "kNormKinds: one row per NormKind and name");

}  // namespace simd_attention
