// Rotary position embedding over a vector layer `Ops` (layout and arguments
// in kernels/rope.h). Called by the projections of Q and K on the columns a
// GEMM task has just written, while they are in its cache; its transpose,
// turning by the negative angles, by the attention's backward on the
// gradients of Q and K.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after the Ops layer.

template <class Ops>
struct Rope {
  using V = typename Ops::V;
  static constexpr size_t kL = Ops::kLanes;

  static void Rotate(const RopeArgs& a) { Turn<false>(a); }
  // Apart, so that a program that never trains links none of it.
  static void RotateBack(const RopeArgs& a) { Turn<true>(a); }

  template <bool kBack>
  static void Turn(const RopeArgs& a) {
    // Whole vectors of one half (half style: its partner vector sits half
    // features on) or of interleaved pairs (an even lane count never splits
    // a pair); a single lane has no pairs, so that layer is all tail.
    const size_t width = a.interleaved ? a.rotary_dim : a.rotary_dim / 2;
    const size_t vectors_end = kL >= 2 ? width / kL * kL : 0;
    for (size_t t = 0; t < a.tokens; ++t) {
      const float* c = a.table + t * a.table_ld;
      const float* s = c + width;
      for (size_t h = 0; h < a.heads; ++h) {
        float* x = a.x + t * a.ld + h * a.head_stride;
        if constexpr (kL >= 2) {
          for (size_t i = 0; i < vectors_end; i += kL) {
            const V v = Ops::Load(x + i), cos = Ops::Load(c + i), sin = Ops::Load(s + i);
            if (a.interleaved) {
              const V turned = Ops::Mul(Ops::SwapPairs(v), sin);
              Ops::Store(kBack ? Ops::Sub(Ops::Mul(v, cos), turned)
                               : Ops::MulAdd(v, cos, turned),
                         x + i);
            } else if constexpr (kBack) {
              // (x0, x1) by -a: (x0 cos a + x1 sin a, x1 cos a - x0 sin a).
              const V w = Ops::Load(x + i + width);
              Ops::Store(Ops::MulAdd(w, sin, Ops::Mul(v, cos)), x + i);
              Ops::Store(Ops::Sub(Ops::Mul(w, cos), Ops::Mul(v, sin)), x + i + width);
            } else {
              const V w = Ops::Load(x + i + width);
              Ops::Store(Ops::Sub(Ops::Mul(v, cos), Ops::Mul(w, sin)), x + i);
              Ops::Store(Ops::MulAdd(v, sin, Ops::Mul(w, cos)), x + i + width);
            }
          }
        }
        if (vectors_end < width) RotateTail(a, x, c, vectors_end, kBack);
      }
    }
  }
};
