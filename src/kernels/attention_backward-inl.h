// The attention backward of one (batch, head) over a vector layer `Ops`,
// with the policy of attention_backward.h: FlashAttention-2's algorithm on
// the forward's tiles. Needs gemm-inl.h, exp-inl.h and attention-inl.h.
//
// Per query block (as the forward: queries along vector lanes, key blocks
// the causal mask or the window hides never visited, padded key blocks
// skipped), walk the visible key blocks and, per block:
//   S^T  = K_blk (scale Q_blk)^T, capped and masked as the forward did
//   P^T  = exp(S^T - lse)                     (the forward's probabilities)
//   dV  += P^T dO_blk
//   dP^T = V_blk dO_blk^T
//   dS^T = P^T * (dP^T - rowsum(dO * O)) * scale (* 1 - tanh^2 when capped)
//   dQ  += dS K_blk,  dK += dS^T Q_blk
// so extra memory is O(block x d) whatever T is. Every product is the GEMM
// micro-kernel, reading the transposed tiles in place by stride. The
// summation order depends only on the blocks, never on threads.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file.

template <class Ops>
struct AttentionBackward {
  // The forward's vector layer, GEMM and blocks, whose tiles it walks.
  using Forward = Attention<Ops>;
  using V = typename Forward::V;
  using G = typename Forward::G;
  static constexpr size_t kL = Forward::kL, kBq = Forward::kBq, kBk = Forward::kBk;

  static size_t ScratchFloats(size_t dk, size_t dv) {
    return AttentionBackwardScratchFloats(dk, dv);
  }

  struct Block {
    size_t q0, nq;              // queries [q0, q0 + nq)
    size_t cols;                // columns of the tiles: nq in whole panels
    size_t key_begin, key_end;  // keys that may be visible to the block
    float* qt;     // scale Q^T as GEMM panels [cols / kPanel][dk][kPanel]
    float* dot;    // dO^T as GEMM panels [cols / kPanel][dv][kPanel]
    float* dq;     // [kBq][dk]
    float* pt;     // [kBk][cols]: S^T, then P^T, then dS^T
    float* dpt;    // [kBk][cols]: dP^T
    float* cap;    // [kBk][cols]: 1 - tanh^2 of the capped scores
    float* lse;    // [cols]
    float* delta;  // [cols]: rowsum(dO * O)
  };

  // C [rows, width] += A [rows, k] B [k, width]: A's element (r, kk) at
  // a[r * a_row + kk * a_col] (a tile read as it lies or transposed), B's
  // rows ldb apart; width in whole vectors.
  static void AddProduct(size_t rows, size_t width, const float* a, size_t a_row,
                         size_t a_col, const float* b, size_t ldb, size_t k, float* c,
                         size_t ldc) {
    const size_t vecs = width / kL;
    for (size_t r0 = 0; r0 < rows; r0 += G::kRows) {
      const size_t n = std::min(G::kRows, rows - r0);
      for (size_t v0 = 0; v0 < vecs; v0 += G::kVecs) {
        G::TileRowsVecs(n, std::min(G::kVecs, vecs - v0), a + r0 * a_row, a_row, a_col,
                        b + v0 * kL, ldb, k, nullptr, /*accumulate=*/true,
                        c + r0 * ldc + v0 * kL, ldc);
      }
    }
  }

  // The backward reads float32 keys and values (kv_type kF32: a training
  // forward keeps its projections in float32).
  static const float* Keys(const AttentionArgs& f) { return static_cast<const float*>(f.k); }
  static const float* Values(const AttentionArgs& f) { return static_cast<const float*>(f.v); }

  // S^T of keys [k0, k0 + nk) as the forward computes it: scaled, capped
  // (keeping the cap's derivative 1 - tanh^2 in b.cap), masked.
  static void Scores(const AttentionArgs& f, const Block& b, size_t k0, size_t nk) {
    G::Multiply({Keys(f) + k0 * f.ldk, f.ldk, nk, f.dk, b.qt, f.dk, 0, b.cols, nullptr, b.pt,
                 b.cols});
    if (f.softcap > 0.0f) {
      const V c = Ops::Set(f.softcap), inv = Ops::Set(1.0f / f.softcap);
      const V one = Ops::Set(1.0f);
      for (size_t e = 0; e < nk * b.cols; e += kL) {
        const V t = Tanh<V, Ops>(Ops::Mul(Ops::Load(b.pt + e), inv));
        Ops::Store(Ops::Mul(c, t), b.pt + e);
        Ops::Store(Ops::Sub(one, Ops::Mul(t, t)), b.cap + e);
      }
    }
    MaskScores(f, b.q0, b.nq, k0, nk, b.pt, b.cols);
  }

  // One key block's share of dQ, dK and dV.
  static void Accumulate(const AttentionBackwardArgs& a, const Block& b, size_t k0,
                         size_t nk) {
    const AttentionArgs& f = a.forward;
    Scores(f, b, k0, nk);
    for (size_t j = 0; j < nk; ++j) {
      float* s = b.pt + j * b.cols;
      for (size_t c = 0; c < b.cols; c += kL) {
        Ops::Store(ExpNonPositive<V, Ops>(Ops::Sub(Ops::Load(s + c), Ops::Load(b.lse + c))),
                   s + c);
      }
    }
    AddProduct(nk, f.dv, b.pt, b.cols, 1, a.d_out + b.q0 * a.ld_d_out, a.ld_d_out, b.nq,
               a.d_v + k0 * a.ld_d_v, a.ld_d_v);
    G::Multiply({Values(f) + k0 * f.ldv, f.ldv, nk, f.dv, b.dot, f.dv, 0, b.cols, nullptr, b.dpt,
                 b.cols});
    const V scale = Ops::Set(f.scale);
    for (size_t j = 0; j < nk; ++j) {
      const size_t row = j * b.cols;
      for (size_t c = 0; c < b.cols; c += kL) {
        const V dp = Ops::Sub(Ops::Load(b.dpt + row + c), Ops::Load(b.delta + c));
        V ds = Ops::Mul(Ops::Mul(Ops::Load(b.pt + row + c), dp), scale);
        if (f.softcap > 0.0f) ds = Ops::Mul(ds, Ops::Load(b.cap + row + c));
        Ops::Store(ds, b.pt + row + c);
      }
    }
    AddProduct(b.nq, f.dk, b.pt, 1, b.cols, Keys(f) + k0 * f.ldk, f.ldk, nk, b.dq, f.dk);
    AddProduct(nk, f.dk, b.pt, b.cols, 1, f.q + b.q0 * f.ldq, f.ldq, b.nq,
               a.d_k + k0 * a.ld_d_k, a.ld_d_k);
  }

  // The block's queries: scaled Q^T and dO^T as panels, lse and
  // rowsum(dO * O) per column (0 past the last query, whose columns no
  // product reads), dQ zeroed.
  static void Prepare(const AttentionBackwardArgs& a, const Block& b) {
    const AttentionArgs& f = a.forward;
    PackScaledQueries(f, b.q0, b.nq, b.cols, G::kPanel, b.qt);
    AttentionArgs d_out = f;  // dO^T packed as the queries are, unscaled
    d_out.q = a.d_out;
    d_out.ldq = a.ld_d_out;
    d_out.dk = f.dv;
    d_out.scale = 1.0f;
    PackScaledQueries(d_out, b.q0, b.nq, b.cols, G::kPanel, b.dot);
    FillN(b.lse, b.cols, 0.0f);
    FillN(b.delta, b.cols, 0.0f);
    for (size_t i = 0; i < b.nq; ++i) {  // log-sum-exp m + log(l); +inf: no key seen
      const float* stats = a.softmax_stats + 2 * (b.q0 + i);
      b.lse[i] = stats[1] > 0.0f ? stats[0] + std::log(stats[1])
                                 : std::numeric_limits<float>::infinity();
    }
    for (size_t i = 0; i < b.nq; ++i) {
      const float* o = f.z + (b.q0 + i) * f.ldz;
      const float* d = a.d_out + (b.q0 + i) * a.ld_d_out;
      V sum = Ops::Zero();
      for (size_t e = 0; e < f.dv; e += kL) {
        sum = Ops::MulAdd(Ops::Load(o + e), Ops::Load(d + e), sum);
      }
      b.delta[i] = Ops::ReduceSum(sum);
    }
    FillN(b.dq, b.nq * f.dk, 0.0f);
  }

  static void Run(const AttentionBackwardArgs& a) {
    const AttentionArgs& f = a.forward;
    Block b;
    b.qt = a.scratch;
    b.dot = b.qt + f.dk * kBq;
    b.dq = b.dot + f.dv * kBq;
    b.pt = b.dq + kBq * f.dk;
    b.dpt = b.pt + kBk * kBq;
    b.cap = b.dpt + kBk * kBq;
    b.lse = b.cap + kBk * kBq;
    b.delta = b.lse + kBq;
    for (b.q0 = 0; b.q0 < f.tq; b.q0 += kBq) {
      b.nq = std::min(kBq, f.tq - b.q0);
      b.cols = (b.nq + G::kPanel - 1) / G::kPanel * G::kPanel;
      VisibleKeys(f, b.q0, b.nq, b.key_begin, b.key_end);
      Prepare(a, b);
      for (size_t k0 = b.key_begin; k0 < b.key_end; k0 += kBk) {
        const size_t nk = std::min(kBk, b.key_end - k0);
        if (!AllPadding(f, k0, nk)) Accumulate(a, b, k0, nk);
      }
      for (size_t i = 0; i < b.nq; ++i) {
        CopyN(b.dq + i * f.dk, f.dk, a.d_q + (b.q0 + i) * a.ld_d_q);
      }
    }
  }
};
