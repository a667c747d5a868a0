#include "reference/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace simd_attention {
namespace {

// y[rows, n] = x[rows, k] w[k, n] + b
std::vector<double> Linear(std::span<const float> x, size_t rows, size_t k,
                           std::span<const float> w, std::span<const float> b,
                           size_t n) {
  std::vector<double> y(rows * n);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < n; ++j) {
      double acc = b.empty() ? 0.0 : b[j];
      for (size_t i = 0; i < k; ++i) acc += double(x[r * k + i]) * w[i * n + j];
      y[r * n + j] = acc;
    }
  }
  return y;
}

}  // namespace

MhaResult ReferenceAttention(const MhaConfig& c, const MhaWeights& w,
                             const Tensor3& query, const Tensor3& key,
                             const Tensor3& value, const MhaOptions& opt) {
  const size_t B = query.batch, Tq = query.tokens, Tk = key.tokens;
  const size_t H = c.num_heads, dk = c.head_dim, dv = c.head_dim_v;  // resolved
  const size_t D = c.d_model;
  const std::vector<double> Q = Linear(query.data, B * Tq, D, w.w_q, w.b_q, H * dk);
  const std::vector<double> K = Linear(key.data, B * Tk, c.kdim, w.w_k, w.b_k, H * dk);
  const std::vector<double> V = Linear(value.data, B * Tk, c.vdim, w.w_v, w.b_v, H * dv);
  const bool mask_per_head = opt.attn_mask.size() == B * H * Tq * Tk && B * H > 1;

  MhaResult r;
  r.batch = B;
  r.tq = Tq;
  r.tk = Tk;
  std::vector<double> probs(B * H * Tq * Tk, 0.0);
  std::vector<double> Z(B * Tq * H * dv, 0.0);  // concat(heads)
  const double scale = 1.0 / std::sqrt(double(dk));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  for (size_t b = 0; b < B; ++b) {
    for (size_t h = 0; h < H; ++h) {
      for (size_t i = 0; i < Tq; ++i) {
        std::vector<double> s(Tk);
        for (size_t j = 0; j < Tk; ++j) {
          double dot = 0;
          for (size_t d = 0; d < dk; ++d) {
            dot += Q[(b * Tq + i) * H * dk + h * dk + d] *
                   K[(b * Tk + j) * H * dk + h * dk + d];
          }
          s[j] = dot * scale;
          if (!opt.attn_mask.empty()) {
            s[j] += opt.attn_mask[(mask_per_head ? (b * H + h) * Tq * Tk : 0) +
                                  i * Tk + j];
          }
          if (!opt.key_padding_mask.empty() && opt.key_padding_mask[b * Tk + j] == 0) {
            s[j] = neg_inf;
          }
          // Bottom-right aligned: j visible iff j <= i + Tk - Tq.
          if (opt.causal && double(j) > double(i) + double(Tk) - double(Tq)) {
            s[j] = neg_inf;
          }
        }
        const double mx = *std::max_element(s.begin(), s.end());
        if (mx == neg_inf) continue;  // every key masked: zeros
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        double* p = &probs[((b * H + h) * Tq + i) * Tk];
        for (size_t j = 0; j < Tk; ++j) p[j] = s[j] / sum;
        for (size_t e = 0; e < dv; ++e) {
          double acc = 0;
          for (size_t j = 0; j < Tk; ++j) acc += p[j] * V[(b * Tk + j) * H * dv + h * dv + e];
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
