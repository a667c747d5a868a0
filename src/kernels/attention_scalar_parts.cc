// The attention kernel's scalar parts (key ranges, query packing, masks, the
// check and scale of a block whose sums overflowed):
// plain scalar code, the same for every vector layer, so it is compiled once
// instead of once per target (attention-inl.h calls it per block). Compiled
// per target, the packing loop alone was auto-vectorized into 5-6 KB of
// .wasm per backend for a copy that costs a fraction of a block's products.
#include <algorithm>
#include <limits>

#include "kernels/attention.h"

namespace simd_attention {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

void VisibleKeys(const AttentionArgs& a, size_t q0, size_t nq, size_t& begin, size_t& end) {
  const ptrdiff_t diagonal = static_cast<ptrdiff_t>(q0) + a.causal_diagonal;
  const ptrdiff_t tk = static_cast<ptrdiff_t>(a.tk);
  begin = a.sliding ? static_cast<size_t>(std::clamp<ptrdiff_t>(diagonal - a.window_left, 0, tk))
                    : 0;
  end = a.causal ? static_cast<size_t>(std::clamp<ptrdiff_t>(
                       diagonal + static_cast<ptrdiff_t>(nq) + a.window_right, 0, tk))
                 : a.tk;
  end = std::min(end, a.masked_from);
  begin = std::min(begin, end);
}

void PackScaledQueries(const AttentionArgs& a, size_t q0, size_t nq, size_t cols, size_t panel,
                       float* qt) {
  if (panel == 0) {
    for (size_t i = 0; i < nq; ++i) {
      const float* q = a.q + (q0 + i) * a.ldq;
      for (size_t d = 0; d < a.dk; ++d) qt[i * a.dk + d] = q[d] * a.scale;
    }
    return;
  }
  for (size_t p = 0; p < cols / panel; ++p) {
    float* out = qt + p * a.dk * panel;
    for (size_t c = 0; c < panel; ++c) {
      const size_t i = p * panel + c;
      if (i < nq) {
        const float* q = a.q + (q0 + i) * a.ldq;
        for (size_t d = 0; d < a.dk; ++d) out[d * panel + c] = q[d] * a.scale;
      } else {
        for (size_t d = 0; d < a.dk; ++d) out[d * panel + c] = 0.0f;
      }
    }
  }
}

bool AllPadding(const AttentionArgs& a, size_t k0, size_t nk) {
  if (a.key_valid == nullptr) return false;
  return std::all_of(a.key_valid + k0, a.key_valid + k0 + nk, [](uint8_t v) { return v == 0; });
}

void MaskScores(const AttentionArgs& a, size_t q0, size_t nq, size_t k0, size_t nk, float* st,
                size_t cols) {
  if (a.key_valid != nullptr) {
    for (size_t j = 0; j < nk; ++j) {
      if (a.key_valid[k0 + j] == 0) std::fill_n(st + j * cols, cols, kNegInf);
    }
  }
  // Keys past the masks are hidden (the second pass's blocks run past them).
  const size_t masked = std::clamp(a.masked_from, k0, k0 + nk) - k0;
  for (size_t j = masked; j < nk; ++j) std::fill_n(st + j * cols, cols, kNegInf);
  if (a.additive_mask != nullptr) {
    for (size_t j = 0; j < masked; ++j) {
      for (size_t i = 0; i < nq; ++i) {
        st[j * cols + i] += a.additive_mask[(q0 + i) * a.mask_ld + k0 + j];
      }
    }
  }
  if (a.boolean_mask != nullptr) {
    for (size_t j = 0; j < masked; ++j) {
      for (size_t i = 0; i < nq; ++i) {
        if (a.boolean_mask[(q0 + i) * a.boolean_mask_ld + k0 + j] == 0) st[j * cols + i] = kNegInf;
      }
    }
  }
  // Key j is hidden from query i iff j > i + causal_diagonal + window_right;
  // only blocks that cross that diagonal need the per-element test.
  const ptrdiff_t diagonal = a.causal_diagonal + static_cast<ptrdiff_t>(q0);
  const ptrdiff_t shift = diagonal + a.window_right;
  const ptrdiff_t width = static_cast<ptrdiff_t>(cols);
  if (a.causal && static_cast<ptrdiff_t>(k0 + nk) - 1 > shift) {
    for (size_t j = 0; j < nk; ++j) {
      // Queries i < k0 + j - shift do not see key j.
      const ptrdiff_t end = std::clamp<ptrdiff_t>(static_cast<ptrdiff_t>(k0 + j) - shift, 0, width);
      std::fill_n(st + j * cols, end, kNegInf);
    }
  }
  // Sliding window: key j is hidden from query i iff
  // j < i + causal_diagonal - window_left; only blocks that start before the
  // last query's first visible key need the per-element test.
  const ptrdiff_t first = diagonal - a.window_left;  // query 0's first key
  if (a.sliding && static_cast<ptrdiff_t>(k0) < first + static_cast<ptrdiff_t>(nq) - 1) {
    for (size_t j = 0; j < nk; ++j) {
      // Queries i >= k0 + j - first + 1 do not see key j.
      const ptrdiff_t begin =
          std::clamp<ptrdiff_t>(static_cast<ptrdiff_t>(k0 + j) - first + 1, 0, width);
      std::fill(st + j * cols + begin, st + (j + 1) * cols, kNegInf);
    }
  }
}

void WriteScores(const AttentionArgs& a, ScoresStage stage, size_t q0, size_t nq, size_t k0,
                 size_t nk, const float* st, size_t cols) {
  if (a.scores == nullptr || stage != a.scores_stage) return;
  float* out = a.scores + q0 * a.tk + k0;
  for (size_t i = 0; i < nq; ++i) {
    for (size_t j = 0; j < nk; ++j) {
      out[i * a.tk + j] = st == nullptr ? kNegInf : st[j * cols + i];
    }
  }
}

float RescueScale(const AttentionArgs& a, size_t q0, size_t nq, size_t keys, float scale,
                  float* l) {
  if (scale != 1.0f) {
    for (size_t i = 0; i < nq; ++i) l[i] /= scale;
    return 0.0f;
  }
  // x * 0 is 0 for a finite x, NaN for an infinity or NaN.
  float not_finite = 0.0f;
  for (size_t i = 0; i < nq; ++i) {
    for (size_t d = 0; d < a.dv; ++d) not_finite += a.z[(q0 + i) * a.ldz + d] * 0.0f;
  }
  if (not_finite == 0.0f) return 0.0f;
  for (scale = 0.5f; keys > 0; keys >>= 1) scale *= 0.5f;
  return scale;
}

void WriteSoftmaxStats(const AttentionArgs& a, size_t q0, size_t nq, const float* m,
                       const float* l) {
  for (size_t i = 0; i < nq; ++i) {
    a.softmax_stats[2 * (q0 + i)] = m[i];
    a.softmax_stats[2 * (q0 + i) + 1] = l[i];
  }
}

}  // namespace simd_attention
