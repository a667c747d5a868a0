// TransformerBlock and TransformerStack written plainly: every norm, FFN and
// residual in double over ReferenceAttention, following the sublayer list
// as BlockConfig documents it. The oracle for the block tests.
#pragma once

#include <span>
#include <vector>

#include "simd_attention/transformer_block.h"

namespace simd_attention {

// `config` resolved (TransformerBlock::config()); weights as SetWeights
// takes them, empty biases meaning zero; memory only for cross-attention.
std::vector<float> ReferenceBlock(const BlockConfig& config,
                                  std::span<const SublayerWeights> weights, const Tensor3& x,
                                  const Tensor3& memory, const BlockOptions& options);

}  // namespace simd_attention
