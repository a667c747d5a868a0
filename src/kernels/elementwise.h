// Element-wise kernels around attention: activations of the position-wise
// FFN, LayerNorm and the residual add.
#pragma once

namespace simd_attention {

enum class Activation { kRelu, kGeluTanh, kGeluErf };

}  // namespace simd_attention
