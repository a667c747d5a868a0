// Integer GEMM for int8 weights over a vector layer `Ops` (RoundToInt,
// StoreInt16, LoadPairs, SetPair, MulAddPairs; see simd/ops_highway-inl.h),
// with the policy of int8_gemm.h: C = A * packed B (+ bias), B in the
// pair-interleaved int8 panels of kernels/gemm.h, A quantized per row to
// int16.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after gemm-inl.h.

template <class Ops>
struct Int8Gemm {
  using V = typename Ops::V;
  using VI = typename Ops::VI;
  using VP = typename Ops::VP;
  static constexpr size_t kL = Ops::kLanes;
  static constexpr size_t kRows = Gemm<Ops>::kRows;
  static constexpr size_t kVecs = Gemm<Ops>::kVecs;
  static constexpr size_t kPanel = Gemm<Ops>::kPanel;
  // Pairs of a row quantized at a time into a line on the stack (1 KiB).
  static constexpr size_t kLinePairs = 256;

  // A's rows (m rows of k columns from packed row k_begin) quantized into
  // the layout of Int8Words, each row's step in row_scales (Int8Step of the
  // row's max |a|; round(a / step) to nearest even).
  [[gnu::noinline]] static void Quantize(const GemmArgs& g, int32_t* words, float* row_scales) {
    const size_t first = g.k_begin % 2, pairs = Int8Pairs(g.k, g.k_begin);
    alignas(64) int16_t line[2 * kLinePairs];
    alignas(64) float lanes[kL];
    for (size_t r = 0; r < g.m; ++r) {
      const float* a = g.a + r * g.lda;
      V largest_lanes = Ops::Zero();
      size_t j = 0;
      for (; j + kL <= g.k; j += kL) {
        largest_lanes = Ops::Max(largest_lanes, Ops::Abs(Ops::Load(a + j)));
      }
      Ops::Store(largest_lanes, lanes);
      float largest = 0;
      for (size_t l = 0; l < kL; ++l) largest = std::max(largest, lanes[l]);
      for (; j < g.k; ++j) largest = std::max(largest, std::fabs(a[j]));
      float inverse;
      row_scales[r] = Int8Step(largest, &inverse);
      const V scale = Ops::Set(inverse);
      int32_t* row_words = words + r / kRows * kRows * pairs + r % kRows;
      for (size_t p0 = 0; p0 < pairs; p0 += kLinePairs) {
        // line[t] holds column 2 * p0 + t - first of A, 0 outside [0, k).
        const size_t pc = std::min(kLinePairs, pairs - p0);
        const size_t lead = p0 == 0 ? first : 0;
        const size_t end = std::min(2 * pc, g.k + first - 2 * p0);
        const float* at = a + (2 * p0 + lead - first);  // line[lead]'s column
        size_t t = 0;
        for (; t < lead; ++t) line[t] = 0;
        for (; t + kL <= end; t += kL) {
          Ops::StoreInt16(Ops::RoundToInt(Ops::Mul(Ops::Load(at + (t - lead)), scale)), line + t);
        }
        for (; t < end; ++t) {
          line[t] = static_cast<int16_t>(std::nearbyint(at[t - lead] * inverse));
        }
        for (; t < 2 * pc; ++t) line[t] = 0;
        for (size_t i = 0; i < pc; ++i) std::memcpy(row_words + (p0 + i) * kRows, line + 2 * i, 4);
      }
    }
  }

  // One panel's C tile of R rows over `pairs` K pairs (at most
  // kInt8ChunkPairs): the int8 rows at w times the tile's words (kRows per
  // pair, this tile's R first), summed in int32, then
  // c = sum * (column scale * row step) + c0 (C itself, the bias with
  // ld0 = 0, or zeros). The loop stays rolled: in wasm the tile is bound
  // by its multiply-adds and adds (unrolled by two it ran no faster), and
  // unrolled GCC spilled accumulators natively.
  template <size_t R>
  [[gnu::noinline]] static void Tile(const int8_t* w, const int32_t* words, size_t pairs,
                                     const float* row_scale, const float* scales,
                                     const float* c0, size_t ld0, float* c, size_t ldc) {
    VI acc[R][kVecs];
    for (size_t r = 0; r < R; ++r) {
      for (size_t v = 0; v < kVecs; ++v) acc[r][v] = Ops::ZeroI();
    }
    for (const int8_t* end = w + pairs * 2 * kPanel; w != end; w += 2 * kPanel, words += kRows) {
      VP b[kVecs];
      for (size_t v = 0; v < kVecs; ++v) b[v] = Ops::LoadPairs(w + v * 2 * kL);
      for (size_t r = 0; r < R; ++r) {
        const VP a = Ops::SetPair(words[r]);
        for (size_t v = 0; v < kVecs; ++v) acc[r][v] = Ops::MulAddPairs(b[v], a, acc[r][v]);
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

  // Panel after panel, each walked whole (K sequential: a decoding step
  // reads its weights as one stream, which the hardware prefetchers follow
  // from DRAM) by every row tile in turn: a panel of a 768-row projection
  // (6 to 24 KiB) stays in L1 for the tiles after the first, and a tile's C
  // in L1 across its chunks. Tiles of kRows rows, then the last rows in twos
  // and ones: a decoding step's one row is a tile of its own, and tiles of
  // the sizes between would cost more .wasm than they save time.
  static void Multiply(const GemmArgs& g) {
    if (g.m == 0) return;
    const size_t pairs = Int8Pairs(g.k, g.k_begin);
    std::unique_ptr<int32_t[]> own_words;
    std::unique_ptr<float[]> own_scales;
    Int8Rows q{};
    if (g.int8_rows != nullptr) {
      q = *g.int8_rows;
    } else {
      own_words.reset(new int32_t[Int8Words(g.m, kRows, g.k, g.k_begin)]);
      own_scales.reset(new float[g.m]);
      Quantize(g, own_words.get(), own_scales.get());
      q = {own_words.get(), own_scales.get()};
    }
    const int8_t* b = static_cast<const int8_t*>(g.packed_b) + (g.k_begin - g.k_begin % 2) * kPanel;
    const size_t panel_bytes = kPanel * PanelRows(WeightType::kInt8, g.packed_rows);
    alignas(64) static constexpr float kZeros[kPanel] = {};
    alignas(64) float edge[kRows * kPanel];  // C tile at the right edge
    for (size_t col0 = 0; col0 < g.n; col0 += kPanel) {
      const size_t cols = std::min(kPanel, g.n - col0);
      const int8_t* panel = b + col0 / kPanel * panel_bytes;
      const float* bias = g.packed_bias != nullptr ? g.packed_bias + col0 : kZeros;
      for (size_t row0 = 0, rows; row0 < g.m; row0 += rows) {
        rows = g.m - row0 >= kRows ? kRows : g.m - row0 >= 2 ? 2 : 1;
        const auto tile = rows == kRows ? &Tile<kRows> : rows == 2 ? &Tile<2> : &Tile<1>;
        const int32_t* words = q.words + row0 / kRows * kRows * pairs + row0 % kRows;
        float* c = cols == kPanel ? g.c + row0 * g.ldc + col0 : edge;
        const size_t ldc = cols == kPanel ? g.ldc : kPanel;
        for (size_t p0 = 0; p0 < pairs; p0 += kInt8ChunkPairs) {
          tile(panel + p0 * 2 * kPanel, words + p0 * kRows, std::min(kInt8ChunkPairs, pairs - p0),
               q.scales + row0, g.packed_scales + col0, p0 == 0 ? bias : c, p0 == 0 ? 0 : ldc, c,
               ldc);
        }
        if (c == edge) {
          for (size_t r = 0; r < rows; ++r) {
            CopyN(edge + r * kPanel, cols, g.c + (row0 + r) * g.ldc + col0);
          }
        }
      }
    }
  }
};
