#include "reference/block_reference.h"

#include <cmath>

#include "reference/attention_reference.h"
#include "reference/layers_reference.h"
#include "reference/linear_reference.h"
#include "reference/moe_reference.h"

namespace simd_attention {
namespace {

using Rows = std::vector<double>;

Rows Norm(const BlockConfig& c, const Rows& x, const NormWeights& w) {
  const size_t d = c.d_model;
  Rows out(x.size());
  const double plus = Traits(c.norm).plus_one ? 1.0 : 0.0;
  for (size_t r = 0; r < x.size() / d; ++r) {
    const double* in = &x[r * d];
    double mean = 0, spread = 0;
    if (Traits(c.norm).has_beta) {
      for (size_t i = 0; i < d; ++i) mean += in[i];
      mean /= double(d);
    }
    for (size_t i = 0; i < d; ++i) spread += (in[i] - mean) * (in[i] - mean);
    const double inv = 1 / std::sqrt(spread / double(d) + c.eps);
    for (size_t i = 0; i < d; ++i) {
      out[r * d + i] = (in[i] - mean) * inv * (plus + w.gamma[i]) +
                       (Traits(c.norm).has_beta ? w.beta[i] : 0.0);
    }
  }
  return out;
}

std::vector<float> Floats(const Rows& x) { return {x.begin(), x.end()}; }

Rows GatedFfn(const BlockConfig& c, const GatedFfnWeights& w, const Rows& in) {
  const size_t d = c.d_model, f = c.ffn_dim, rows = in.size() / d;
  Rows gate = Linear64(in, rows, d, w.w_gate, w.b_gate, f);
  const Rows up = Linear64(in, rows, d, w.w_up, w.b_up, f);
  for (size_t i = 0; i < gate.size(); ++i) {
    gate[i] = ReferenceActivation(c.activation, gate[i]) * up[i];
  }
  return Linear64(gate, rows, f, w.w_down, w.b_down, d);
}

Rows Mixer(const BlockConfig& c, const Sublayer& s, const SublayerWeights& w, const Rows& in,
           const Tensor3& x, const Tensor3& memory, const BlockOptions& o) {
  const size_t d = c.d_model, f = c.ffn_dim, rows = in.size() / d;
  switch (s.mixer) {
    case MixerKind::kSelfAttention:
    case MixerKind::kCrossAttention: {
      const bool self = s.mixer == MixerKind::kSelfAttention;
      MhaConfig m;
      m.d_model = m.kdim = m.vdim = d;
      m.num_heads = c.num_heads;
      m.num_kv_heads = c.num_kv_heads;
      m.head_dim = m.head_dim_v = c.head_dim;
      if (self) {
        m.rope = c.rope;
        if (m.rope.style != RopeStyle::kNone && m.rope.rotary_dim == 0) {
          m.rope.rotary_dim = c.head_dim;
        }
        m.qk_norm = c.qk_norm;
      }
      const size_t hk = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
      const std::vector<float> zq(hk, 0.0f), zkv(kv, 0.0f), zo(d, 0.0f);
      MhaWeights a = w.attention;
      if (a.b_q.empty()) a.b_q = zq;
      if (a.b_k.empty()) a.b_k = zkv;
      if (a.b_v.empty()) a.b_v = zkv;
      if (a.b_o.empty()) a.b_o = zo;
      const std::vector<float> q = Floats(in);
      const Tensor3 query{q, x.batch, x.tokens, d};
      MhaOptions mo;
      if (self) {
        mo = SelfAttentionMhaOptions(o.self_attention);
        mo.causal = o.causal;
        mo.causal_alignment = o.causal_alignment;
        mo.key_padding_mask = o.key_padding_mask;
        mo.position_offset = o.position_offset;
      } else {
        mo.key_padding_mask = o.memory_key_padding_mask;
      }
      const MhaResult r = self ? ReferenceAttention(m, a, query, query, query, mo)
                               : ReferenceAttention(m, a, query, memory, memory, mo);
      return {r.output.begin(), r.output.end()};
    }
    case MixerKind::kFeedForward: {
      Rows hidden = Linear64(in, rows, d, w.ffn.w1, w.ffn.b1, f);
      for (double& v : hidden) v = ReferenceActivation(c.activation, v);
      return Linear64(hidden, rows, f, w.ffn.w2, w.ffn.b2, d);
    }
    case MixerKind::kGatedFeedForward:
      return GatedFfn(c, w.gated_ffn, in);
    case MixerKind::kMixtureOfExperts: {
      const size_t n = c.num_experts, k = c.experts_per_token;
      const MoeRouting64 route =
          RouteMoe64(Linear64(in, rows, d, w.moe.router, Rows{}, n), rows, n, k,
                     c.normalize_top_k);
      Rows out(rows * d, 0.0);
      for (size_t e = 0; e < n; ++e) {  // every expert on every row, for brevity
        const Rows y = GatedFfn(c, w.moe.experts[e], in);
        for (size_t j = 0; j < rows * k; ++j) {
          if (route.chosen[j] != e) continue;
          for (size_t i = 0; i < d; ++i) out[j / k * d + i] += route.weights[j] * y[j / k * d + i];
        }
      }
      return out;
    }
  }
  return {};
}

}  // namespace

std::vector<float> ReferenceBlock(const BlockConfig& c, std::span<const SublayerWeights> weights,
                                  const Tensor3& x, const Tensor3& memory,
                                  const BlockOptions& options) {
  Rows h(x.data.begin(), x.data.end());
  for (size_t i = 0; i < c.sublayers.size();) {
    size_t end = i + 1;
    while (end < c.sublayers.size() && c.sublayers[end].parallel) ++end;
    Rows sum = h;
    for (size_t k = i; k < end; ++k) {
      const Sublayer& s = c.sublayers[k];
      const bool post = s.norm == NormPlacement::kPost;
      const bool normed_input = !post && s.norm != NormPlacement::kNone;
      Rows out = Mixer(c, s, weights[k], normed_input ? Norm(c, h, weights[k].norm) : h, x,
                       memory, options);
      if (s.norm == NormPlacement::kSandwich) out = Norm(c, out, weights[k].output_norm);
      for (size_t j = 0; j < sum.size(); ++j) sum[j] += out[j];
      if (post) sum = Norm(c, sum, weights[k].norm);
    }
    h = std::move(sum);
    i = end;
  }
  return Floats(h);
}

}  // namespace simd_attention
