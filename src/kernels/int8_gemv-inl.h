// Integer GEMV for int8 weights over a vector layer `Ops` (MulAddPairs, see
// simd/ops_highway-inl.h), with the policy of int8_gemv.h: C = A * packed B
// (+ bias) for at most kInt8GemvMaxRows rows of A, B in the pair-interleaved
// int8 panels of kernels/gemm.h.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after gemm-inl.h.

template <class Ops>
struct Int8Gemv {
  using V = typename Ops::V;
  using VI = typename Ops::VI;
  static constexpr size_t kL = Ops::kLanes;
  static constexpr size_t kVecs = Gemm<Ops>::kVecs;
  static constexpr size_t kPanel = Gemm<Ops>::kPanel;

  // Two int16 in one int32, `lo` in the low half (as MulAddPairs reads it).
  static int32_t PairWord(int32_t lo, int32_t hi) {
    return static_cast<int32_t>((static_cast<uint32_t>(lo) & 0xffffu) |
                                (static_cast<uint32_t>(hi) << 16));
  }

  // One panel's C tile (R rows x kPanel columns): `pairs` K pairs of int8
  // rows at w times the rows' pair words, summed in int32, then
  // c = sum * row_scale[r] * column scale + c0, where c0 is C (accumulate),
  // the bias, or zero.
  template <size_t R>
  static void Tile(const int8_t* w, const int32_t (*words)[kInt8ChunkPairs], size_t pairs,
                    const float* row_scale, const float* scales, const float* bias,
                    bool accumulate, float* c, size_t ldc) {
    VI acc[R][kVecs];
    for (size_t r = 0; r < R; ++r) {
      for (size_t v = 0; v < kVecs; ++v) acc[r][v] = Ops::ZeroI();
    }
    for (size_t i = 0; i < pairs; ++i, w += 2 * kPanel) {
      for (size_t r = 0; r < R; ++r) {
        for (size_t v = 0; v < kVecs; ++v) {
          acc[r][v] = Ops::MulAddPairs(w + v * 2 * kL, words[r][i], acc[r][v]);
        }
      }
    }
    for (size_t r = 0; r < R; ++r) {
      for (size_t v = 0; v < kVecs; ++v) {
        float* out = c + r * ldc + v * kL;
        const V c0 = accumulate         ? Ops::Load(out)
                     : bias != nullptr ? Ops::Load(bias + v * kL)
                                       : Ops::Zero();
        const V scale = Ops::Mul(Ops::Load(scales + v * kL), Ops::Set(row_scale[r]));
        Ops::Store(Ops::MulAdd(Ops::ToFloat(acc[r][v]), scale, c0), out);
      }
    }
  }

  // Tile with a run-time row count (1..R).
  template <size_t R = kInt8GemvMaxRows>
  static void TileRows(size_t rows, const int8_t* w, const int32_t (*words)[kInt8ChunkPairs],
                        size_t pairs, const float* row_scale, const float* scales,
                        const float* bias, bool accumulate, float* c, size_t ldc) {
    if constexpr (R > 1) {
      if (rows < R) {
        return TileRows<R - 1>(rows, w, words, pairs, row_scale, scales, bias, accumulate, c,
                                ldc);
      }
    }
    Tile<R>(w, words, pairs, row_scale, scales, bias, accumulate, c, ldc);
  }

  static void Multiply(const GemmArgs& g) {
    const size_t m = g.m;
    if (m == 0) return;
    // Row r of A as int16: q = round(a * 32767 / max |a|), |q| <= 32767 (the
    // product's roundings stay below half a step); a row of zeros has scale
    // 0 and quantizes to zeros.
    float row_scale[kInt8GemvMaxRows], inverse[kInt8GemvMaxRows];
    for (size_t r = 0; r < m; ++r) {
      float largest = 0;
      for (size_t kk = 0; kk < g.k; ++kk) largest = std::max(largest, std::fabs(g.a[r * g.lda + kk]));
      row_scale[r] = largest / 32767.0f;
      inverse[r] = largest > 0 ? 32767.0f / largest : 0.0f;
    }
    // An odd k_begin puts A's first column in the second row of a K pair:
    // the pair's first activation is then 0, as is the last one's second
    // when the pairs run past k.
    const size_t first = g.k_begin % 2;
    const size_t pairs = (first + g.k + 1) / 2;
    const int8_t* b = static_cast<const int8_t*>(g.packed_b) + (g.k_begin - first) * kPanel;
    const size_t panel_bytes = kPanel * PanelRows(WeightType::kInt8, g.packed_rows);
    alignas(64) float edge[kInt8GemvMaxRows * kPanel];  // C tile at the right edge
    int32_t words[kInt8GemvMaxRows][kInt8ChunkPairs];
    for (size_t p0 = 0; p0 < pairs; p0 += kInt8ChunkPairs) {
      const size_t pc = std::min(kInt8ChunkPairs, pairs - p0);
      for (size_t r = 0; r < m; ++r) {
        const float* a = g.a + r * g.lda;
        auto q = [&](size_t j) -> int32_t {  // j: row of the pairs, from k_begin - first
          if (j < first || j - first >= g.k) return 0;
          return static_cast<int32_t>(std::nearbyint(a[j - first] * inverse[r]));
        };
        for (size_t i = 0; i < pc; ++i) {
          const size_t j = 2 * (p0 + i);
          words[r][i] = PairWord(q(j), q(j + 1));
        }
      }
      const bool accumulate = p0 != 0;
      for (size_t col0 = 0; col0 < g.n; col0 += kPanel) {
        const int8_t* w = b + col0 / kPanel * panel_bytes + p0 * 2 * kPanel;
        const float* bias = g.packed_bias == nullptr ? nullptr : g.packed_bias + col0;
        const float* scales = g.packed_scales + col0;
        const size_t cols = std::min(kPanel, g.n - col0);
        if (cols == kPanel) {
          TileRows(m, w, words, pc, row_scale, scales, bias, accumulate, g.c + col0, g.ldc);
          continue;
        }
        // The right edge: its running sums stay in `edge` between chunks.
        TileRows(m, w, words, pc, row_scale, scales, bias, accumulate, edge, kPanel);
        for (size_t r = 0; r < m; ++r) CopyN(edge + r * kPanel, cols, g.c + r * g.ldc + col0);
      }
    }
  }
};
