#include "reference/mha_backward_reference.h"

#include <cmath>
#include <limits>

namespace simd_attention {
namespace {

// Index of (b, h, i, j) in a mask of `given` values: [Tq, Tk] or
// [B or 1, H or 1, Tq, Tk] by `shape`, or without one [B, H, Tq, Tk] by length.
size_t MaskIndex(size_t given, const std::vector<size_t>& shape, size_t B, size_t H, size_t b,
                 size_t h, size_t i, size_t j, size_t tq, size_t tk) {
  size_t mb = 1, mh = 1;
  if (shape.size() == 4) {
    mb = shape[0];
    mh = shape[1];
  } else if (shape.empty() && given == B * H * tq * tk) {
    mb = B;
    mh = H;
  }
  return (((mb == 1 ? 0 : b) * mh + (mh == 1 ? 0 : h)) * tq + i) * tk + j;
}

// RoPE on rows [B * tokens, heads * d] from position pos0, by the angles
// times `sign` (-1: the transpose, which carries gradients back).
void Rotate64(std::vector<double>& x, size_t tokens, size_t heads, size_t d,
              const RopeConfig& rope, size_t pos0, double sign) {
  if (rope.style == RopeStyle::kNone) return;
  const size_t r = rope.rotary_dim, half = r / 2;
  const bool split = rope.style == RopeStyle::kHalf;
  for (size_t row = 0; row < x.size() / (heads * d); ++row) {
    const double position = double(pos0 + row % tokens);
    for (size_t h = 0; h < heads; ++h) {
      double* v = &x[(row * heads + h) * d];
      for (size_t i = 0; i < half; ++i) {
        const double angle = sign * position * std::pow(rope.base, -2.0 * double(i) / double(r));
        double& a = v[split ? i : 2 * i];
        double& e = v[split ? i + half : 2 * i + 1];
        const double a0 = a, e0 = e;
        a = a0 * std::cos(angle) - e0 * std::sin(angle);
        e = a0 * std::sin(angle) + e0 * std::cos(angle);
      }
    }
  }
}

// QK-norm over every head of d features: y = x / rms(x) * gamma, gamma
// = scale as stored (+ 1 for Gemma's kind).
double NormScale(const QkNormConfig& norm, const std::vector<double>& stored, size_t i) {
  return (Traits(norm.kind).plus_one ? 1.0 : 0.0) + stored[i];
}

double InverseRms64(const double* v, size_t d, double eps) {
  double squares = 0;
  for (size_t i = 0; i < d; ++i) squares += v[i] * v[i];
  return 1 / std::sqrt(squares / double(d) + eps);
}

std::vector<double> NormalizeHeads64(const std::vector<double>& x, size_t d,
                                     const QkNormConfig& norm, const std::vector<double>& stored) {
  std::vector<double> y = x;
  if (!norm.enabled) return y;
  for (size_t h = 0; h < x.size() / d; ++h) {
    const double inv = InverseRms64(&x[h * d], d, norm.eps);
    for (size_t i = 0; i < d; ++i) y[h * d + i] = x[h * d + i] * inv * NormScale(norm, stored, i);
  }
  return y;
}

// Its backward by the definition: with g_i = dy_i gamma_i,
//   dx_i = inv g_i - x_i inv^3 / d * sum_j g_j x_j, dgamma_i = sum dy_i x_i inv.
// dy becomes dx in place.
void NormalizeHeadsBackward64(const std::vector<double>& x, size_t d, const QkNormConfig& norm,
                              const std::vector<double>& stored, std::vector<double>& dy,
                              std::vector<double>& d_scale) {
  if (!norm.enabled) return;
  d_scale.assign(d, 0.0);
  for (size_t h = 0; h < x.size() / d; ++h) {
    const double* v = &x[h * d];
    double* g = &dy[h * d];
    const double inv = InverseRms64(v, d, norm.eps);
    double gx = 0;
    for (size_t i = 0; i < d; ++i) {
      d_scale[i] += g[i] * v[i] * inv;
      gx += g[i] * NormScale(norm, stored, i) * v[i];
    }
    for (size_t i = 0; i < d; ++i) {
      g[i] = inv * g[i] * NormScale(norm, stored, i) - v[i] * inv * inv * inv / double(d) * gx;
    }
  }
}

}  // namespace

// The gradients of y = x w + b given dy: dw = x^T dy, db = the column sums
// of dy (when there is a bias), dx = dy w^T.
void LinearBackward64(const std::vector<double>& x, size_t rows, size_t in,
                    const std::vector<double>& w, bool bias, const std::vector<double>& dy,
                    size_t out, std::vector<double>& dx, std::vector<double>& dw,
                    std::vector<double>& db) {
  dx.assign(rows * in, 0.0);
  dw.assign(in * out, 0.0);
  db.assign(bias ? out : 0, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t o = 0; o < out; ++o) {
      const double g = dy[r * out + o];
      if (bias) db[o] += g;
      for (size_t i = 0; i < in; ++i) {
        dw[i * out + o] += x[r * in + i] * g;
        dx[r * in + i] += g * w[i * out + o];
      }
    }
  }
}


MhaBackward64 ReferenceMhaBackward(const MhaConfig& c, const MhaProblem64& p,
                                   const MhaOptions& o, std::span<const double> d_output) {
  const size_t B = p.batch, tq = p.tq, tk = p.tk, H = c.num_heads, Hkv = c.num_kv_heads;
  const size_t group = H / Hkv, d = c.head_dim, dv = c.head_dim_v, dm = c.d_model;
  const size_t hd = H * d, kvd = Hkv * d, hdv = H * dv, kvdv = Hkv * dv;
  const std::vector<double> q_projected = Linear64(p.query, B * tq, dm, p.w_q, p.b_q, hd);
  const std::vector<double> k_projected = Linear64(p.key, B * tk, c.kdim, p.w_k, p.b_k, kvd);
  std::vector<double> q = NormalizeHeads64(q_projected, d, c.qk_norm, p.q_norm);
  std::vector<double> k = NormalizeHeads64(k_projected, d, c.qk_norm, p.k_norm);
  Rotate64(q, tq, H, d, c.rope, o.position_offset, 1.0);
  Rotate64(k, tk, Hkv, d, c.rope, p.key_pos0, 1.0);
  const std::vector<double> v = Linear64(p.value, B * tk, c.vdim, p.w_v, p.b_v, kvdv);
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(double(d));
  const bool bottom_right = o.causal && o.causal_alignment == CausalAlignment::kBottomRight;

  // P [B, H, tq, tk] and the scaled scores before the cap, for its derivative.
  std::vector<double> probs(B * H * tq * tk, 0.0), raw(B * H * tq * tk, 0.0);
  std::vector<double> z(B * tq * hdv, 0.0);
  for (size_t b = 0; b < B; ++b) {
    for (size_t h = 0; h < H; ++h) {
      const size_t g = h / group;
      for (size_t i = 0; i < tq; ++i) {
        const double diag = bottom_right ? double(i) + double(tk) - double(tq) : double(i);
        const size_t row = ((b * H + h) * tq + i) * tk;
        std::vector<double> s(tk);
        std::vector<char> visible(tk, 1);
        bool any = false;
        for (size_t j = 0; j < tk; ++j) {
          double dot = 0;
          for (size_t e = 0; e < d; ++e) {
            dot += q[(b * tq + i) * hd + h * d + e] * k[(b * tk + j) * kvd + g * d + e];
          }
          raw[row + j] = dot * scale;
          s[j] = o.softcap ? *o.softcap * std::tanh(raw[row + j] / *o.softcap) : raw[row + j];
          if (!o.attn_mask.empty()) {
            s[j] += o.attn_mask[MaskIndex(o.attn_mask.size(), o.attn_mask_shape, B, H, b, h, i,
                                          j, tq, tk)];
          }
          bool vis = true;
          if (!o.bool_mask.empty()) {
            vis = vis && o.bool_mask[MaskIndex(o.bool_mask.size(), o.bool_mask_shape, B, H, b,
                                               h, i, j, tq, tk)] != 0;
          }
          if (!o.key_padding_mask.empty()) vis = vis && o.key_padding_mask[b * tk + j] != 0;
          if (!o.kv_lengths.empty()) vis = vis && j < o.kv_lengths[b];
          if (o.causal) vis = vis && double(j) <= diag;
          if (o.window[0] >= 0) vis = vis && double(j) >= diag - double(o.window[0]);
          if (o.window[1] >= 0) vis = vis && double(j) <= diag + double(o.window[1]);
          vis = vis && s[j] != -std::numeric_limits<double>::infinity();
          visible[j] = vis;
          any = any || vis;
        }
        if (!any) continue;  // no visible key: zero probabilities and output
        double mx = -std::numeric_limits<double>::infinity();
        for (size_t j = 0; j < tk; ++j) {
          if (visible[j]) mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (size_t j = 0; j < tk; ++j) {
          if (visible[j]) sum += probs[row + j] = std::exp(s[j] - mx);
        }
        for (size_t j = 0; j < tk; ++j) {
          probs[row + j] /= sum;
          for (size_t e = 0; e < dv; ++e) {
            z[(b * tq + i) * hdv + h * dv + e] +=
                probs[row + j] * v[(b * tk + j) * kvdv + g * dv + e];
          }
        }
      }
    }
  }
  MhaBackward64 r;
  r.output = Linear64(z, B * tq, hdv, p.w_o, p.b_o, dm);
  if (d_output.empty()) return r;

  const std::vector<double> dy(d_output.begin(), d_output.end());
  std::vector<double> dz;
  LinearBackward64(z, B * tq, hdv, p.w_o, c.bias, dy, dm, dz, r.d_w_o, r.d_b_o);
  std::vector<double> dq(q.size(), 0.0), dk(k.size(), 0.0), dvv(v.size(), 0.0);
  for (size_t b = 0; b < B; ++b) {
    for (size_t h = 0; h < H; ++h) {
      const size_t g = h / group;
      for (size_t i = 0; i < tq; ++i) {
        const size_t row = ((b * H + h) * tq + i) * tk;
        std::vector<double> dp(tk, 0.0);
        double rowsum = 0;
        for (size_t j = 0; j < tk; ++j) {
          for (size_t e = 0; e < dv; ++e) {
            const double dze = dz[(b * tq + i) * hdv + h * dv + e];
            dp[j] += dze * v[(b * tk + j) * kvdv + g * dv + e];
            dvv[(b * tk + j) * kvdv + g * dv + e] += probs[row + j] * dze;
          }
          rowsum += probs[row + j] * dp[j];
        }
        for (size_t j = 0; j < tk; ++j) {
          double ds = probs[row + j] * (dp[j] - rowsum);
          if (o.softcap) {
            const double t = std::tanh(raw[row + j] / *o.softcap);
            ds *= 1 - t * t;
          }
          for (size_t e = 0; e < d; ++e) {
            dq[(b * tq + i) * hd + h * d + e] += scale * ds * k[(b * tk + j) * kvd + g * d + e];
            dk[(b * tk + j) * kvd + g * d + e] += scale * ds * q[(b * tq + i) * hd + h * d + e];
          }
        }
      }
    }
  }
  Rotate64(dq, tq, H, d, c.rope, o.position_offset, -1.0);
  Rotate64(dk, tk, Hkv, d, c.rope, p.key_pos0, -1.0);
  NormalizeHeadsBackward64(q_projected, d, c.qk_norm, p.q_norm, dq, r.d_q_norm);
  NormalizeHeadsBackward64(k_projected, d, c.qk_norm, p.k_norm, dk, r.d_k_norm);
  LinearBackward64(p.query, B * tq, dm, p.w_q, c.bias, dq, hd, r.d_query, r.d_w_q, r.d_b_q);
  LinearBackward64(p.key, B * tk, c.kdim, p.w_k, c.bias, dk, kvd, r.d_key, r.d_w_k, r.d_b_k);
  LinearBackward64(p.value, B * tk, c.vdim, p.w_v, c.bias, dvv, kvdv, r.d_value, r.d_w_v,
                 r.d_b_v);
  return r;
}

}  // namespace simd_attention
