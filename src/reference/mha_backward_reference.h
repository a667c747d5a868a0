// MultiHeadAttention's forward and backward written plainly in double
// precision: the full score and probability matrices, every gradient by its
// definition (dS = P * (dP - rowsum(P * dP)), not the kernel's rowsum(dO * O)).
// The oracle of the backward tests; shares no code with the fast path.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "reference/linear_reference.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention {

// A problem in double: inputs [B, T, features] and weights as MhaWeights
// (biases empty when !bias; QK-norm's scales as stored, empty without it).
// Self-attention passes query as key and value, and its keys' rotary
// positions start where the queries' do (options.position_offset).
struct MhaProblem64 {
  size_t batch = 0, tq = 0, tk = 0;
  std::vector<double> query, key, value;
  std::vector<double> w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o;
  std::vector<double> q_norm, k_norm;
  size_t key_pos0 = 0;  // the first key's rotary position
};

// The output and, given d_output, the gradients of sum(output * d_output),
// named as MhaGradients (no d_input: the caller sums d_query, d_key, d_value).
struct MhaBackward64 {
  std::vector<double> output;
  std::vector<double> d_query, d_key, d_value;
  std::vector<double> d_w_q, d_w_k, d_w_v, d_w_o, d_b_q, d_b_k, d_b_v, d_b_o;
  std::vector<double> d_q_norm, d_k_norm;  // empty without QK-norm
};

// Each weight of MhaProblem64 with its gradient in MhaBackward64 and in
// MhaGradients, in MhaGradients' order: what a check of every weight walks.
// The first kMhaProjections are the projections' weights and biases,
// QK-norm's scales come after them.
struct MhaParameter64 {
  const char* name;
  std::vector<double> MhaProblem64::*weight;
  std::vector<double> MhaBackward64::*gradient;
  std::vector<float> MhaGradients::*computed;
};
inline constexpr MhaParameter64 kMhaParameters64[] = {
    {"w_q", &MhaProblem64::w_q, &MhaBackward64::d_w_q, &MhaGradients::d_w_q},
    {"w_k", &MhaProblem64::w_k, &MhaBackward64::d_w_k, &MhaGradients::d_w_k},
    {"w_v", &MhaProblem64::w_v, &MhaBackward64::d_w_v, &MhaGradients::d_w_v},
    {"w_o", &MhaProblem64::w_o, &MhaBackward64::d_w_o, &MhaGradients::d_w_o},
    {"b_q", &MhaProblem64::b_q, &MhaBackward64::d_b_q, &MhaGradients::d_b_q},
    {"b_k", &MhaProblem64::b_k, &MhaBackward64::d_b_k, &MhaGradients::d_b_k},
    {"b_v", &MhaProblem64::b_v, &MhaBackward64::d_b_v, &MhaGradients::d_b_v},
    {"b_o", &MhaProblem64::b_o, &MhaBackward64::d_b_o, &MhaGradients::d_b_o},
    {"q_norm", &MhaProblem64::q_norm, &MhaBackward64::d_q_norm, &MhaGradients::d_q_norm},
    {"k_norm", &MhaProblem64::k_norm, &MhaBackward64::d_k_norm, &MhaGradients::d_k_norm},
};
inline constexpr size_t kMhaProjections = 8;

// The backward of linear_reference.h's Linear64 given dy: dw = x^T dy,
// db = the column sums of dy (with a bias), dx = dy w^T. Shared with the
// layer reference.
void LinearBackward64(const std::vector<double>& x, size_t rows, size_t in,
                      const std::vector<double>& w, bool bias, const std::vector<double>& dy,
                      size_t out, std::vector<double>& dx, std::vector<double>& dw,
                      std::vector<double>& db);

// `config` resolved (MultiHeadAttention::config()): QK-norm, then RoPE
// (queries from options.position_offset, keys from p.key_pos0), the
// options' masks, causal alignment, window, scale and softcap as the
// forward takes them; nothing is checked. An empty d_output computes the
// output alone.
MhaBackward64 ReferenceMhaBackward(const MhaConfig& config, const MhaProblem64& p,
                                   const MhaOptions& options, std::span<const double> d_output);

}  // namespace simd_attention
