#include "reference/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/linear_reference.h"
#include "reference/sdpa_reference.h"

namespace simd_attention {
namespace {

// Rotary positions on rows of `heads` heads of d (pos0 + t for token t of
// each batch item), in double, pairs as config.rope says.
void Rotate(std::vector<double>& x, size_t batch, size_t tokens, size_t heads, size_t d,
            const RopeConfig& rope, size_t pos0) {
  if (rope.style == RopeStyle::kNone) return;
  const size_t r = rope.rotary_dim, half = r / 2;
  for (size_t b = 0; b < batch; ++b) {
    for (size_t t = 0; t < tokens; ++t) {
      for (size_t h = 0; h < heads; ++h) {
        double* v = &x[((b * tokens + t) * heads + h) * d];
        for (size_t i = 0; i < half; ++i) {
          const double angle = double(pos0 + t) * std::pow(rope.base, -2.0 * double(i) / double(r));
          double& a = v[rope.style == RopeStyle::kHalf ? i : 2 * i];
          double& e = v[rope.style == RopeStyle::kHalf ? i + half : 2 * i + 1];
          const double a0 = a, e0 = e;
          a = a0 * std::cos(angle) - e0 * std::sin(angle);
          e = a0 * std::sin(angle) + e0 * std::cos(angle);
        }
      }
    }
  }
}

// QK-norm: each head of d features times scale / sqrt(mean square + eps),
// the scale as stored (1 + stored for Gemma's kind).
void NormalizeHeads(std::vector<double>& x, size_t d, const QkNormConfig& norm,
                    std::span<const float> stored) {
  if (!norm.enabled) return;
  const double plus = Traits(norm.kind).plus_one ? 1.0 : 0.0;
  for (size_t h = 0; h < x.size() / d; ++h) {
    double* v = &x[h * d];
    double squares = 0;
    for (size_t i = 0; i < d; ++i) squares += v[i] * v[i];
    const double inv = 1 / std::sqrt(squares / double(d) + norm.eps);
    for (size_t i = 0; i < d; ++i) v[i] *= inv * (plus + stored[i]);
  }
}

}  // namespace

MhaResult ReferenceAttention(const MhaConfig& c, const MhaWeights& w,
                             const Tensor3& query, const Tensor3& key,
                             const Tensor3& value, const MhaOptions& opt) {
  const size_t B = query.batch, Tq = query.tokens, Tk = key.tokens;
  const size_t H = c.num_heads, dk = c.head_dim, dv = c.head_dim_v;  // resolved
  const size_t Hkv = c.num_kv_heads, group = H / Hkv;
  const size_t D = c.d_model;
  std::vector<double> Q = Linear64(query.data, B * Tq, D, w.w_q, w.b_q, H * dk);
  std::vector<double> K = Linear64(key.data, B * Tk, c.kdim, w.w_k, w.b_k, Hkv * dk);
  const std::vector<double> V = Linear64(value.data, B * Tk, c.vdim, w.w_v, w.b_v, Hkv * dv);
  // Self-attention's keys sit at the queries' positions, others from 0.
  const bool self = key.data.data() == query.data.data();
  NormalizeHeads(Q, dk, c.qk_norm, w.q_norm);
  NormalizeHeads(K, dk, c.qk_norm, w.k_norm);
  Rotate(Q, B, Tq, H, dk, c.rope, opt.position_offset);
  Rotate(K, B, Tk, Hkv, dk, c.rope, self ? opt.position_offset : 0);
  // A mask given without a shape is [B, H, Tq, Tk] by its length, else [Tq, Tk].
  auto shape_of = [&](const std::vector<size_t>& shape, size_t n) {
    return shape.empty() && n == B * H * Tq * Tk ? std::vector<size_t>{B, H, Tq, Tk} : shape;
  };
  const std::vector<size_t> attn_shape = shape_of(opt.attn_mask_shape, opt.attn_mask.size());
  const std::vector<size_t> bool_shape = shape_of(opt.bool_mask_shape, opt.bool_mask.size());

  MhaResult r;
  r.batch = B;
  r.tq = Tq;
  r.tk = Tk;
  std::vector<double> probs(B * H * Tq * Tk, 0.0);
  if (opt.need_scores) r.scores.assign(B * H * Tq * Tk, 0.0f);
  std::vector<double> Z(B * Tq * H * dv, 0.0);  // concat(heads)
  const double scale = opt.scale ? *opt.scale : 1.0 / std::sqrt(double(dk));
  // Key j is visible to query i iff i' - left <= j <= i' + right, with
  // i' = i + Tk - Tq when causal bottom-right, else i; causal caps right at 0.
  const bool bottom_right = opt.causal && opt.causal_alignment != CausalAlignment::kTopLeft;
  const double shift = bottom_right ? double(Tk) - double(Tq) : 0.0;
  const double left = double(opt.window[0]);
  const double right = opt.causal ? 0.0 : double(opt.window[1]);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  for (size_t b = 0; b < B; ++b) {
    for (size_t h = 0; h < H; ++h) {
      for (size_t i = 0; i < Tq; ++i) {
        std::vector<double> s(Tk);
        for (size_t j = 0; j < Tk; ++j) {
          double dot = 0;
          for (size_t d = 0; d < dk; ++d) {
            dot += Q[(b * Tq + i) * H * dk + h * dk + d] *
                   K[(b * Tk + j) * Hkv * dk + h / group * dk + d];
          }
          s[j] = dot * scale;
          if (opt.softcap) s[j] = *opt.softcap * std::tanh(s[j] / *opt.softcap);
          if (!opt.attn_mask.empty()) {
            s[j] += opt.attn_mask[ReferenceMaskIndex(attn_shape, b, h, i, j, Tq, Tk)];
          }
          if (!opt.key_padding_mask.empty() && opt.key_padding_mask[b * Tk + j] == 0) {
            s[j] = neg_inf;
          }
          if (!opt.bool_mask.empty() &&
              opt.bool_mask[ReferenceMaskIndex(bool_shape, b, h, i, j, Tq, Tk)] == 0) {
            s[j] = neg_inf;
          }
          if (!opt.kv_lengths.empty() && j >= opt.kv_lengths[b]) s[j] = neg_inf;
          const double diagonal = double(i) + shift;
          if ((opt.causal || right >= 0) && double(j) > diagonal + right) s[j] = neg_inf;
          if (left >= 0 && double(j) < diagonal - left) s[j] = neg_inf;
        }
        if (opt.need_scores) {
          float* out = &r.scores[((b * H + h) * Tq + i) * Tk];
          for (size_t j = 0; j < Tk; ++j) out[j] = float(s[j]);
        }
        const double mx = *std::max_element(s.begin(), s.end());
        if (mx == neg_inf) continue;  // every key masked: zeros
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        double* p = &probs[((b * H + h) * Tq + i) * Tk];
        for (size_t j = 0; j < Tk; ++j) p[j] = s[j] / sum;
        for (size_t e = 0; e < dv; ++e) {
          double acc = 0;
          for (size_t j = 0; j < Tk; ++j) {
            acc += p[j] * V[(b * Tk + j) * Hkv * dv + h / group * dv + e];
          }
          Z[(b * Tq + i) * H * dv + h * dv + e] = acc;
        }
      }
    }
  }
  r.output.assign(B * Tq * D, 0.0f);
  if (opt.need_per_head_output) r.per_head_output.assign(B * H * Tq * D, 0.0f);
  for (size_t b = 0; b < B; ++b) {
    for (size_t i = 0; i < Tq; ++i) {
      for (size_t n = 0; n < D; ++n) {
        double total = w.b_o.empty() ? 0.0 : w.b_o[n];
        for (size_t h = 0; h < H; ++h) {
          double head = 0;  // z_h W_O^h
          for (size_t e = 0; e < dv; ++e) {
            head += Z[(b * Tq + i) * H * dv + h * dv + e] * w.w_o[(h * dv + e) * D + n];
          }
          total += head;
          if (opt.need_per_head_output) {
            r.per_head_output[((b * H + h) * Tq + i) * D + n] = float(head);
          }
        }
        r.output[(b * Tq + i) * D + n] = float(total);
      }
    }
  }
  if (opt.need_weights) r.attn_weights.assign(probs.begin(), probs.end());
  return r;
}

}  // namespace simd_attention
