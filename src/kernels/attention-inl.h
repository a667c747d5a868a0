// Attention for one (batch, head) with an online softmax, over a vector layer
// `Ops`, with the policy of attention.h. Needs gemm-inl.h and exp-inl.h.
//
// Per query block of kAttentionQueryBlock queries, walk the key blocks and
// keep a running max m, running sum l and output accumulator O per query
// (flash-attention style), so extra memory is O(block x d) whatever T is.
// Scores are computed transposed, S^T = K_blk * (scale * Q_blk)^T, with the
// GEMM micro-kernel: queries run along vector lanes, so max, exp and sum are
// plain vector ops down the columns. Key blocks the causal mask or the
// sliding window hides from the whole query block are never visited, so a
// window of w keys costs O(tq w), not O(tq tk). Probabilities (and scores),
// when requested, are written by a second pass that recomputes each score
// block and normalizes it with the final m and l: the same numbers the
// output used.
//
// O = sum_j p_j v_j with p_j <= 1 is up to (keys) x max|v|, which can pass
// float32's range where the output, a weighted mean of values, does not
// (v = 1e37 over 64 keys). A query block whose O overflowed (its output,
// O / l, is then not finite) runs again with every p_j times 2^-k, 2^k > 2
// x keys: exact, so O and l shrink alike and O / l has the bits an O
// without overflow would give; l is scaled back for the statistics and
// probabilities. Unscaled blocks multiply their p_j by 1: exactly what they
// computed before.
//
// A float16 or bfloat16 KV cache (kv_type) is read in place by a block of
// few queries (decoding) on the SIMD layers: its dot products and P V loop
// widen each vector of keys and values in registers, all but the last step
// (WidenUnscaled): float16's exponent rebias, times 2^112, is folded into
// the block's queries (while |q| 2^112 is finite, else the block widens
// into the scratch) and into each probability. Widening and the powers of
// 2 are exact, so each product, and each score, is the float cache's. A
// block of many queries widens each key block into the scratch for the
// GEMM. An int8 cache likewise: its dot products widen the int8 keys in
// registers and multiply each key's sum by the key's row scale once; P V
// folds each value row's scale into its p_j; the GEMM and the non-SIMD
// layers read the rows dequantized into the scratch (q * scale, what
// KVCache::Keys gives).
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file.

template <class Ops>
struct Attention {
  using V = typename Ops::V;
  using G = Gemm<Ops>;
  static constexpr size_t kL = Ops::kLanes;
  static constexpr size_t kBq = kAttentionQueryBlock;
  static constexpr size_t kBk = kAttentionKeyBlock;
  static_assert(kBq % G::kPanel == 0, "query block = whole GEMM panels");
  // Where vectors are SIMD registers. Layers without (the non-SIMD build's
  // emulated lanes and one lane) widen a 16-bit cache into the scratch for
  // dot products too: a second copy of the loops per table there would
  // outgrow that .wasm's budget, for no registers to widen in.
  static constexpr bool kNarrowInPlace = Ops::kVectorISA;

  static size_t ScratchFloats(size_t dk, size_t dv) {
    return AttentionScratchFloats(dk, dv);
  }

  struct Block {
    size_t q0, nq;    // queries [q0, q0 + nq)
    bool by_dots;     // scores as dot products (few queries), else GEMM
    size_t cols;      // columns of S^T: nq rounded up to whole panels
                      // (GEMM) or whole vectors (dots)
    size_t key_begin, key_end;  // keys [key_begin, key_end) may be
                                // visible to the block
    float* qt;        // scaled queries: GEMM panels [cols / kPanel][dk]
                      // [kPanel], or rows [nq][dk] for dots
    float* st;        // [kBk][cols]
    float* o;         // [kBq][dv]
    float* m;         // [cols] running max
    float* l;         // [cols] running sum
    float* alpha;     // [cols] rescale of O for the current key block
    // The current key block's keys and values: float rows (a.k and a.v
    // themselves, or the block widened into kw, vw), or with `narrow` the
    // cache's 16-bit rows in place, widened in registers as they are read.
    bool narrow;
    const float* kb;
    const uint16_t* kn;
    size_t ldkb;
    const float* vb;
    const uint16_t* vn;
    size_t ldvb;
    const Bits16Form* form;  // how `narrow` rows widen
    const int8_t* kq;  // `narrow` int8 rows in place, and their row scales
    const int8_t* vq;  // (kv_type kInt8)
    const float* ks;
    const float* vs;
    float* kw;        // [kBk][dk]
    float* vw;        // [kBk][dv]
    float p_scale;    // 1, or 2^-k: the probabilities scaled (see the top)
  };

  template <class W>
  static void WidenRows(const void* src, size_t ld, size_t rows, size_t width, float* dst) {
    const W* s = static_cast<const W*>(src);
    for (size_t r = 0; r < rows; ++r) G::WidenN(s + r * ld, width, dst + r * width);
  }

  // The block's keys and values are the cache's rows where they lie.
  static void ReadInPlace(const AttentionArgs& a, Block& b) {
    b.ldkb = a.ldk;
    b.ldvb = a.ldv;
  }

  // The block's keys and values are the rows widened into kw and vw.
  static void ReadFromScratch(const AttentionArgs& a, Block& b) {
    b.kb = b.kw;
    b.vb = b.vw;
    b.ldkb = a.dk;
    b.ldvb = a.dv;
  }

  // Points the block at keys and values [k0, k0 + nk): in place for float
  // and for the 16-bit rows that dot products read, else widened into the
  // scratch (one pass over the narrow rows, which the GEMM then reads from
  // L1: its tiles read each key once per panel of queries).
  static void SetKeyBlock(const AttentionArgs& a, Block& b, size_t k0, size_t nk) {
    if (HeldType(a.kv_type) == WeightType::kInt8) return SetInt8KeyBlock(a, b, k0, nk);
    if (HeldType(a.kv_type) == WeightType::kF32) {
      b.kb = static_cast<const float*>(a.k) + k0 * a.ldk;
      b.vb = static_cast<const float*>(a.v) + k0 * a.ldv;
      return ReadInPlace(a, b);
    }
    const auto* k = static_cast<const uint16_t*>(a.k) + k0 * a.ldk;
    const auto* v = static_cast<const uint16_t*>(a.v) + k0 * a.ldv;
    if (kNarrowInPlace && b.narrow) {
      b.kn = k;
      b.vn = v;
      return ReadInPlace(a, b);
    }
    if (a.kv_type == WeightType::kF16) {
      WidenRows<F16Bits>(k, a.ldk, nk, a.dk, b.kw);
      WidenRows<F16Bits>(v, a.ldv, nk, a.dv, b.vw);
    } else {
      WidenRows<BF16Bits>(k, a.ldk, nk, a.dk, b.kw);
      WidenRows<BF16Bits>(v, a.ldv, nk, a.dv, b.vw);
    }
    ReadFromScratch(a, b);
  }

  // rows x width int8 elements (row stride ld) times their row scales
  // (stride ld_scales) into dst [rows][width]. Not inlined: one copy serves
  // keys and values.
  [[gnu::noinline]] static void DequantizeRows(const int8_t* src, size_t ld, const float* scales,
                                               size_t ld_scales, size_t rows, size_t width,
                                               float* dst) {
    for (size_t r = 0; r < rows; ++r) {
      const V scale = Ops::Set(scales[r * ld_scales]);
      for (size_t d = 0; d < width; d += kL) {
        Ops::Store(Ops::Mul(Ops::Widen(src + r * ld + d), scale), dst + r * width + d);
      }
    }
  }

  // SetKeyBlock for int8 rows: in place with their scales for the dot
  // products, else dequantized into the scratch.
  static void SetInt8KeyBlock(const AttentionArgs& a, Block& b, size_t k0, size_t nk) {
    const auto* k = static_cast<const int8_t*>(a.k) + k0 * a.ldk;
    const auto* v = static_cast<const int8_t*>(a.v) + k0 * a.ldv;
    b.ks = a.k_scales + k0 * a.ld_scales;
    b.vs = a.v_scales + k0 * a.ld_scales;
    if (kNarrowInPlace && b.narrow) {
      b.kq = k;
      b.vq = v;
      return ReadInPlace(a, b);
    }
    DequantizeRows(k, a.ldk, b.ks, a.ld_scales, nk, a.dk, b.kw);
    DequantizeRows(v, a.ldv, b.vs, a.ld_scales, nk, a.dv, b.vw);
    ReadFromScratch(a, b);
  }

  // The GEMM computes S^T a whole panel of queries at a time; with few
  // queries (decoding: one) most of that panel is padding. Per key, the
  // GEMM costs (kPanel / kL) * dk vector FMAs; dot products cost, per
  // query, dk / kL FMAs plus a horizontal sum (about log2(kL) + 2 ops).
  static bool DotsCheaper(size_t nq, size_t dk) {
    size_t reduce = 2;
    for (size_t l = kL; l > 1; l /= 2) ++reduce;
    return nq * (dk / kL + reduce) < (G::kPanel / kL) * dk;
  }

  // The factor of key j's sum: 1 (folded away), or the int8 row's scale.
  static float KeyScale(const AttentionArgs&, const Block&, const void*, size_t) { return 1.0f; }
  static float KeyScale(const AttentionArgs& a, const Block& b, const int8_t*, size_t j) {
    return b.ks[j * a.ld_scales];
  }

  // A vector of a key or value row: loaded, or widened in registers.
  static V Row(const float* p, const Bits16Form&) { return Ops::Load(p); }
  static V Row(const uint16_t* p, const Bits16Form& form) { return Ops::WidenUnscaled(p, form); }
  static V Row(const int8_t* p, const Bits16Form&) { return Ops::Widen(p); }

  // S^T[j][i] = q_i . k_j for the block's queries from float, 16-bit or
  // int8 keys (T; int8 sums times their row's scale, KeyScale), four keys at
  // a time: the query's loads shared, four chains. A last group of fewer
  // keys reads the block's last key again in place of the missing ones and
  // keeps only its own sums: no second loop for the tail (every SIMD .wasm
  // carries each copy once per kernel table).
  template <class T>
  static void ScoresByDots(const AttentionArgs& a, const Block& b, const T* keys, size_t nk) {
    const Bits16Form& form = *b.form;
    for (size_t i = 0; i < b.nq; ++i) {
      const float* q = b.qt + i * a.dk;
      for (size_t j = 0; j < nk; j += 4) {
        const T* k[4];
        for (size_t u = 0; u < 4; ++u) k[u] = keys + std::min(j + u, nk - 1) * b.ldkb;
        V s[4] = {Ops::Zero(), Ops::Zero(), Ops::Zero(), Ops::Zero()};
        for (size_t d = 0; d < a.dk; d += kL) {
          const V qv = Ops::Load(q + d);
          for (size_t u = 0; u < 4; ++u) s[u] = Ops::MulAdd(qv, Row(k[u] + d, form), s[u]);
        }
        for (size_t u = 0; u < 4 && j + u < nk; ++u) {
          b.st[(j + u) * b.cols + i] = Ops::ReduceSum(s[u]) * KeyScale(a, b, keys, j + u);
        }
      }
    }
  }

  // c * tanh(S / c) over the tile, in place.
  static void SoftCap(const Block& b, float cap, size_t nk) {
    const V c = Ops::Set(cap), inv = Ops::Set(1.0f / cap);
    for (size_t e = 0; e < nk * b.cols; e += kL) {
      const V x = Ops::Load(b.st + e);
      Ops::Store(Ops::Mul(c, Tanh<V, Ops>(Ops::Mul(x, inv))), b.st + e);
    }
  }

  // S^T[j][i] = cap(scale * q_i . k_j) + masks, for keys [k0, k0 + nk);
  // with `write`, the stage a.scores asks for is written as it passes. Not
  // inlined: a copy in the second pass (Run) would be 4 kB more .wasm per
  // table, for a call per 64-key block.
  [[gnu::noinline]] static void Scores(const AttentionArgs& a, Block& b, size_t k0, size_t nk,
                                       bool write = false) {
    SetKeyBlock(a, b, k0, nk);
    if (b.by_dots) {
      // The columns past the queries, [nq, cols), lie in each row's last
      // vector: zeroed first, a store per key (a fill of them per key was a
      // call to memset, 6% of a decoding step).
      for (size_t j = 0; j < nk; ++j) Ops::Store(Ops::Zero(), b.st + (j + 1) * b.cols - kL);
      if (kNarrowInPlace && b.narrow && HeldType(a.kv_type) == WeightType::kInt8) {
        ScoresByDots(a, b, b.kq, nk);
      } else if (kNarrowInPlace && b.narrow) {
        ScoresByDots(a, b, b.kn, nk);
      } else {
        ScoresByDots(a, b, b.kb, nk);
      }
    } else {
      G::Multiply({b.kb, b.ldkb, nk, a.dk, b.qt, a.dk, 0, b.cols, nullptr, b.st, b.cols});
    }
    if (write) WriteScores(a, ScoresStage::kScaled, b.q0, b.nq, k0, nk, b.st, b.cols);
    if (a.softcap > 0.0f) SoftCap(b, a.softcap, nk);
    if (write) WriteScores(a, ScoresStage::kCapped, b.q0, b.nq, k0, nk, b.st, b.cols);
    MaskScores(a, b.q0, b.nq, k0, nk, b.st, b.cols);
    if (write) WriteScores(a, ScoresStage::kMasked, b.q0, b.nq, k0, nk, b.st, b.cols);
  }

  // The factor of value row j that P V folds into p_j: the 16-bit form's
  // scale, or the int8 row's own.
  static float ValueScale(const AttentionArgs&, const Block& b, const uint16_t*, size_t) {
    return b.form->scale;
  }
  static float ValueScale(const AttentionArgs& a, const Block& b, const int8_t*, size_t j) {
    return b.vs[j * a.ld_scales];
  }

  // O[i][:] += sum_j P[i][j] V[j][:] from 16-bit or int8 values (T) widened
  // in registers (a dot-product block reads each value once per query, so
  // widening the block into the scratch first cost a store and a load per
  // vector), W vectors of O at a time: each probability, times its row's
  // factor (ValueScale), is set once per W vectors.
  template <size_t W, class T>
  static void ValuesTimesNarrow(const AttentionArgs& a, const Block& b, const T* values,
                                size_t nk, size_t i, size_t d) {
    const Bits16Form& form = *b.form;
    const float* p = b.st + i;
    float* o = b.o + i * a.dv + d;
    V acc[W];
    for (size_t u = 0; u < W; ++u) acc[u] = Ops::Load(o + u * kL);
    for (size_t j = 0; j < nk; ++j) {
      const V pj = Ops::Set(p[j * b.cols] * ValueScale(a, b, values, j));
      const T* v = values + j * b.ldvb + d;
      for (size_t u = 0; u < W; ++u) acc[u] = Ops::MulAdd(pj, Row(v + u * kL, form), acc[u]);
    }
    for (size_t u = 0; u < W; ++u) Ops::Store(acc[u], o + u * kL);
  }

  template <class T>
  static void ValuesTimesNarrow(const AttentionArgs& a, const Block& b, const T* values,
                                size_t nk) {
    constexpr size_t kW = 4;
    for (size_t i = 0; i < b.nq; ++i) {
      for (size_t d = 0; d < a.dv;) {
        if (a.dv - d >= kW * kL) {
          ValuesTimesNarrow<kW>(a, b, values, nk, i, d);
          d += kW * kL;
        } else {
          ValuesTimesNarrow<1>(a, b, values, nk, i, d);
          d += kL;
        }
      }
    }
  }

  // Folds one key block into m, l and O.
  static void Accumulate(const AttentionArgs& a, Block& b, size_t k0, size_t nk) {
    Scores(a, b, k0, nk);
    const V p_scale = Ops::Set(b.p_scale);
    for (size_t c = 0; c < b.cols; c += kL) {
      const V m_old = Ops::Load(b.m + c);
      V m_new = m_old;
      for (size_t j = 0; j < nk; ++j) {
        m_new = Ops::Max(m_new, Ops::Load(b.st + j * b.cols + c));
      }
      V sum = Ops::Zero();
      for (size_t j = 0; j < nk; ++j) {
        float* s = b.st + j * b.cols + c;
        const V p = Ops::Mul(ExpNonPositive<V, Ops>(Ops::Sub(Ops::Load(s), m_new)), p_scale);
        Ops::Store(p, s);
        sum = Ops::Add(sum, p);
      }
      const V alpha = ExpNonPositive<V, Ops>(Ops::Sub(m_old, m_new));
      Ops::Store(alpha, b.alpha + c);
      Ops::Store(m_new, b.m + c);
      Ops::Store(Ops::MulAdd(Ops::Load(b.l + c), alpha, sum), b.l + c);
    }
    // Once a query's running max has settled, alpha is exactly 1 for most
    // later blocks: skip those rows' rescale.
    for (size_t i = 0; i < b.nq; ++i) {
      if (b.alpha[i] == 1.0f) continue;
      const V alpha = Ops::Set(b.alpha[i]);
      for (size_t d = 0; d < a.dv; d += kL) {
        Ops::Store(Ops::Mul(Ops::Load(b.o + i * a.dv + d), alpha),
                   b.o + i * a.dv + d);
      }
    }
    // O[i][:] += sum_j P[i][j] V[j][:], P read transposed out of S^T.
    if (kNarrowInPlace && b.narrow && HeldType(a.kv_type) == WeightType::kInt8) {
      return ValuesTimesNarrow(a, b, b.vq, nk);
    }
    if (kNarrowInPlace && b.narrow) return ValuesTimesNarrow(a, b, b.vn, nk);
    const size_t vecs = a.dv / kL;
    for (size_t i0 = 0; i0 < b.nq; i0 += G::kRows) {
      const size_t rows = std::min(G::kRows, b.nq - i0);
      for (size_t v0 = 0; v0 < vecs; v0 += G::kVecs) {
        G::TileRowsVecs(rows, std::min(G::kVecs, vecs - v0), b.st + i0, 1,
                        b.cols, b.vb + v0 * kL, b.ldvb, nk,
                        nullptr, /*accumulate=*/true, b.o + i0 * a.dv + v0 * kL,
                        a.dv);
      }
    }
  }

  static float InverseSum(float l) { return l > 0.0f ? 1.0f / l : 0.0f; }

  // Second pass: probabilities and scores of keys [k0, k0 + nk) for the
  // block's rows, as requested. A block the first pass skipped has zero
  // probabilities and masked scores of -inf; its scores before the masks
  // are computed here, the one pass that visits it.
  static void WriteProbabilities(const AttentionArgs& a, Block& b, size_t k0, size_t nk) {
    const size_t at = b.q0 * a.tk + k0;
    const bool skipped = k0 >= b.key_end || k0 + nk <= b.key_begin || AllPadding(a, k0, nk);
    if (skipped) {
      if (a.probs != nullptr) {
        for (size_t i = 0; i < b.nq; ++i) FillN(a.probs + at + i * a.tk, nk, 0.0f);
      }
      if (a.scores == nullptr || a.scores_stage == ScoresStage::kMasked) {
        WriteScores(a, ScoresStage::kMasked, b.q0, b.nq, k0, nk, nullptr, 0);
        return;
      }
    }
    Scores(a, b, k0, nk, true);
    if (skipped || a.probs == nullptr) return;
    float* out = a.probs + at;
    for (size_t j = 0; j < nk; ++j) {
      float* s = b.st + j * b.cols;
      for (size_t c = 0; c < b.cols; c += kL) {
        Ops::Store(ExpNonPositive<V, Ops>(Ops::Sub(Ops::Load(s + c), Ops::Load(b.m + c))),
                   s + c);
      }
    }
    for (size_t i = 0; i < b.nq; ++i) {
      const float inv = InverseSum(b.l[i]);
      for (size_t j = 0; j < nk; ++j) out[i * a.tk + j] = b.st[j * b.cols + i] * inv;
    }
  }

  // The block's outputs from its visible keys.
  static void AttendBlock(const AttentionArgs& a, Block& b) {
    // -FLT_MAX, not -inf: exp(m_old - m_new) stays finite while a row has
    // seen only masked keys, and such a row ends with l = 0 -> zeros.
    FillN(b.m, b.cols, -std::numeric_limits<float>::max());
    FillN(b.l, b.cols, 0.0f);
    FillN(b.o, b.nq * a.dv, 0.0f);
    for (size_t k0 = b.key_begin; k0 < b.key_end; k0 += kBk) {
      const size_t nk = std::min(kBk, b.key_end - k0);
      if (!AllPadding(a, k0, nk)) Accumulate(a, b, k0, nk);
    }
    for (size_t i = 0; i < b.nq; ++i) {
      const V inv = Ops::Set(InverseSum(b.l[i]));
      float* z = a.z + (b.q0 + i) * a.ldz;
      for (size_t d = 0; d < a.dv; d += kL) {
        Ops::Store(Ops::Mul(Ops::Load(b.o + i * a.dv + d), inv), z + d);
      }
    }
  }

  // Multiplies the block's queries (rows [nq][dk]) by the 16-bit form's
  // scale, exactly, unless a product would not be finite (then the block
  // widens its keys into the scratch: false).
  static bool FoldScaleIntoQueries(const AttentionArgs& a, Block& b) {
    const float scale = b.form->scale;
    if (scale == 1.0f) return true;
    const size_t n = b.nq * a.dk;
    float largest = 0.0f;
    for (size_t e = 0; e < n; ++e) largest = std::max(largest, std::fabs(b.qt[e]));
    if (!(largest < std::numeric_limits<float>::max() / scale)) return false;
    for (size_t e = 0; e < n; ++e) b.qt[e] *= scale;
    return true;
  }

  static void Run(const AttentionArgs& a) {
    Block b;
    b.qt = a.scratch;
    b.st = b.qt + a.dk * kBq;
    b.o = b.st + kBk * kBq;
    b.m = b.o + kBq * a.dv;
    b.l = b.m + kBq;
    b.alpha = b.l + kBq;
    b.kw = b.alpha + kBq;
    b.vw = b.kw + kBk * a.dk;
    // int8 rows take bfloat16's form for its scale, 1: nothing to fold.
    b.form = a.kv_type == WeightType::kF16 ? &kF16Form : &kBF16Form;
    for (b.q0 = 0; b.q0 < a.tq; b.q0 += kBq) {
      b.nq = std::min(kBq, a.tq - b.q0);
      b.by_dots = DotsCheaper(b.nq, a.dk);
      b.narrow = kNarrowInPlace && b.by_dots && HeldType(a.kv_type) != WeightType::kF32;
      const size_t width = b.by_dots ? kL : G::kPanel;
      b.cols = (b.nq + width - 1) / width * width;
      VisibleKeys(a, b.q0, b.nq, b.key_begin, b.key_end);
      PackScaledQueries(a, b.q0, b.nq, b.cols, b.by_dots ? 0 : G::kPanel, b.qt);
      if (b.narrow) b.narrow = FoldScaleIntoQueries(a, b);
      // Once more, with scaled probabilities, if O overflowed (one call
      // site: the block's loop is compiled once).
      b.p_scale = 1.0f;
      do {
        AttendBlock(a, b);
        b.p_scale = RescueScale(a, b.q0, b.nq, b.key_end - b.key_begin, b.p_scale, b.l);
      } while (b.p_scale != 0.0f);
      if (a.softmax_stats != nullptr) WriteSoftmaxStats(a, b.q0, b.nq, b.m, b.l);
      if (a.probs != nullptr || a.scores != nullptr) {
        for (size_t k0 = 0; k0 < a.tk; k0 += kBk) {
          WriteProbabilities(a, b, k0, std::min(kBk, a.tk - k0));
        }
      }
    }
  }
};
