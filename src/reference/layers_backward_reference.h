// The encoder and decoder layers' forward and backward written plainly in
// double precision on top of ReferenceMhaBackward: LayerNorm, the FFN and
// the residual sublayers by their definitions. The oracle of the layer
// backward tests (pre-LN, GELU, the decoder) that have no PyTorch case.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "reference/mha_backward_reference.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention {

// A layer's inputs and weights in double. The attentions' MhaProblem64 hold
// their weights only (their inputs come from the layer). memory empty: an
// encoder layer (self-attention, FFN); else a decoder layer (self-attention,
// cross-attention on memory [batch, memory_tokens, d_model], FFN).
struct LayerProblem64 {
  size_t batch = 0, tokens = 0, memory_tokens = 0;
  std::vector<double> x, memory;
  MhaProblem64 self_attention, cross_attention;
  std::vector<double> w1, b1, w2, b2;
  std::vector<double> gamma[3], beta[3];
};

struct LayerBackward64 {
  std::vector<double> output, d_input, d_memory;
  MhaBackward64 self_attention, cross_attention;  // their weights' gradients
  std::vector<double> d_w1, d_b1, d_w2, d_b2;
  std::vector<double> d_gamma[3], d_beta[3];
};

// act'(x) by the closed forms.
double ReferenceActivationDerivative(Activation act, double x);

// `attention`: the layer's attentions' config resolved (no rotary
// positions, bias on); self_options / cross_options as the layer passes
// them to its attentions (training aside). An empty d_output computes the
// output alone.
LayerBackward64 ReferenceLayerBackward(const LayerConfig& config, const MhaConfig& attention,
                                       const LayerProblem64& p, const MhaOptions& self_options,
                                       const MhaOptions& cross_options,
                                       std::span<const double> d_output);

}  // namespace simd_attention
