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
  static T SgdNew(const SgdArgs& a, size_t i, T& buf) {
    T g = Math::MulAdd(Math::Set(a.weight_decay), Math::Load(a.w + i), Math::Load(a.g + i));
    if (a.buf != nullptr) {
      const T mom = Math::Set(a.momentum);
      buf = a.first ? g : Math::MulAdd(mom, Math::Load(a.buf + i), g);
      g = a.nesterov ? Math::MulAdd(mom, buf, g) : buf;
    }
    return Math::MulAdd(Math::Set(-a.lr), g, Math::Load(a.w + i));
  }

  // The new value, m and v of elements [i, i + lanes).
  template <class T, class Math>
  static T AdamNew(const AdamArgs& a, size_t i, T& m, T& v) {
    const T w = Math::Mul(Math::Load(a.w + i), Math::Set(a.decay));
    const T g = Math::MulAdd(Math::Set(a.l2), Math::Load(a.w + i), Math::Load(a.g + i));
    m = Math::MulAdd(Math::Set(a.beta1), Math::Load(a.m + i),
                     Math::Mul(Math::Set(1.0f - a.beta1), g));
    v = Math::MulAdd(Math::Set(a.beta2), Math::Load(a.v + i),
                     Math::Mul(Math::Set(1.0f - a.beta2), Math::Mul(g, g)));
    const T denom = Math::MulAdd(Math::Sqrt(v), Math::Set(a.inv_sqrt_bc2), Math::Set(a.eps));
    return Math::Sub(w, Math::Div(Math::Mul(Math::Set(a.step_size), m), denom));
  }

  // Which of a parameter's new values would not be finite. `at(i, w, s0,
  // s1)` computes elements [i, i + lanes) into w and the slots; each value
  // x adds x - x, which is 0 for a finite x and NaN for an infinity or NaN,
  // so a sum stays 0 exactly while all its values are finite.
  template <class At, class AtTail>
  static unsigned NotFinite(size_t n, const At& at, const AtTail& at_tail) {
    V bad[3] = {Ops::Zero(), Ops::Zero(), Ops::Zero()};
    float tail[3] = {0.0f, 0.0f, 0.0f};
    size_t i = 0;
    for (; i + kL <= n; i += kL) {
      V x[3] = {Ops::Zero(), Ops::Zero(), Ops::Zero()};
      at(i, x[0], x[1], x[2]);
      for (size_t r = 0; r < 3; ++r) bad[r] = Ops::Add(bad[r], Ops::Sub(x[r], x[r]));
    }
    for (; i < n; ++i) {
      float x[3] = {0.0f, 0.0f, 0.0f};
      at_tail(i, x[0], x[1], x[2]);
      for (size_t r = 0; r < 3; ++r) tail[r] += x[r] - x[r];
    }
    unsigned result = 0;
    for (size_t r = 0; r < 3; ++r) {
      if (!(Ops::ReduceSum(bad[r]) + tail[r] == 0.0f)) result |= 1u << r;
    }
    return result;
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
  static void SgdAt(const SgdArgs& a, size_t i) {
    T buf = Math::Zero();
    const T w = SgdNew<T, Math>(a, i, buf);
    if (a.buf != nullptr) Math::Store(buf, a.buf + i);
    Math::Store(w, a.w + i);
  }

  template <class T, class Math>
  static void AdamAt(const AdamArgs& a, size_t i) {
    T m = Math::Zero(), v = Math::Zero();
    const T w = AdamNew<T, Math>(a, i, m, v);
    Math::Store(m, a.m + i);
    Math::Store(v, a.v + i);
    Math::Store(w, a.w + i);
  }
};
