#include "random_block.h"

#include <cmath>
#include <utility>

namespace simd_attention::testing {

SublayerWeights OwnedSublayer::View() const {
  SublayerWeights w;
  w.norm = {gamma, beta};
  w.output_norm = {out_gamma, out_beta};
  w.attention = attention.View();
  w.attention.q_norm = q_norm;
  w.attention.k_norm = k_norm;
  w.ffn = {w1, b1, w2, b2};
  w.gated_ffn = {w_gate, w_up, w_down, b_gate, b_up, b_down, {}, {}, {}};
  expert_views.clear();
  for (const OwnedSublayer& e : experts) expert_views.push_back(e.View().gated_ffn);
  w.moe = {router, expert_views};
  return w;
}

std::vector<SublayerWeights> Views(const std::vector<OwnedSublayer>& owned) {
  std::vector<SublayerWeights> v;
  for (const OwnedSublayer& w : owned) v.push_back(w.View());
  return v;
}

BlockConfig MakeBlockConfig(size_t d_model, size_t heads, size_t kv_heads, size_t ffn_dim,
                            NormKind norm, Activation activation, std::vector<Sublayer> sublayers) {
  return {.d_model = d_model, .num_heads = heads, .num_kv_heads = kv_heads, .ffn_dim = ffn_dim,
          .activation = activation, .norm = norm, .sublayers = std::move(sublayers)};
}

std::vector<float> Around(size_t n, float centre, std::mt19937& rng) {
  std::vector<float> v = RandomVector(n, 0.3f, rng);
  for (float& x : v) x += centre;
  return v;
}

MhaConfig BlockAttentionConfig(const BlockConfig& c, bool bias) {
  return Resolve({.d_model = c.d_model, .num_heads = c.num_heads, .head_dim = c.head_dim,
                  .num_kv_heads = c.num_kv_heads, .rope = c.rope, .qk_norm = c.qk_norm,
                  .bias = bias});
}

std::vector<OwnedSublayer> RandomBlockWeights(const BlockConfig& c, bool biases,
                                              std::mt19937& rng) {
  std::vector<OwnedSublayer> out;
  const size_t d = c.d_model, f = c.ffn_dim;
  const bool beta = Traits(c.norm).has_beta;
  const float centre = Traits(c.norm).plus_one ? 0.0f : 1.0f;
  const auto around = [&](size_t n) { return Around(n, centre, rng); };
  const auto init = [&](size_t n, size_t fan_in) {
    return RandomVector(n, 1.0f / std::sqrt(float(fan_in)), rng);
  };
  const MhaConfig attention = BlockAttentionConfig(c, biases);
  for (const Sublayer& s : c.sublayers) {
    OwnedSublayer w;
    if (HasNorm(s.norm)) w.gamma = around(d);
    if (beta && HasNorm(s.norm)) w.beta = RandomVector(d, 0.3f, rng);
    if (s.norm == NormPlacement::kSandwich) {
      w.out_gamma = around(d);
      if (beta) w.out_beta = RandomVector(d, 0.3f, rng);
    }
    if (Traits(s.mixer).attention) {
      w.attention = RandomWeights(attention, rng);
      if (s.mixer == MixerKind::kSelfAttention && c.qk_norm.enabled) {
        w.q_norm = around(attention.head_dim);
        w.k_norm = around(attention.head_dim);
      }
    }
    if (s.mixer == MixerKind::kFeedForward) {
      w.w1 = init(d * f, d);
      w.b1 = init(f, d);
      w.w2 = init(f * d, f);
      w.b2 = init(d, f);
    }
    const auto gated = [&](OwnedSublayer& g) {
      g.w_gate = init(d * f, d);
      if (biases) g.b_gate = init(f, d);
      g.w_up = init(d * f, d);
      if (biases) g.b_up = init(f, d);
      g.w_down = init(f * d, f);
      if (biases) g.b_down = init(d, f);
    };
    if (s.mixer == MixerKind::kGatedFeedForward) gated(w);
    if (s.mixer == MixerKind::kMixtureOfExperts) {
      w.router = RandomVector(d * c.num_experts, 2.0f / std::sqrt(float(d)), rng);
      w.experts.resize(c.num_experts);
      for (OwnedSublayer& e : w.experts) gated(e);
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace simd_attention::testing
