// The activation of the position-wise FFN (LayerConfig::activation).
#pragma once

namespace simd_attention {

// ReLU; GELU by its tanh approximation or exactly (erf), as
// torch.nn.functional.gelu(approximate='tanh' / 'none').
enum class Activation { kRelu, kGeluTanh, kGeluErf };

}  // namespace simd_attention
