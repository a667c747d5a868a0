// How a causal mask aligns queries with keys when Tq != Tk.
#pragma once

namespace simd_attention {

// Which keys a causal mask leaves to query i of Tq, over Tk keys.
enum class CausalAlignment {
  kNone,
  kTopLeft,      // j <= i (PyTorch's is_causal, ONNX Attention without a cache)
  kBottomRight,  // j <= i + Tk - Tq (the last query sees every key: decoding
                 // with a cache; MultiHeadAttention's default)
};

}  // namespace simd_attention
