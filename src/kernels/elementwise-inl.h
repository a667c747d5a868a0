// LayerNorm, RMSNorm, FFN activations, the gated product and the residual
// add over a vector layer `Ops`, and the backward of LayerNorm, RMSNorm,
// the activations and the gated product. Rows are processed a vector at a
// time with a scalar tail, so any width works; the scalar tail runs the same
// formulas through ScalarOps, the one-float vector layer (Ops on a partial
// vector would need a masked load, which the vector layer deliberately does
// not have).
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after the Ops layer, ops_scalar-inl.h and exp-inl.h.

template <class Ops>
struct Elementwise {
  using V = typename Ops::V;
  static constexpr size_t kL = Ops::kLanes;

  // erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7, below float's
  // resolution at the GELU's scale), from exp and Div alone so that every
  // vector layer has it.
  template <class T, class Math>
  static T Erf(T x) {
    const T ax = Math::Abs(x);
    const T t = Math::Div(Math::Set(1.0f),
                          Math::MulAdd(Math::Set(0.3275911f), ax, Math::Set(1.0f)));
    T poly = Math::Set(1.061405429f);
    poly = Math::MulAdd(poly, t, Math::Set(-1.453152027f));
    poly = Math::MulAdd(poly, t, Math::Set(1.421413741f));
    poly = Math::MulAdd(poly, t, Math::Set(-0.284496736f));
    poly = Math::MulAdd(poly, t, Math::Set(0.254829592f));
    const T e = ExpNonPositive<T, Math>(Math::Sub(Math::Zero(), Math::Mul(ax, ax)));
    const T y = Math::Sub(Math::Set(1.0f), Math::Mul(Math::Mul(poly, t), e));
    return Math::CopySign(y, x);
  }

  template <class T, class Math>
  static T Activate(Activation act, T x) {
    switch (act) {
      case Activation::kRelu:
        return Math::Max(x, Math::Zero());
      case Activation::kGeluTanh: {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        const T x3 = Math::Mul(Math::Mul(x, x), x);
        const T inner = Math::Mul(Math::Set(0.7978845608f),
                                  Math::MulAdd(Math::Set(0.044715f), x3, x));
        return Math::Mul(Math::Mul(Math::Set(0.5f), x),
                         Math::Add(Math::Set(1.0f), Tanh<T, Math>(inner)));
      }
      case Activation::kGeluErf:  // 0.5 x (1 + erf(x / sqrt(2)))
        return Math::Mul(Math::Mul(Math::Set(0.5f), x),
                         Math::Add(Math::Set(1.0f),
                                   Erf<T, Math>(Math::Mul(x, Math::Set(0.7071067812f)))));
      case Activation::kSilu:
        return Math::Mul(x, Sigmoid<T, Math>(x));
    }
    return x;
  }

  // 1 / (1 + e^-x) from e = exp(-|x|) <= 1, which never overflows: 1 / (1 +
  // e) for x > 0, e / (1 + e) otherwise (no cancellation for negative x).
  template <class T, class Math>
  static T Sigmoid(T x) {
    const T e = ExpNonPositive<T, Math>(Math::Sub(Math::Zero(), Math::Abs(x)));
    const T one = Math::Set(1.0f);
    const T numerator = Math::Add(e, Math::SelectPositive(x, Math::Sub(one, e)));
    return Math::Div(numerator, Math::Add(one, e));
  }

  // d * act'(x): the activation's backward at its input x.
  template <class T, class Math>
  static T ActivationGradient(Activation act, T x, T d) {
    switch (act) {
      case Activation::kRelu:  // 0 at x = 0, as torch
        return Math::SelectPositive(x, d);
      case Activation::kGeluTanh: {  // 0.5 (1 + t) + 0.5 x (1 - t^2) u', t = tanh(u)
        const T x2 = Math::Mul(x, x);
        const T inner = Math::Mul(Math::Set(0.7978845608f),
                                  Math::MulAdd(Math::Mul(Math::Set(0.044715f), x2), x, x));
        const T t = Tanh<T, Math>(inner);
        const T du = Math::Mul(Math::Set(0.7978845608f),
                               Math::MulAdd(Math::Set(3.0f * 0.044715f), x2, Math::Set(1.0f)));
        const T one_minus_t2 = Math::Sub(Math::Set(1.0f), Math::Mul(t, t));
        const T half_x = Math::Mul(Math::Set(0.5f), x);
        const T dy = Math::MulAdd(Math::Mul(half_x, one_minus_t2), du,
                                  Math::Mul(Math::Set(0.5f), Math::Add(Math::Set(1.0f), t)));
        return Math::Mul(d, dy);
      }
      case Activation::kGeluErf: {  // Phi(x) + x phi(x)
        const T cdf = Math::Mul(Math::Set(0.5f),
                                Math::Add(Math::Set(1.0f),
                                          Erf<T, Math>(Math::Mul(x, Math::Set(0.7071067812f)))));
        const T pdf = Math::Mul(
            Math::Set(0.3989422804f),
            ExpNonPositive<T, Math>(Math::Mul(Math::Set(-0.5f), Math::Mul(x, x))));
        return Math::Mul(d, Math::MulAdd(x, pdf, cdf));
      }
      case Activation::kSilu: {  // s + x s (1 - s), s = sigmoid(x)
        const T s = Sigmoid<T, Math>(x);
        const T one_minus_s = Math::Sub(Math::Set(1.0f), s);
        return Math::Mul(d, Math::MulAdd(Math::Mul(x, s), one_minus_s, s));
      }
    }
    return d;
  }

  // d_x = d_y * act'(x) over n elements. Never inlined: the gated
  // product's backward calls it too, and a copy of its four derivatives
  // there was 3.6 kB of .wasm per table.
  [[gnu::noinline]] static void ActivationBackward(Activation act, const float* x,
                                                   const float* d_y, size_t n, float* d_x) {
    size_t i = 0;
    for (; i + kL <= n; i += kL) {
      Ops::Store(ActivationGradient<V, Ops>(act, Ops::Load(x + i), Ops::Load(d_y + i)), d_x + i);
    }
    for (; i < n; ++i) d_x[i] = ActivationGradient<float, ScalarOps>(act, x[i], d_y[i]);
  }

  static void ApplyActivation(Activation act, float* x, size_t n) {
    size_t i = 0;
    for (; i + kL <= n; i += kL) {
      Ops::Store(Activate<V, Ops>(act, Ops::Load(x + i)), x + i);
    }
    for (; i < n; ++i) x[i] = Activate<float, ScalarOps>(act, x[i]);
  }

  // A gated FFN's hidden units, `rows` rows of n: out = act(gate) * up, where
  // row r's gate is gate_up + r * ld and its up the n floats after it (one
  // GEMM wrote both halves); out, row stride n, aliases neither. The gate is
  // activated in place by ApplyActivation (one copy of each activation's
  // code: a fused loop inlined them all again, 2.5 kB of .wasm per table),
  // then multiplied while it is still in L1.
  static void GatedActivation(Activation act, float* gate_up, size_t rows, size_t n, size_t ld,
                              float* out) {
    for (size_t r = 0; r < rows; ++r) {
      float* gate = gate_up + r * ld;
      ApplyActivation(act, gate, n);
      Mul(gate, gate + n, n, out + r * n);
    }
  }

  // out = x * y (out may alias either).
  static void Mul(const float* x, const float* y, size_t n, float* out) {
    size_t i = 0;
    for (; i + kL <= n; i += kL) {
      Ops::Store(Ops::Mul(Ops::Load(x + i), Ops::Load(y + i)), out + i);
    }
    for (; i < n; ++i) out[i] = x[i] * y[i];
  }

  // 1 / sqrt(mean(x^2) + eps) of a row, the mean square accumulated in
  // float32; RMSNorm's forward and backward compute it alike.
  static float InverseRms(const float* in, size_t d, float eps) {
    V acc = Ops::Zero();
    size_t i = 0;
    for (; i + kL <= d; i += kL) {
      const V v = Ops::Load(in + i);
      acc = Ops::MulAdd(v, v, acc);
    }
    float squares = Ops::ReduceSum(acc);
    for (; i < d; ++i) squares += in[i] * in[i];
    return 1.0f / std::sqrt(squares / float(d) + eps);
  }

  // RMSNorm of each of `rows` rows of width d (row r at x + r * ld, written at
  // out + r * ld; out may alias x): x / sqrt(mean(x^2) + eps) * gamma, the
  // mean square accumulated in float32 as transformers' LlamaRMSNorm does.
  static void RmsNorm(const float* x, size_t rows, size_t d, size_t ld, const float* gamma,
                      float eps, float* out) {
    for (size_t r = 0; r < rows; ++r) {
      const float* in = x + r * ld;
      float* o = out + r * ld;
      const float inv = InverseRms(in, d, eps);
      const V vinv = Ops::Set(inv);
      size_t i = 0;
      for (; i + kL <= d; i += kL) {
        Ops::Store(Ops::Mul(Ops::Mul(Ops::Load(in + i), vinv), Ops::Load(gamma + i)), o + i);
      }
      for (; i < d; ++i) o[i] = in[i] * inv * gamma[i];
    }
  }

  // out = x + y (out may alias either).
  static void Add(const float* x, const float* y, size_t n, float* out) {
    size_t i = 0;
    for (; i + kL <= n; i += kL) {
      Ops::Store(Ops::Add(Ops::Load(x + i), Ops::Load(y + i)), out + i);
    }
    for (; i < n; ++i) out[i] = x[i] + y[i];
  }

  static float Sum(const float* x, size_t n) {
    V acc = Ops::Zero();
    size_t i = 0;
    for (; i + kL <= n; i += kL) acc = Ops::Add(acc, Ops::Load(x + i));
    float sum = Ops::ReduceSum(acc);
    for (; i < n; ++i) sum += x[i];
    return sum;
  }

  // A row's mean and 1 / sqrt(var + eps), the variance from the centred
  // values (two passes, no cancellation); the forward and the backward
  // compute them alike.
  static void MeanAndInverseSigma(const float* in, size_t d, float eps, float& mean,
                                  float& inv) {
    mean = Sum(in, d) / float(d);
    const V vmean = Ops::Set(mean);
    V acc = Ops::Zero();
    size_t i = 0;
    for (; i + kL <= d; i += kL) {
      const V c = Ops::Sub(Ops::Load(in + i), vmean);
      acc = Ops::MulAdd(c, c, acc);
    }
    float var = Ops::ReduceSum(acc);
    for (; i < d; ++i) var += (in[i] - mean) * (in[i] - mean);
    inv = 1.0f / std::sqrt(var / float(d) + eps);
  }

  // Each of `rows` rows of width d: (x - mean) / sqrt(var + eps) * gamma +
  // beta, variance from the centred values (two passes, no cancellation).
  static void LayerNorm(const float* x, size_t rows, size_t d,
                        const float* gamma, const float* beta, float eps,
                        float* out) {
    for (size_t r = 0; r < rows; ++r) {
      const float* in = x + r * d;
      float* o = out + r * d;
      float mean, inv;
      MeanAndInverseSigma(in, d, eps, mean, inv);
      const V vmean = Ops::Set(mean);
      const V vinv = Ops::Set(inv);
      size_t i = 0;
      for (; i + kL <= d; i += kL) {
        const V c = Ops::Mul(Ops::Sub(Ops::Load(in + i), vmean), vinv);
        Ops::Store(Ops::MulAdd(c, Ops::Load(gamma + i), Ops::Load(beta + i)), o + i);
      }
      for (; i < d; ++i) o[i] = (in[i] - mean) * inv * gamma[i] + beta[i];
    }
  }

  // The backward of LayerNorm for each of `rows` rows of x (the forward's
  // input; its mean and 1/sigma are recomputed as the forward computed
  // them), given d_y: with xhat = (x - mean) / sigma and g = d_y * gamma,
  //   d_x = (g - mean(g) - xhat * mean(g * xhat)) / sigma,
  // and d_y * xhat into dy_xhat, whose column sums are d_gamma.
  static void LayerNormBackward(const float* x, size_t rows, size_t d, const float* gamma,
                                float eps, const float* d_y, float* d_x, float* dy_xhat) {
    for (size_t r = 0; r < rows; ++r) {
      const float* in = x + r * d;
      const float* dy = d_y + r * d;
      float* dx = d_x + r * d;
      float* dyx = dy_xhat + r * d;
      float mean, inv;
      MeanAndInverseSigma(in, d, eps, mean, inv);
      const V vmean = Ops::Set(mean);
      const V vinv = Ops::Set(inv);
      // xhat into dx for now; the sums of g and g * xhat.
      V sum_g = Ops::Zero(), sum_gx = Ops::Zero();
      size_t i = 0;
      for (; i + kL <= d; i += kL) {
        const V xhat = Ops::Mul(Ops::Sub(Ops::Load(in + i), vmean), vinv);
        const V g = Ops::Mul(Ops::Load(dy + i), Ops::Load(gamma + i));
        Ops::Store(xhat, dx + i);
        Ops::Store(Ops::Mul(Ops::Load(dy + i), xhat), dyx + i);
        sum_g = Ops::Add(sum_g, g);
        sum_gx = Ops::MulAdd(g, xhat, sum_gx);
      }
      float sg = Ops::ReduceSum(sum_g), sgx = Ops::ReduceSum(sum_gx);
      for (; i < d; ++i) {
        const float xhat = (in[i] - mean) * inv;
        const float g = dy[i] * gamma[i];
        dx[i] = xhat;
        dyx[i] = dy[i] * xhat;
        sg += g;
        sgx += g * xhat;
      }
      const V mean_g = Ops::Set(sg / float(d)), mean_gx = Ops::Set(sgx / float(d));
      for (i = 0; i + kL <= d; i += kL) {
        const V g = Ops::Mul(Ops::Load(dy + i), Ops::Load(gamma + i));
        const V xhat = Ops::Load(dx + i);
        const V centred = Ops::Sub(Ops::Sub(g, mean_g), Ops::Mul(xhat, mean_gx));
        Ops::Store(Ops::Mul(centred, vinv), dx + i);
      }
      for (; i < d; ++i) {
        dx[i] = (dy[i] * gamma[i] - sg / float(d) - dx[i] * (sgx / float(d))) * inv;
      }
    }
  }
  // The backward of RMSNorm for each of `rows` rows of x (the forward's
  // input, rows of d, row r of every array at r * ld; its 1 / rms
  // recomputed as the forward computed it),
  // given d_y: with xhat = x / rms and g = d_y * gamma,
  //   d_x = (g - xhat * mean(g * xhat)) / rms
  // (LayerNorm's without the mean terms), and d_y * xhat into dy_xhat,
  // whose column sums are d_gamma; no aliasing.
  static void RmsNormBackward(const float* x, size_t rows, size_t d, size_t ld,
                              const float* gamma, float eps, const float* d_y, float* d_x,
                              float* dy_xhat) {
    for (size_t r = 0; r < rows; ++r) {
      const float* in = x + r * ld;
      const float* dy = d_y + r * ld;
      float* dx = d_x + r * ld;
      float* dyx = dy_xhat + r * ld;
      const float inv = InverseRms(in, d, eps);
      const V vinv = Ops::Set(inv);
      // xhat into dx for now; the sum of g * xhat.
      V sum_gx = Ops::Zero();
      size_t i = 0;
      for (; i + kL <= d; i += kL) {
        const V xhat = Ops::Mul(Ops::Load(in + i), vinv);
        const V g = Ops::Mul(Ops::Load(dy + i), Ops::Load(gamma + i));
        Ops::Store(xhat, dx + i);
        Ops::Store(Ops::Mul(Ops::Load(dy + i), xhat), dyx + i);
        sum_gx = Ops::MulAdd(g, xhat, sum_gx);
      }
      float sgx = Ops::ReduceSum(sum_gx);
      for (; i < d; ++i) {
        const float xhat = in[i] * inv;
        dx[i] = xhat;
        dyx[i] = dy[i] * xhat;
        sgx += dy[i] * gamma[i] * xhat;
      }
      const V mean_gx = Ops::Set(sgx / float(d));
      for (i = 0; i + kL <= d; i += kL) {
        const V g = Ops::Mul(Ops::Load(dy + i), Ops::Load(gamma + i));
        const V centred = Ops::Sub(g, Ops::Mul(Ops::Load(dx + i), mean_gx));
        Ops::Store(Ops::Mul(centred, vinv), dx + i);
      }
      for (; i < d; ++i) dx[i] = (dy[i] * gamma[i] - dx[i] * (sgx / float(d))) * inv;
    }
  }

  // The backward of GatedActivation for each of `rows` rows: gate g at
  // gate_up + r * ld and up u the n floats after it, as the GEMM wrote them
  // (before the activation), d_hidden row r at d_hidden + r * n:
  //   d_gate = d_hidden * u * act'(g),  d_up = d_hidden * act(g),
  // into d_gate_up laid out as gate_up; no aliasing. Built from the
  // activation's forward and backward, one copy of each.
  static void GatedActivationBackward(Activation act, const float* gate_up,
                                      const float* d_hidden, size_t rows, size_t n, size_t ld,
                                      float* d_gate_up) {
    for (size_t r = 0; r < rows; ++r) {
      const float* gate = gate_up + r * ld;
      const float* dh = d_hidden + r * n;
      float* d_gate = d_gate_up + r * ld;
      float* d_up = d_gate + n;
      Mul(dh, gate + n, n, d_gate);
      ActivationBackward(act, gate, d_gate, n, d_gate);
      std::copy_n(gate, n, d_up);
      ApplyActivation(act, d_up, n);
      Mul(d_up, dh, n, d_up);
    }
  }
};
