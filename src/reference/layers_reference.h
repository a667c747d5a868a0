// The transformer layers written plainly on top of ReferenceAttention:
// the oracle for the layer tests (pre-LN, GELU) that have no PyTorch case.
#pragma once

#include <vector>

#include "reference/attention_reference.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention {

// The activation in double precision, by the closed forms (std::tanh,
// std::erf).
double ReferenceActivation(Activation act, double x);
std::vector<double> ReferenceLayerNorm64(std::span<const double> x, size_t d,
                                         std::span<const double> gamma,
                                         std::span<const double> beta, double eps);
std::vector<float> ReferenceLayerNorm(std::span<const float> x, size_t d,
                                      const NormWeights& w, float eps);
std::vector<float> ReferenceFeedForward(std::span<const float> x, size_t d,
                                        size_t ffn_dim, Activation act,
                                        const FfnWeights& w);
std::vector<float> ReferenceEncoderLayer(const LayerConfig& config,
                                         const MhaWeights& attention,
                                         const FfnWeights& ffn,
                                         const NormWeights& norm1,
                                         const NormWeights& norm2,
                                         const Tensor3& x,
                                         const EncoderOptions& options);
std::vector<float> ReferenceDecoderLayer(
    const LayerConfig& config, const MhaWeights& self_attention,
    const MhaWeights& cross_attention, const FfnWeights& ffn,
    const NormWeights& norm1, const NormWeights& norm2, const NormWeights& norm3,
    const Tensor3& x, const Tensor3& memory, const DecoderOptions& options);

}  // namespace simd_attention
