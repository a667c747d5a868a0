// The activation of the position-wise FFN (LayerConfig::activation) and of a
// gated FFN's gate (BlockConfig::activation).
#pragma once

#include "simd_attention/traits_table.h"

namespace simd_attention {

// ReLU; GELU by its tanh approximation or exactly (erf), as
// torch.nn.functional.gelu(approximate='tanh' / 'none'); SiLU x * sigmoid(x)
// (SwiGLU's gate).
enum class Activation { kRelu, kGeluTanh, kGeluErf, kSilu };

struct ActivationTraits {
  Activation value;
  const char* name;   // config.activation in JavaScript, as info() reports it
  const char* alias;  // another name JavaScript accepts for it, or nullptr
};

// In the order messages list them.
inline constexpr ActivationTraits kActivations[] = {
    {Activation::kRelu, "relu", nullptr},
    {Activation::kGeluErf, "gelu", "gelu_erf"},
    {Activation::kGeluTanh, "gelu_tanh", nullptr},
    {Activation::kSilu, "silu", "swish"},
};

constexpr const ActivationTraits& Traits(Activation a) { return RowFor(kActivations, a); }

static_assert(RowsAreExactly(kActivations, {Activation::kRelu, Activation::kGeluTanh,
                                            Activation::kGeluErf, Activation::kSilu}),
              "kActivations: one row per Activation and name");

}  // namespace simd_attention
