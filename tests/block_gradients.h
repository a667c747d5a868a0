// What the block and stack backward tests share: a sublayer's weights in
// double for the float64 reference, every gradient of a block's sublayers
// paired with the reference's, by name, and the errors of a backward from a
// training forward's record.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradient_util.h"
#include "random_block.h"
#include "reference/block_backward_reference.h"
#include "simd_attention/transformer_block.h"
#include "test_util.h"

namespace simd_attention::testing {

inline SublayerProblem64 SublayerDoubles(const OwnedSublayer& w) {
  SublayerProblem64 q;
  q.gamma = ToDouble(w.gamma);
  q.beta = ToDouble(w.beta);
  q.out_gamma = ToDouble(w.out_gamma);
  q.out_beta = ToDouble(w.out_beta);
  const OwnedWeights& a = w.attention;
  q.attention = {0, 0, 0, {}, {}, {}, ToDouble(a.w_q), ToDouble(a.w_k), ToDouble(a.w_v),
                 ToDouble(a.w_o), ToDouble(a.b_q), ToDouble(a.b_k), ToDouble(a.b_v),
                 ToDouble(a.b_o), ToDouble(w.q_norm), ToDouble(w.k_norm)};
  q.w1 = ToDouble(w.w1);
  q.b1 = ToDouble(w.b1);
  q.w2 = ToDouble(w.w2);
  q.b2 = ToDouble(w.b2);
  q.w_gate = ToDouble(w.w_gate);
  q.b_gate = ToDouble(w.b_gate);
  q.w_up = ToDouble(w.w_up);
  q.b_up = ToDouble(w.b_up);
  q.w_down = ToDouble(w.w_down);
  q.b_down = ToDouble(w.b_down);
  q.router = ToDouble(w.router);
  for (const OwnedSublayer& e : w.experts) q.experts.push_back(SublayerDoubles(e));
  return q;
}

// A gradient computed and the reference's.
struct GradientPair {
  std::string name;
  const std::vector<float>* actual;
  const std::vector<double>* expected;
};

// The FFN's and the gated FFN's gradients, as FfnGradients or
// GatedFfnGradients and SublayerBackward64 name them.
template <class Gradients>
struct FfnGradient {
  const char* name;
  std::vector<float> Gradients::*computed;
  std::vector<double> SublayerBackward64::*expected;
};
inline constexpr FfnGradient<FfnGradients> kFfnGradients[] = {
    {"d_w1", &FfnGradients::d_w1, &SublayerBackward64::d_w1},
    {"d_b1", &FfnGradients::d_b1, &SublayerBackward64::d_b1},
    {"d_w2", &FfnGradients::d_w2, &SublayerBackward64::d_w2},
    {"d_b2", &FfnGradients::d_b2, &SublayerBackward64::d_b2},
};
inline constexpr FfnGradient<GatedFfnGradients> kGatedFfnGradients[] = {
    {"d_w_gate", &GatedFfnGradients::d_w_gate, &SublayerBackward64::d_w_gate},
    {"d_b_gate", &GatedFfnGradients::d_b_gate, &SublayerBackward64::d_b_gate},
    {"d_w_up", &GatedFfnGradients::d_w_up, &SublayerBackward64::d_w_up},
    {"d_b_up", &GatedFfnGradients::d_b_up, &SublayerBackward64::d_b_up},
    {"d_w_down", &GatedFfnGradients::d_w_down, &SublayerBackward64::d_w_down},
    {"d_b_down", &GatedFfnGradients::d_b_down, &SublayerBackward64::d_b_down},
};

// A gated FFN's gradients with the reference's, named `at` + "d_w_gate" ...
inline void AddGatedPairs(const std::string& at, const GatedFfnGradients& g,
                          const SublayerBackward64& r, std::vector<GradientPair>& out) {
  for (const auto& f : kGatedFfnGradients) {
    out.push_back({at + f.name, &(g.*f.computed), &(r.*f.expected)});
  }
}

// Every gradient of the sublayers of a block of config `c` with the
// reference's, named `prefix` + "sublayers[k].<name>": the norms' it has
// and its mixer's.
inline void AddSublayerPairs(const BlockConfig& c, const std::string& prefix,
                             const std::vector<SublayerGradients>& g,
                             const std::vector<SublayerBackward64>& e,
                             std::vector<GradientPair>& out) {
  for (size_t k = 0; k < c.sublayers.size(); ++k) {
    const SublayerGradients& s = g[k];
    const SublayerBackward64& r = e[k];
    const std::string at = prefix + "sublayers[" + std::to_string(k) + "].";
    const auto add = [&](const std::string& name, const std::vector<float>& a,
                         const std::vector<double>& b) { out.push_back({at + name, &a, &b}); };
    if (HasNorm(c.sublayers[k].norm)) {
      add("norm.d_gamma", s.norm.d_gamma, r.d_gamma);
      add("norm.d_beta", s.norm.d_beta, r.d_beta);
    } else {  // the block computes none: nothing to compare
      EXPECT_TRUE(s.norm.d_gamma.empty() && s.norm.d_beta.empty()) << at << "norm";
    }
    if (c.sublayers[k].norm == NormPlacement::kSandwich) {
      add("output_norm.d_gamma", s.output_norm.d_gamma, r.d_out_gamma);
      add("output_norm.d_beta", s.output_norm.d_beta, r.d_out_beta);
    }
    switch (c.sublayers[k].mixer) {
      case MixerKind::kSelfAttention:
      case MixerKind::kCrossAttention: {
        // QK-norm's scales where the block has them.
        const size_t n = c.qk_norm.enabled ? std::size(kMhaParameters64) : kMhaProjections;
        for (const MhaParameter64& p : std::span(kMhaParameters64).first(n)) {
          add(std::string("attention.d_") + p.name, s.attention.*p.computed,
              r.attention.*p.gradient);
        }
        break;
      }
      case MixerKind::kFeedForward:
        for (const auto& f : kFfnGradients) {
          add(std::string("ffn.") + f.name, s.ffn.*f.computed, r.*f.expected);
        }
        break;
      case MixerKind::kGatedFeedForward:
        AddGatedPairs(at + "gated_ffn.", s.gated_ffn, r, out);
        break;
      case MixerKind::kMixtureOfExperts:
        add("moe.d_router", s.moe.d_router, r.d_router);
        EXPECT_EQ(s.moe.experts.size(), r.experts.size()) << at << "moe.experts";
        for (size_t e = 0; e < std::min(s.moe.experts.size(), r.experts.size()); ++e) {
          AddGatedPairs(at + "moe.experts[" + std::to_string(e) + "].", s.moe.experts[e],
                        r.experts[e], out);
        }
        break;
    }
  }
}

// The errors of `object`'s Backward (a TransformerBlock's or a
// TransformerStack's) given d_output [batch, tokens, features], whose
// weights `set_weights()` sets and `forward(training)` runs a forward of:
// none without a training forward, a record that stays through repeated
// and refused calls, and that a forward not training or new weights end.
template <class Object, class Forward, class SetWeights>
void ExpectRecordErrors(Object& object, const Tensor3& d_output, const Forward& forward,
                        const SetWeights& set_weights) {
  const char* no_forward = "expected the last forward to be a training one";
  const auto backward = [&](const Tensor3& d) { return object.Backward(d).d_input; };
  set_weights();
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { backward(d_output); }, {no_forward}));
  forward(true);
  const std::vector<float> first = backward(d_output);
  // The record stays: a second Backward gives the same gradients.
  EXPECT_EQ(backward(d_output), first);
  // A wrong shape or a non-finite value names d_output; the record stays.
  const Tensor3& d = d_output;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { backward({d.data, d.tokens, d.batch, d.features}); },
      {"d_output", "expected shape"}));
  std::vector<float> bad(d.data.begin(), d.data.end());
  bad[5] = std::nanf("");
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { backward({bad, d.batch, d.tokens, d.features}); }, {"d_output"}));
  EXPECT_EQ(backward(d_output), first);
  // A forward that is not a training one, or new weights, ends the record.
  forward(false);
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { backward(d_output); }, {no_forward}));
  forward(true);
  set_weights();
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { backward(d_output); }, {no_forward}));
}

}  // namespace simd_attention::testing
