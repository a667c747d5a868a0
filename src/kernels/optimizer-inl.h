// SGD with momentum and Adam/AdamW over a vector layer `Ops`: one pass over
// a parameter reads its gradient and state once and writes the value and the
// state (kernels/optimizer.h gives the rules), or, with check_only, computes
// the same numbers through the same functions and reports which would not be
// finite. The tail runs the same formulas through ScalarOps.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after the Ops layer and ops_scalar-inl.h.

template <class Ops>
struct Optimizers {
  using V = typename Ops::V;
  static constexpr size_t kL = Ops::kLanes;

  // The new value of elements [i, i + lanes) and, with momentum, the new
  // buffer.
  template <class T, class Math>
  static SA_OPTIMIZER_INLINE T SgdNew(const SgdArgs& a, size_t i, T& buf) {
    T g = Math::MulAdd(Math::Set(a.weight_decay), Math::Load(a.w + i), Math::Load(a.g + i));
    if (a.buf != nullptr) {
      const T mom = Math::Set(a.momentum);
      buf = a.first ? g : Math::MulAdd(mom, Math::Load(a.buf + i), g);
      g = a.nesterov ? Math::MulAdd(mom, buf, g) : buf;
    }
    return Math::MulAdd(Math::Set(-a.lr), g, Math::Load(a.w + i));
  }

  // The new m and v of elements [i, i + lanes); returns w * decay.
  template <class T, class Math>
  static SA_OPTIMIZER_INLINE T AdamMoments(const AdamArgs& a, size_t i, T& m, T& v) {
    const T g = Math::MulAdd(Math::Set(a.l2), Math::Load(a.w + i), Math::Load(a.g + i));
    m = Math::MulAdd(Math::Set(a.beta1), Math::Load(a.m + i),
                     Math::Mul(Math::Set(1.0f - a.beta1), g));
    v = Math::MulAdd(Math::Set(a.beta2), Math::Load(a.v + i),
                     Math::Mul(Math::Set(1.0f - a.beta2), Math::Mul(g, g)));
    return Math::Mul(Math::Load(a.w + i), Math::Set(a.decay));
  }

  // The new value, m and v of elements [i, i + lanes).
  template <class T, class Math>
  static SA_OPTIMIZER_INLINE T AdamNew(const AdamArgs& a, size_t i, T& m, T& v) {
    const T w = AdamMoments<T, Math>(a, i, m, v);
    const T denom = Math::MulAdd(Math::Sqrt(v), Math::Set(a.inv_sqrt_bc2), Math::Set(a.eps));
    return Math::Sub(w, Math::Div(Math::Mul(Math::Set(a.step_size), m), denom));
  }

  // The new m and v, and twice a bound on the new value's magnitude without
  // its square root and division: the denominator is at least eps, so
  // |new w| <= |w decay| + |m| step_size / eps, give or take rounding, which
  // the factor 2 covers. A finite result proves the new value finite.
  template <class T, class Math>
  static SA_OPTIMIZER_INLINE T AdamBound(const AdamArgs& a, size_t i, T& m, T& v) {
    const T w = AdamMoments<T, Math>(a, i, m, v);
    const T bound = Math::MulAdd(Math::Abs(m), Math::Set(a.step_size / a.eps), Math::Abs(w));
    return Math::Mul(bound, Math::Set(2.0f));
  }

  // Which of a parameter's new values would not be finite. `at(i, w, s0,
  // s1)` computes elements [i, i + lanes) into w and the slots; each value
  // x adds x * 0, which is 0 for a finite x and NaN for an infinity or NaN,
  // so a sum stays 0 exactly while all its values are finite (one fused
  // multiply-add per value).
  template <class T, class Math, class At>
  static SA_OPTIMIZER_INLINE void Flag(const At& at, size_t i, T& bad_w, T& bad_0, T& bad_1) {
    T w = Math::Zero(), s0 = Math::Zero(), s1 = Math::Zero();
    at(i, w, s0, s1);
    const T zero = Math::Zero();
    bad_w = Math::MulAdd(w, zero, bad_w);
    bad_0 = Math::MulAdd(s0, zero, bad_0);
    bad_1 = Math::MulAdd(s1, zero, bad_1);
  }

  template <class At, class AtTail>
  static unsigned NotFinite(size_t n, const At& at, const AtTail& at_tail) {
    V bad_w = Ops::Zero(), bad_0 = Ops::Zero(), bad_1 = Ops::Zero();
    size_t i = 0;
    for (; i + kL <= n; i += kL) Flag<V, Ops>(at, i, bad_w, bad_0, bad_1);
    float tail_w = 0.0f, tail_0 = 0.0f, tail_1 = 0.0f;
    for (; i < n; ++i) Flag<float, ScalarOps>(at_tail, i, tail_w, tail_0, tail_1);
    return (Ops::ReduceSum(bad_w) + tail_w == 0.0f ? 0u : unsigned{kNewWeight}) |
           (Ops::ReduceSum(bad_0) + tail_0 == 0.0f ? 0u : unsigned{kNewSlot0}) |
           (Ops::ReduceSum(bad_1) + tail_1 == 0.0f ? 0u : unsigned{kNewSlot1});
  }

  static unsigned Sgd(const SgdArgs& a) {
    if (a.check_only) {
      return NotFinite(
          a.n, [&](size_t i, V& w, V& buf, V&) { w = SgdNew<V, Ops>(a, i, buf); },
          [&](size_t i, float& w, float& buf, float&) {
            w = SgdNew<float, ScalarOps>(a, i, buf);
          });
    }
    size_t i = 0;
    for (; i + kL <= a.n; i += kL) SgdAt<V, Ops>(a, i);
    for (; i < a.n; ++i) SgdAt<float, ScalarOps>(a, i);
    return 0;
  }

  static unsigned Adam(const AdamArgs& a) {
    if (a.check_only) {
      // The moments exactly and the value by its bound, which the square
      // root and division would cost as much as the step; exactly only
      // where the bound does not settle it (an lr or gradients near
      // float32's range).
      const unsigned bounded = NotFinite(
          a.n, [&](size_t i, V& w, V& m, V& v) { w = AdamBound<V, Ops>(a, i, m, v); },
          [&](size_t i, float& w, float& m, float& v) {
            w = AdamBound<float, ScalarOps>(a, i, m, v);
          });
      if (!(bounded & kNewWeight)) return bounded;
      return NotFinite(
          a.n, [&](size_t i, V& w, V& m, V& v) { w = AdamNew<V, Ops>(a, i, m, v); },
          [&](size_t i, float& w, float& m, float& v) {
            w = AdamNew<float, ScalarOps>(a, i, m, v);
          });
    }
    size_t i = 0;
    for (; i + kL <= a.n; i += kL) AdamAt<V, Ops>(a, i);
    for (; i < a.n; ++i) AdamAt<float, ScalarOps>(a, i);
    return 0;
  }

 private:
  template <class T, class Math>
  static SA_OPTIMIZER_INLINE void SgdAt(const SgdArgs& a, size_t i) {
    T buf = Math::Zero();
    const T w = SgdNew<T, Math>(a, i, buf);
    if (a.buf != nullptr) Math::Store(buf, a.buf + i);
    Math::Store(w, a.w + i);
  }

  template <class T, class Math>
  static SA_OPTIMIZER_INLINE void AdamAt(const AdamArgs& a, size_t i) {
    T m = Math::Zero(), v = Math::Zero();
    const T w = AdamNew<T, Math>(a, i, m, v);
    Math::Store(m, a.m + i);
    Math::Store(v, a.v + i);
    Math::Store(w, a.w + i);
  }
};
