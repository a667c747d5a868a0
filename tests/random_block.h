// Random transformer blocks for the block, block-backward and optimizer
// tests: every sublayer's weights drawn from a seeded std::mt19937 and owned
// here, with the views TransformerBlock::SetWeights takes.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "random_mha.h"
#include "simd_attention/transformer_block.h"

namespace simd_attention::testing {

// One sublayer's weights, owned; those its norm and mixer do not have stay
// empty.
struct OwnedSublayer {
  std::vector<float> gamma, beta, out_gamma, out_beta;
  OwnedWeights attention;
  std::vector<float> q_norm, k_norm;
  std::vector<float> w1, b1, w2, b2;
  std::vector<float> w_gate, b_gate, w_up, b_up, w_down, b_down;
  std::vector<float> router;           // moe
  std::vector<OwnedSublayer> experts;  // moe: each a gated FFN's (w_gate ... b_down)
  mutable std::vector<GatedFfnWeights> expert_views;  // what View()'s moe.experts views

  SublayerWeights View() const;
};

std::vector<SublayerWeights> Views(const std::vector<OwnedSublayer>& owned);

// A block of `sublayers` with these sizes, norm kind and activation.
BlockConfig MakeBlockConfig(size_t d_model, size_t heads, size_t kv_heads, size_t ffn_dim,
                            NormKind norm, Activation activation, std::vector<Sublayer> sublayers);

// n values uniform in centre +- 0.3.
std::vector<float> Around(size_t n, float centre, std::mt19937& rng);

// The attentions' config as a block of config `c` resolves it (its
// self-attentions': rotary positions and QK-norm as c's).
MhaConfig BlockAttentionConfig(const BlockConfig& c, bool bias = true);

// Weights for every sublayer of `c` (resolved), torch-like scales: matrices
// and biases uniform in +-1/sqrt(fan_in); norm scales around 1 (Gemma's
// stored gamma - 1 around 0) and shifts away from 0, so that a swapped norm
// shows; QK-norm scales where c.qk_norm is enabled. `biases` false leaves
// out the attentions' and the gated FFNs' biases (as Llama's). A moe's
// router is drawn wider (+-2/sqrt(d_model)), so that its choices stand
// apart.
std::vector<OwnedSublayer> RandomBlockWeights(const BlockConfig& c, bool biases,
                                              std::mt19937& rng);

}  // namespace simd_attention::testing
