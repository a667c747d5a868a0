#include "reference/sdpa_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace simd_attention {
namespace {

// Element (b, h, i, e) of a tensor in the options' layout.
double At(const HeadsTensor& t, HeadLayout layout, size_t b, size_t h, size_t i, size_t e) {
  const size_t at = layout == HeadLayout::kHeadMajor
                        ? ((b * t.heads + h) * t.tokens + i) * t.head_dim + e
                        : ((b * t.tokens + i) * t.heads + h) * t.head_dim + e;
  return t.data[at];
}

}  // namespace

size_t ReferenceMaskIndex(const std::vector<size_t>& shape, size_t b, size_t h, size_t i,
                          size_t j, size_t tq, size_t tk) {
  const size_t mb = shape.size() == 4 ? shape[0] : 1, mh = shape.size() == 4 ? shape[1] : 1;
  return (((mb == 1 ? 0 : b) * mh + (mh == 1 ? 0 : h)) * tq + i) * ReferenceMaskKeys(shape, tk) +
         j;
}

size_t ReferenceMaskKeys(const std::vector<size_t>& shape, size_t tk) {
  return shape.empty() ? tk : shape.back();
}

SdpaResult ReferenceScaledDotProductAttention(const HeadsTensor& q, const HeadsTensor& k,
                                              const HeadsTensor& v, const SdpaOptions& o) {
  const size_t B = q.batch, H = q.heads, Hkv = k.heads, Tq = q.tokens, Tk = k.tokens;
  const size_t d = q.head_dim, dv = v.head_dim;
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(double(d));
  const double neg_inf = -std::numeric_limits<double>::infinity();
  SdpaResult r{.batch = B, .heads = H, .tq = Tq, .tk = Tk, .head_dim_v = dv};
  r.output.assign(B * H * Tq * dv, 0.0f);
  r.attn_weights.assign(B * H * Tq * Tk, 0.0f);
  r.scores.assign(B * H * Tq * Tk, 0.0f);
  for (size_t b = 0; b < B; ++b) {
    for (size_t h = 0; h < H; ++h) {
      const size_t g = h / (H / Hkv);  // grouped-query: the key/value head
      for (size_t i = 0; i < Tq; ++i) {
        // The diagonal the causal mask and the window are relative to: query
        // i's position among the keys.
        const double diag =
            !o.query_offset.empty()
                ? double(o.query_offset[o.query_offset.size() == 1 ? 0 : b]) + double(i)
            : o.causal == CausalAlignment::kBottomRight ? double(i) + double(Tk) - double(Tq)
                                                        : double(i);
        std::vector<double> s(Tk);
        for (size_t j = 0; j < Tk; ++j) {
          double dot = 0;
          for (size_t e = 0; e < d; ++e) {
            dot += At(q, o.layout, b, h, i, e) * At(k, o.layout, b, g, j, e);
          }
          float& score = r.scores[((b * H + h) * Tq + i) * Tk + j];
          s[j] = dot * scale;
          if (o.scores_stage == ScoresStage::kScaled) score = float(s[j]);
          if (o.softcap) s[j] = *o.softcap * std::tanh(s[j] / *o.softcap);
          if (o.scores_stage == ScoresStage::kCapped) score = float(s[j]);
          // A mask narrower than Tk masks the keys past it.
          bool visible = true;
          if (!o.attn_mask.empty()) {
            if (j < ReferenceMaskKeys(o.attn_mask_shape, Tk)) {
              s[j] += o.attn_mask[ReferenceMaskIndex(o.attn_mask_shape, b, h, i, j, Tq, Tk)];
            } else {
              visible = false;
            }
          }
          if (!o.bool_mask.empty()) {
            visible &= j < ReferenceMaskKeys(o.bool_mask_shape, Tk) &&
                       o.bool_mask[ReferenceMaskIndex(o.bool_mask_shape, b, h, i, j, Tq, Tk)] != 0;
          }
          if (!o.key_padding_mask.empty()) visible &= o.key_padding_mask[b * Tk + j] != 0;
          if (!o.kv_lengths.empty()) visible &= j < o.kv_lengths[b];
          if (o.causal != CausalAlignment::kNone) visible &= double(j) <= diag;
          if (o.window[0] >= 0) visible &= double(j) >= diag - double(o.window[0]);
          if (o.window[1] >= 0) visible &= double(j) <= diag + double(o.window[1]);
          if (!visible) s[j] = neg_inf;
          if (o.scores_stage == ScoresStage::kMasked) score = float(s[j]);
        }
        const double mx = *std::max_element(s.begin(), s.end());
        if (mx == neg_inf) continue;  // no visible key: zeros
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (size_t e = 0; e < dv; ++e) {
          double acc = 0;
          for (size_t j = 0; j < Tk; ++j) acc += s[j] / sum * At(v, o.layout, b, g, j, e);
          const size_t at = o.layout == HeadLayout::kHeadMajor
                                ? ((b * H + h) * Tq + i) * dv + e
                                : ((b * Tq + i) * H + h) * dv + e;
          r.output[at] = float(acc);
        }
        for (size_t j = 0; j < Tk; ++j) {
          r.attn_weights[((b * H + h) * Tq + i) * Tk + j] = float(s[j] / sum);
        }
      }
    }
  }
  return r;
}

}  // namespace simd_attention
