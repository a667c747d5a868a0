// GEMM for 4-bit weights over a vector layer `Ops` (LoadNibblePairs and the
// int8 kernel's operations; see simd/ops_highway-inl.h), with the policy of
// q4_gemm.h: C = A * packed B (+ bias), B in the q4 panels of q4_layout.h,
// A quantized per row to int16 by Int8Gemm::Quantize.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after int8_gemm-inl.h.

template <class Ops>
struct Q4Gemm {
  using V = typename Ops::V;
  using VI = typename Ops::VI;
  using VP = typename Ops::VP;
  static constexpr size_t kL = Ops::kLanes;
  static constexpr size_t kRows = Gemm<Ops>::kRows;
  static constexpr size_t kVecs = Gemm<Ops>::kVecs;
  static constexpr size_t kPanel = Gemm<Ops>::kPanel;

  // One panel's C tile of R rows over `blocks` blocks at w: per block, the
  // nibbles q - 8 times the tile's words (kRows per pair, this tile's R
  // first) summed in int32, converted and times the block's scales into
  // float sums; then c = sums * row step + c0 (the bias with ld0 = 0, or
  // zeros). A tile of fewer than kRows rows (a decoding step's one row)
  // sums q a from minus 8 times the block's sum of the row's words
  // (`eights`, kRows per block), which ends at the sum of (q - 8) a
  // exactly: two operations fewer per load of nibbles, shared by few rows.
  // A whole tile shares each load by kRows rows, and the block sums would
  // cost more than they save (a pass over A per product: 5-8% of an
  // AVX-512 prefill).
  // The float sums stay in registers where there are enough (32), else the
  // compiler keeps them on the stack: they are touched once per block.
  template <size_t R>
  [[gnu::noinline]] static void Tile(const uint8_t* w, size_t blocks, const int32_t* words,
                                     const int32_t* eights, const float* row_scale,
                                     const float* c0, size_t ld0,
                                     float* c, size_t ldc) {
    constexpr size_t kHalf = kQ4BlockPairs / 2;
    V sums[R][kVecs];
    for (size_t r = 0; r < R; ++r) {
      for (size_t v = 0; v < kVecs; ++v) sums[r][v] = Ops::Zero();
    }
    constexpr bool kFolded = R < kRows;
    const VP eight = Ops::SetPair(0x00080008);
    for (size_t b = 0; b < blocks; ++b, w += Q4BlockBytes(kPanel), words += kQ4BlockPairs * kRows) {
      VI acc[R][kVecs];
      for (size_t r = 0; r < R; ++r) {
        const VI start = kFolded ? Ops::SetI(-eights[b * kRows + r]) : Ops::ZeroI();
        for (size_t v = 0; v < kVecs; ++v) acc[r][v] = start;
      }
      for (size_t p = 0; p < kHalf; ++p) {
        VP low[kVecs], high[kVecs];
        for (size_t v = 0; v < kVecs; ++v) {
          Ops::LoadNibblePairs(w + p * 2 * kPanel + v * 2 * kL, &low[v], &high[v]);
          if constexpr (!kFolded) {
            low[v] = Ops::SubPairs(low[v], eight);
            high[v] = Ops::SubPairs(high[v], eight);
          }
        }
        for (size_t r = 0; r < R; ++r) {
          const VP a_low = Ops::SetPair(words[p * kRows + r]);
          const VP a_high = Ops::SetPair(words[(p + kHalf) * kRows + r]);
          for (size_t v = 0; v < kVecs; ++v) {
            acc[r][v] = Ops::MulAddPairs(low[v], a_low, acc[r][v]);
            acc[r][v] = Ops::MulAddPairs(high[v], a_high, acc[r][v]);
          }
        }
      }
      const auto* scales = reinterpret_cast<const F16Bits*>(w + kQ4BlockPairs * kPanel);
      for (size_t v = 0; v < kVecs; ++v) {
        const V d = Ops::Widen(scales + v * kL);
        for (size_t r = 0; r < R; ++r) {
          sums[r][v] = Ops::MulAdd(Ops::ToFloat(acc[r][v]), d, sums[r][v]);
        }
      }
    }
    for (size_t r = 0; r < R; ++r) {
      const V step = Ops::Set(row_scale[r]);
      for (size_t v = 0; v < kVecs; ++v) {
        Ops::Store(Ops::MulAdd(sums[r][v], step, Ops::Load(c0 + r * ld0 + v * kL)),
                   c + r * ldc + v * kL);
      }
    }
  }

  // Panel after panel, each walked whole by every row tile in turn, in
  // tiles of kRows rows, then twos and ones, as Int8Gemm::Multiply.
  static void Multiply(const GemmArgs& g) {
    if (g.m == 0) return;
    const size_t blocks = Q4Blocks(Q4Lead(g.k_begin) + g.k);
    const size_t pairs = blocks * kQ4BlockPairs;
    std::unique_ptr<int32_t[]> own_words;
    std::unique_ptr<float[]> own_scales;
    Int8Rows q{};
    if (g.int8_rows != nullptr) {
      q = *g.int8_rows;
    } else {
      std::unique_ptr<float[]> padded;
      const GemmArgs a = Q4ActivationArgs(g, &padded);
      own_words.reset(new int32_t[Int8Words(g.m, kRows, a.k, a.k_begin)]);
      own_scales.reset(new float[g.m]);
      Int8Gemm<Ops>::Quantize(a, own_words.get(), own_scales.get());
      q = {own_words.get(), own_scales.get()};
    }
    // The rows after the whole tiles: 8 times each block's sum of the row's
    // words, in the words' tile order (kRows per block), for Tile's fold.
    const size_t whole = g.m / kRows * kRows;
    std::unique_ptr<int32_t[]> eights(whole < g.m ? new int32_t[blocks * kRows] : nullptr);
    for (size_t r = whole; r < g.m; ++r) {
      Q4BlockEights(q.words + whole * pairs + r % kRows, kRows, blocks, eights.get() + r % kRows);
    }
    const uint8_t* b = static_cast<const uint8_t*>(g.packed_b) +
                       g.k_begin / kQ4BlockRows * Q4BlockBytes(kPanel);
    const size_t panel_bytes = Q4PanelBytes(g.packed_rows, kPanel);
    alignas(64) static constexpr float kZeros[kPanel] = {};
    alignas(64) float edge[kRows * kPanel];  // C tile at the right edge
    for (size_t col0 = 0; col0 < g.n; col0 += kPanel) {
      const size_t cols = std::min(kPanel, g.n - col0);
      const uint8_t* panel = b + col0 / kPanel * panel_bytes;
      const float* bias = g.packed_bias != nullptr ? g.packed_bias + col0 : kZeros;
      for (size_t row0 = 0, rows; row0 < g.m; row0 += rows) {
        rows = g.m - row0 >= kRows ? kRows : g.m - row0 >= 2 ? 2 : 1;
        const auto tile = rows == kRows ? &Tile<kRows> : rows == 2 ? &Tile<2> : &Tile<1>;
        const int32_t* words = q.words + row0 / kRows * kRows * pairs + row0 % kRows;
        float* c = cols == kPanel ? g.c + row0 * g.ldc + col0 : edge;
        const size_t ldc = cols == kPanel ? g.ldc : kPanel;
        tile(panel, blocks, words, eights.get() + row0 % kRows, q.scales + row0, bias, 0, c, ldc);
        if (c == edge) {
          for (size_t r = 0; r < rows; ++r) {
            CopyN(edge + r * kPanel, cols, g.c + (row0 + r) * g.ldc + col0);
          }
        }
      }
    }
  }
};
