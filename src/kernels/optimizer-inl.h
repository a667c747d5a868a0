// SGD with momentum and Adam/AdamW over a vector layer `Ops`: one pass over
// a parameter reads its gradient and state once and writes the value and the
// state (kernels/optimizer.h gives the rules). The tail runs the same
// formulas through ScalarOps.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after the Ops layer and ops_scalar-inl.h.

template <class Ops>
struct Optimizers {
  using V = typename Ops::V;
  static constexpr size_t kL = Ops::kLanes;

  template <class T, class Math>
  static void SgdAt(const SgdArgs& a, size_t i) {
    T g = Math::MulAdd(Math::Set(a.weight_decay), Math::Load(a.w + i), Math::Load(a.g + i));
    if (a.buf != nullptr) {
      const T mom = Math::Set(a.momentum);
      const T buf = a.first ? g : Math::MulAdd(mom, Math::Load(a.buf + i), g);
      Math::Store(buf, a.buf + i);
      g = a.nesterov ? Math::MulAdd(mom, buf, g) : buf;
    }
    Math::Store(Math::MulAdd(Math::Set(-a.lr), g, Math::Load(a.w + i)), a.w + i);
  }

  template <class T, class Math>
  static void AdamAt(const AdamArgs& a, size_t i) {
    const T w = Math::Mul(Math::Load(a.w + i), Math::Set(a.decay));
    const T g = Math::MulAdd(Math::Set(a.l2), Math::Load(a.w + i), Math::Load(a.g + i));
    const T m = Math::MulAdd(Math::Set(a.beta1), Math::Load(a.m + i),
                             Math::Mul(Math::Set(1.0f - a.beta1), g));
    const T v = Math::MulAdd(Math::Set(a.beta2), Math::Load(a.v + i),
                             Math::Mul(Math::Set(1.0f - a.beta2), Math::Mul(g, g)));
    Math::Store(m, a.m + i);
    Math::Store(v, a.v + i);
    const T denom = Math::MulAdd(Math::Sqrt(v), Math::Set(a.inv_sqrt_bc2), Math::Set(a.eps));
    Math::Store(Math::Sub(w, Math::Div(Math::Mul(Math::Set(a.step_size), m), denom)), a.w + i);
  }

  static void Sgd(const SgdArgs& a) {
    size_t i = 0;
    for (; i + kL <= a.n; i += kL) SgdAt<V, Ops>(a, i);
    for (; i < a.n; ++i) SgdAt<float, ScalarOps>(a, i);
  }

  static void Adam(const AdamArgs& a) {
    size_t i = 0;
    for (; i + kL <= a.n; i += kL) AdamAt<V, Ops>(a, i);
    for (; i < a.n; ++i) AdamAt<float, ScalarOps>(a, i);
  }
};
