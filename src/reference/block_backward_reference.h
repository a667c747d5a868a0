// TransformerBlock's forward and backward written plainly in double on top
// of ReferenceMhaBackward: every norm kind and placement, sublayers side by
// side, the FFN and the gated FFN by their definitions; TransformerStack's
// as its layers' in turn and its final norm. The oracle of the block and
// stack backward tests; central differences check it in turn.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "reference/mha_backward_reference.h"
#include "simd_attention/transformer_block.h"

namespace simd_attention {

// One sublayer's weights in double, as SublayerWeights (gamma as stored;
// beta empty for the RMSNorm kinds; a bias empty: none). The attention's
// MhaProblem64 holds its weights only (its inputs come from the block).
struct SublayerProblem64 {
  std::vector<double> gamma, beta, out_gamma, out_beta;
  MhaProblem64 attention;
  std::vector<double> w1, b1, w2, b2;
  std::vector<double> w_gate, b_gate, w_up, b_up, w_down, b_down;
  // moe: the router and each expert's gated FFN (its w_gate ... b_down).
  std::vector<double> router;
  std::vector<SublayerProblem64> experts;
};

struct BlockProblem64 {
  size_t batch = 0, tokens = 0, memory_tokens = 0;
  std::vector<double> x, memory;  // memory: for cross-attention sublayers
  std::vector<SublayerProblem64> sublayers;
};

// The gradients of sum(output * d_output), named as SublayerGradients.
struct SublayerBackward64 {
  std::vector<double> d_gamma, d_beta, d_out_gamma, d_out_beta;
  MhaBackward64 attention;
  std::vector<double> d_w1, d_b1, d_w2, d_b2;
  std::vector<double> d_w_gate, d_b_gate, d_w_up, d_b_up, d_w_down, d_b_down;
  std::vector<double> d_router;             // moe, the routing as the forward chose it
  std::vector<SublayerBackward64> experts;  // moe: each expert's d_w_gate ... d_b_down
};

struct BlockBackward64 {
  std::vector<double> output, d_input, d_memory;
  std::vector<SublayerBackward64> sublayers;
};

// `config` resolved (TransformerBlock::config()); `attention` its
// self-attentions' config resolved (bias on, rope and qk_norm as the
// block's; its cross-attentions' the same without them);
// self_options / cross_options as the block passes them to its attentions.
// An empty d_output computes the output alone.
BlockBackward64 ReferenceBlockBackward(const BlockConfig& config, const MhaConfig& attention,
                                       const BlockProblem64& p, const MhaOptions& self_options,
                                       const MhaOptions& cross_options,
                                       std::span<const double> d_output);

// A stack's problem: its input, each layer's sublayers and the final norm's
// gamma and beta (config.final_norm).
struct StackProblem64 {
  size_t batch = 0, tokens = 0;
  std::vector<double> x;
  std::vector<std::vector<SublayerProblem64>> layers;
  std::vector<double> final_gamma, final_beta;
};

struct StackBackward64 {
  std::vector<double> output, d_input;
  std::vector<std::vector<SublayerBackward64>> layers;
  std::vector<double> d_final_gamma, d_final_beta;
};

// `config` resolved (TransformerStack::config()); `attention` and
// `self_options` as ReferenceBlockBackward's, each layer's window from
// config.layer_windows where given. An empty d_output computes the output
// alone.
StackBackward64 ReferenceStackBackward(const StackConfig& config, const MhaConfig& attention,
                                       const StackProblem64& p, const MhaOptions& self_options,
                                       std::span<const double> d_output);

}  // namespace simd_attention
