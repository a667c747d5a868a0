// Integer GEMV for int8 weights over a vector layer `Ops` (LoadPairs,
// SetPair, MulAddPairs, see simd/ops_highway-inl.h), with the policy of
// int8_gemv.h: C = A * packed B (+ bias) for at most kInt8GemvMaxRows rows
// of A, B in the pair-interleaved int8 panels of kernels/gemm.h.
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

  // One panel's C tile of R rows: `pairs` K pairs of int8 rows at w times
  // the rows' pair words (row r's at words + r * ldw), summed in int32, then
  // c = sum * row scale * column scale + c0 (C itself, the bias with
  // ld0 = 0, or zeros).
  template <size_t R>
  [[gnu::noinline]] static void Tile(const int8_t* w, const int32_t* words, size_t ldw,
                                     size_t pairs, const float* row_scale, const float* scales,
                                     const float* c0, size_t ld0, float* c, size_t ldc) {
    VI acc[R][kVecs];
    for (size_t r = 0; r < R; ++r) {
      for (size_t v = 0; v < kVecs; ++v) acc[r][v] = Ops::ZeroI();
    }
    for (size_t i = 0; i < pairs; ++i, w += 2 * kPanel) {
      for (size_t r = 0; r < R; ++r) {
        const typename Ops::VP a = Ops::SetPair(words[r * ldw + i]);
        for (size_t v = 0; v < kVecs; ++v) {
          acc[r][v] = Ops::MulAddPairs(Ops::LoadPairs(w + v * 2 * kL), a, acc[r][v]);
        }
      }
    }
    for (size_t r = 0; r < R; ++r) {
      for (size_t v = 0; v < kVecs; ++v) {
        const V scale = Ops::Mul(Ops::Load(scales + v * kL), Ops::Set(row_scale[r]));
        Ops::Store(Ops::MulAdd(Ops::ToFloat(acc[r][v]), scale, Ops::Load(c0 + r * ld0 + v * kL)),
                   c + r * ldc + v * kL);
      }
    }
  }

  static void Multiply(const GemmArgs& g) {
    const size_t m = g.m;
    float row_scale[kInt8GemvMaxRows], inverse[kInt8GemvMaxRows];
    for (size_t r = 0; r < m; ++r) row_scale[r] = Int8RowScale(g.a + r * g.lda, g.k, inverse + r);
    // Pairs start at an even row (QuantizePairs: `first`).
    const size_t first = g.k_begin % 2;
    const size_t pairs = (first + g.k + 1) / 2;
    const int8_t* b = static_cast<const int8_t*>(g.packed_b) + (g.k_begin - first) * kPanel;
    const size_t panel_bytes = kPanel * PanelRows(WeightType::kInt8, g.packed_rows);
    alignas(64) static constexpr float kZeros[kPanel] = {};
    alignas(64) float edge[kInt8GemvMaxRows * kPanel];  // C tile at the right edge
    int32_t words[kInt8GemvMaxRows][kInt8WordPairs];
    for (size_t h0 = 0; h0 < pairs; h0 += kInt8WordPairs) {
      const size_t held = std::min(kInt8WordPairs, pairs - h0);
      for (size_t r = 0; r < m; ++r) {
        QuantizePairs(g.a + r * g.lda, g.k, first, h0, held, inverse[r], words[r]);
      }
      for (size_t col0 = 0; col0 < g.n; col0 += kPanel) {
        const size_t cols = std::min(kPanel, g.n - col0);
        // The right edge's running sums stay in `edge` between chunks.
        float* c = cols == kPanel ? g.c + col0 : edge;
        const size_t ldc = cols == kPanel ? g.ldc : kPanel;
        for (size_t p0 = h0; p0 < h0 + held; p0 += kInt8ChunkPairs) {
          const size_t pc = std::min(kInt8ChunkPairs, h0 + held - p0);
          const int8_t* w = b + col0 / kPanel * panel_bytes + p0 * 2 * kPanel;
          const float* c0 = p0 != 0                    ? c
                            : g.packed_bias != nullptr ? g.packed_bias + col0
                                                       : kZeros;
          const size_t ld0 = p0 != 0 ? ldc : 0;
          // Rows in twos: a tile of 2 reads its weights once for both rows,
          // the next two read them again from L1 (a chunk of a panel is
          // 2 * kInt8ChunkPairs * kPanel bytes); tiles of 3 and 4 rows cost
          // more .wasm than that costs time.
          for (size_t r = 0; r < m; r += 2) {
            (m - r >= 2 ? &Tile<2> : &Tile<1>)(w, &words[r][p0 - h0], kInt8WordPairs, pc,
                                               row_scale + r, g.packed_scales + col0,
                                               c0 + r * ld0, ld0, c + r * ldc, ldc);
          }
        }
        if (c == edge) {
          for (size_t r = 0; r < m; ++r) CopyN(edge + r * kPanel, cols, g.c + r * g.ldc + col0);
        }
      }
    }
  }
};
