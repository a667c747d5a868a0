// Blocked GEMM over a vector layer `Ops` (see simd/ops_highway-inl.h), with
// the policy of gemm.h. One algorithm for every backend: the backends only
// instantiate it.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after the Ops layer and copy-inl.h.

template <class Ops>
struct Int8Gemm;  // int8_gemm-inl.h: int8 weights multiply in integers
template <class Ops>
struct Q4Gemm;  // q4_gemm-inl.h: 4-bit weights, unpacked in registers

template <class Ops>
struct Gemm {
  using V = typename Ops::V;
  static constexpr size_t kL = Ops::kLanes;
  static constexpr size_t kRows = GemmTile<Ops::kRegisters, Ops::kLanes>::kRows;
  static constexpr size_t kVecs = GemmTile<Ops::kRegisters, Ops::kLanes>::kVecs;
  static constexpr size_t kPanel = kVecs * kL;  // floats per packed B row
  static constexpr size_t kPanelRows =          // K block, see gemm.h
      GemmTile<Ops::kRegisters, Ops::kLanes>::kSliceBytes / (kPanel * sizeof(float));

  // Independent FMA chains for a tile of R rows: 2 FMA ports x 4 cycles of
  // latency want 8 accumulators in flight, and a tile of fewer than 4 rows
  // (decoding projects one token) has only 2R, so it splits K into chains.
  static constexpr size_t Chains(size_t rows) { return rows >= 4 ? 1 : 4 / rows; }

  // One k step: acc[r][v] += A element ap[r][at] * B vector v at b.
  template <size_t R, size_t NV>
  static SA_GEMM_INLINE void Step(const float* const (&ap)[R], size_t at,
                                  const float* b, V (&acc)[R][NV]) {
    V bv[NV];
    for (size_t v = 0; v < NV; ++v) bv[v] = Ops::Load(b + v * kL);
    for (size_t r = 0; r < R; ++r) {
      const V av = Ops::Set(ap[r][at]);
      for (size_t v = 0; v < NV; ++v) acc[r][v] = Ops::MulAdd(av, bv[v], acc[r][v]);
    }
  }

  // C tile (R rows x NV vectors) [+]= A tile * B rows.
  //   A element (r, kk) is a[r * a_row + kk * a_col]: a row-major matrix has
  //   a_col = 1; the attention kernel passes a transposed one.
  //   B row kk starts at b + kk * ldb and holds at least NV vectors.
  //   bias: NV vectors added once, or nullptr. accumulate: add to C.
  // The loop runs kSteps steps per iteration and walks a pointer into every
  // row of A plus one offset shared by all rows, so no step multiplies:
  // unrolled (kUnroll > 1, x86 with 32 registers) the pointers stay put and
  // the offset moves (one add per iteration; x86 addresses are register +
  // register + constant); rolled they move and the offset stays 0 (one add
  // per row; wasm addresses are register + constant only).
  template <size_t R, size_t NV>
  static void Tile(const float* a, size_t a_row, size_t a_col, const float* b,
                   size_t ldb, size_t k, const float* bias, bool accumulate,
                   float* c, size_t ldc) {
    constexpr size_t kUnroll = GemmTile<Ops::kRegisters, Ops::kLanes>::kUnroll;
    constexpr size_t kChains = Chains(R);
    constexpr size_t kSteps = std::max(kChains, kUnroll);
    V acc[kChains][R][NV];
    for (size_t r = 0; r < R; ++r) {
      for (size_t v = 0; v < NV; ++v) {
        if (accumulate) {
          acc[0][r][v] = Ops::Load(c + r * ldc + v * kL);
        } else if (bias != nullptr) {
          acc[0][r][v] = Ops::Load(bias + v * kL);
        } else {
          acc[0][r][v] = Ops::Zero();
        }
        for (size_t ch = 1; ch < kChains; ++ch) acc[ch][r][v] = Ops::Zero();
      }
    }
    const float* ap[R];
    for (size_t r = 0; r < R; ++r) ap[r] = a + r * a_row;
    size_t at = 0;
    auto advance = [&](size_t steps) {
      if constexpr (kUnroll > 1) {
        at += steps * a_col;
      } else {
        for (size_t r = 0; r < R; ++r) ap[r] += steps * a_col;
      }
    };
    const float* bk = b;
    size_t kk = 0;
    for (; kk + kSteps <= k; kk += kSteps) {
      for (size_t s = 0; s < kSteps; ++s) {
        Step(ap, at + s * a_col, bk + s * ldb, acc[s % kChains]);
      }
      advance(kSteps);
      bk += kSteps * ldb;
    }
    for (; kk < k; ++kk) {
      Step(ap, at, bk, acc[0]);
      advance(1);
      bk += ldb;
    }
    for (size_t r = 0; r < R; ++r) {
      for (size_t v = 0; v < NV; ++v) {
        for (size_t ch = 1; ch < kChains; ++ch) {
          acc[0][r][v] = Ops::Add(acc[0][r][v], acc[ch][r][v]);
        }
        Ops::Store(acc[0][r][v], c + r * ldc + v * kL);
      }
    }
  }

  // Tile with a run-time row count (1..kRows) for the bottom edge.
  template <size_t NV, size_t R = kRows>
  static void TileRows(size_t rows, const float* a, size_t a_row, size_t a_col,
                       const float* b, size_t ldb, size_t k, const float* bias,
                       bool accumulate, float* c, size_t ldc) {
    if constexpr (R > 1) {
      if (rows < R) {
        return TileRows<NV, R - 1>(rows, a, a_row, a_col, b, ldb, k, bias,
                                   accumulate, c, ldc);
      }
    }
    Tile<R, NV>(a, a_row, a_col, b, ldb, k, bias, accumulate, c, ldc);
  }

  // Tile with a run-time vector count (1..kVecs) for the right edge.
  template <size_t NV = kVecs>
  static void TileRowsVecs(size_t rows, size_t vecs, const float* a,
                           size_t a_row, size_t a_col, const float* b,
                           size_t ldb, size_t k, const float* bias,
                           bool accumulate, float* c, size_t ldc) {
    if constexpr (NV > 1) {
      if (vecs < NV) {
        return TileRowsVecs<NV - 1>(rows, vecs, a, a_row, a_col, b, ldb, k,
                                    bias, accumulate, c, ldc);
      }
    }
    TileRows<NV>(rows, a, a_row, a_col, b, ldb, k, bias, accumulate, c, ldc);
  }

  static void PackB(const float* w, size_t k, size_t n, float* packed) {
    const size_t panels = (n + kPanel - 1) / kPanel;
    for (size_t p = 0; p < panels; ++p) {
      const size_t col0 = p * kPanel;
      const size_t cols = std::min(kPanel, n - col0);
      float* dst = packed + p * kPanel * k;
      for (size_t kk = 0; kk < k; ++kk) {
        CopyN(w + kk * n + col0, cols, dst + kk * kPanel);
        FillN(dst + kk * kPanel + cols, kPanel - cols, 0.0f);
      }
    }
  }

  // C = A * packed B (+ bias). Panels of B are walked in K blocks that stay
  // in L1 while every row tile of A passes over them; before each tile, a
  // share of the slice walked next is prefetched into L2 (kGemmPrefetchLines).
  // The m rows are split into tiles of near-equal height (14 rows on
  // AVX-512: 7 + 7, not 12 + 2) unless that leaves tiles under 4 rows, which
  // would need split-K chains (see Chains): then kRows and one short tile.
  // Rows k0..k0+kc of a panel of 16-bit floats widened into the float
  // slice `wide`. A separate pass, once per panel slice: memory and L2 see
  // the narrow bytes, and the one float micro-kernel serves every 16-bit
  // type and row count, each type costing this loop instead of a kernel.
  // Not for one row of A (a decoding step, RowTimes16). int8 weights have
  // their integer kernel (int8_gemm.h).
  template <class W>
  static void WidenSlice(const void* panel, size_t k0, size_t kc, float* wide) {
    WidenN(static_cast<const W*>(panel) + k0 * kPanel, kc * kPanel, wide);
  }

  // n 16-bit floats (n a multiple of kL) widened into `wide`. Out of line,
  // one copy per type that the GEMM's panel slices and the attention
  // kernel's rows of a narrow KV cache share: inlined copies cost about
  // 1.5 kB of each SIMD .wasm.
  template <class W>
  [[gnu::noinline]] static void WidenN(const W* narrow, size_t n, float* wide) {
    for (size_t i = 0; i < n; i += kL) Ops::Store(Ops::Widen(narrow + i), wide + i);
  }

  // C row [+]= one row of A * K rows of a panel of 16-bit floats, widened
  // in registers. A decoding step uses each weight once: widening a slice
  // into L1 first, then reading it as float32, cost more than the product
  // (D1 in wasm ran at 0.85x float32). The form is data (gemm.h), so one
  // instantiation serves float16 and bfloat16 (the .wasm has a 200 kB
  // budget; out of line, since Multiply calls it at two places), and one
  // accumulator per vector suffices: the widening's four operations per
  // vector cover the latency of its add.
  [[gnu::noinline]] static void RowTimes16(const float* a, const uint16_t* b, size_t k,
                                            const float* bias, bool accumulate, float* c,
                                            const Bits16Form& form) {
    V acc[kVecs];
    for (size_t v = 0; v < kVecs; ++v) {
      acc[v] = accumulate         ? Ops::Load(c + v * kL)
               : bias != nullptr ? Ops::Load(bias + v * kL)
                                 : Ops::Zero();
    }
    for (size_t kk = 0; kk < k; ++kk, b += kPanel) {
      const V av = Ops::Set(a[kk]);
      for (size_t v = 0; v < kVecs; ++v) {
        acc[v] = Ops::MulAdd(av, Ops::Widen(b + v * kL, form), acc[v]);
      }
    }
    for (size_t v = 0; v < kVecs; ++v) Ops::Store(acc[v], c + v * kL);
  }

  static void Multiply(const GemmArgs& g) {
    if (g.m == 0) return;
    const WeightType type = HeldType(g.weight_type);
    if (type == WeightType::kInt8) return Int8Gemm<Ops>::Multiply(g);
    if (type == WeightType::kQ4) return Q4Gemm<Ops>::Multiply(g);
    const size_t bytes = WeightBytes(type);
    const char* packed_b = static_cast<const char*>(g.packed_b);
    alignas(64) float edge[kRows * kPanel] = {};  // C tile at the right edge
    const size_t tiles = (g.m + kRows - 1) / kRows;
    const bool even = g.m / tiles >= 4;
    alignas(64) float wide[kPanelRows * kPanel];
    const size_t panel_floats = kPanel * PanelRows(type, g.packed_rows);
    const bool one_row_16 = g.m == 1 && (type == WeightType::kF16 || type == WeightType::kBF16);
    const Bits16Form& form = type == WeightType::kF16 ? kF16Form : kBF16Form;
    // One row of A has one tile, with which no other shares a K block: it
    // walks each panel whole, so a matrix is read as one sequential stream,
    // not as a stream per panel jumping to the next K block (a decoding
    // step streams its weights from DRAM once a model outgrows the L3).
    const size_t k_block = g.m == 1 ? g.k : kPanelRows;
    for (size_t k0 = 0; k0 < g.k; k0 += k_block) {
      const size_t kc = std::min(k_block, g.k - k0);
      const bool accumulate = k0 != 0;
      for (size_t col0 = 0; col0 < g.n; col0 += kPanel) {
        const char* panel_start = packed_b + (col0 / kPanel) * panel_floats * bytes;
        const char* panel_bytes = panel_start + (g.k_begin + k0) * kPanel * bytes;
        const float* panel = reinterpret_cast<const float*>(panel_bytes);
        const float* bias = (g.packed_bias != nullptr && !accumulate)
                                ? g.packed_bias + col0
                                : nullptr;
        const size_t cols = std::min(kPanel, g.n - col0);
        switch (type) {
          case WeightType::kF32:
            break;
          case WeightType::kF16:
            if (one_row_16) break;
            WidenSlice<F16Bits>(panel_start, g.k_begin + k0, kc, wide);
            panel = wide;
            break;
          case WeightType::kBF16:
            if (one_row_16) break;
            WidenSlice<BF16Bits>(panel_start, g.k_begin + k0, kc, wide);
            panel = wide;
            break;
          case WeightType::kInt8:  // Int8Gemm and Q4Gemm, above
          case WeightType::kQ4:
            break;
        }
        // Next: this K block of the next panel, else the next K block of
        // the first panel.
        const char* next = panel_bytes + panel_floats * bytes;
        size_t next_rows = kc;
        if (col0 + kPanel >= g.n) {
          next = packed_b + (g.k_begin + k0 + kc) * kPanel * bytes;
          next_rows = std::min(k_block, g.k - k0 - kc);
        }
        auto tile = [&](size_t rows, const float* a, float* c, size_t ldc) {
          if (one_row_16) {
            RowTimes16(a, reinterpret_cast<const uint16_t*>(panel_bytes), kc, bias, accumulate,
                       c, form);
          } else {
            TileRows<kVecs>(rows, a, g.lda, 1, panel, kPanel, kc, bias, accumulate, c, ldc);
          }
        };
        const size_t next_lines = next_rows * kPanel * bytes / 64;
        const size_t tile_lines =
            std::min(kGemmPrefetchLines, (next_lines + tiles - 1) / tiles);
        for (size_t t = 0, row0 = 0; t < tiles; ++t) {
          const size_t rows = even ? g.m / tiles + (t < g.m % tiles ? 1 : 0)
                                   : std::min(kRows, g.m - row0);
          const size_t lines_end = std::min(next_lines, (t + 1) * tile_lines);
          for (size_t line = t * tile_lines; line < lines_end; ++line) {
            SA_GEMM_PREFETCH_L2(next + line * 64);
          }
          const float* a = g.a + row0 * g.lda + k0;
          float* c = g.c + row0 * g.ldc + col0;
          row0 += rows;
          if (cols == kPanel) {
            tile(rows, a, c, g.ldc);
            continue;
          }
          for (size_t r = 0; r < rows && accumulate; ++r) {
            CopyN(c + r * g.ldc, cols, edge + r * kPanel);
          }
          tile(rows, a, edge, kPanel);
          for (size_t r = 0; r < rows; ++r) {
            CopyN(edge + r * kPanel, cols, c + r * g.ldc);
          }
        }
      }
    }
  }
};
