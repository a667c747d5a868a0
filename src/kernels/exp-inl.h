// e^x for x <= 0 over a vector layer: every exponential the kernels take has
// a non-positive argument (softmax's score minus its row max, GELU's
// e^{-2|y|} and e^{-y^2}, tanh's e^{-2|y|}), so one short algorithm with no
// overflow path serves all of them, and every backend computes the same
// values.
//
// Cody-Waite reduction x = n ln2 + t with |t| <= ln2/2 and a degree-5
// minimax polynomial, e^t = 1 + t p(t) (XNNPACK's rr2_p5, max relative error
// 1.6e-7 over [-87, 0]), then 2^n from the exponent bits (Pow2). About a
// dozen vector ops, against some twenty for a general exp with its range
// checks, which made the softmax a sixth of the attention kernel's time.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after the vector layer.

// x = n ln2 + t with n integral and |t| <= ln2/2. T is a vector of the
// layer `Math` (or a float, for row tails).
template <class T, class Math>
void ReduceExpArgument(T x, T& n, T& t) {
  // Below -88, n rounds to -127, whose 2^n is +0: e^x flushes to zero
  // (e^-88 = 6e-39 is subnormal anyway) and e^-inf is exactly 0, which
  // fully masked rows rely on.
  x = Math::Max(x, Math::Set(-88.0f));
  // Round x log2(e) to an integer by adding and removing 1.5 * 2^23, where
  // float has no fraction bits left; no rounding instruction needed.
  const T magic = Math::Set(0x1.8p23f);
  n = Math::Sub(Math::MulAdd(x, Math::Set(0x1.715476p+0f), magic), magic);
  // ln2 split in two: n * ln2_hi is exact for |n| <= 127, so t keeps the
  // bits of x even without a fused multiply-add.
  t = Math::MulAdd(n, Math::Set(-0x1.62E400p-1f), x);
  t = Math::MulAdd(n, Math::Set(-0x1.7F7D1Cp-20f), t);
}

template <class T, class Math>
T ExpNonPositive(T x) {
  T n, t;
  ReduceExpArgument<T, Math>(x, n, t);
  T p = Math::Set(0x1.0F9F9Cp-7f);
  p = Math::MulAdd(p, t, Math::Set(0x1.573A1Ap-5f));
  p = Math::MulAdd(p, t, Math::Set(0x1.555A80p-3f));
  p = Math::MulAdd(p, t, Math::Set(0x1.FFFDC6p-2f));
  p = Math::MulAdd(p, t, Math::Set(0x1.FFFFF6p-1f));
  const T s = Math::Pow2(n);
  return Math::MulAdd(Math::Mul(t, s), p, s);
}

// e^x - 1 for x <= 0, to float32's relative accuracy also near 0, where
// e^x - 1 would cancel: 2^n (e^t - 1) + (2^n - 1), with 2^n - 1 exact down
// to n = -24 and e^t - 1 = t + t^2 (1/2 + t/6 + ... + t^5/5040), whose
// first omitted term is below 2e-8 of the result for |t| <= ln2/2. (rr2_p5
// above is fitted to e^t's error, not to e^t - 1's: 6e-7 off near 0.)
template <class T, class Math>
T ExpM1NonPositive(T x) {
  T n, t;
  ReduceExpArgument<T, Math>(x, n, t);
  T p = Math::Set(1.0f / 5040);
  p = Math::MulAdd(p, t, Math::Set(1.0f / 720));
  p = Math::MulAdd(p, t, Math::Set(1.0f / 120));
  p = Math::MulAdd(p, t, Math::Set(1.0f / 24));
  p = Math::MulAdd(p, t, Math::Set(1.0f / 6));
  p = Math::MulAdd(p, t, Math::Set(0.5f));
  const T em1_t = Math::MulAdd(Math::Mul(t, t), p, t);
  const T s = Math::Pow2(n);
  return Math::MulAdd(s, em1_t, Math::Sub(s, Math::Set(1.0f)));
}

// tanh(y) = sign(y) (1 - e) / (1 + e) with e = e^{-2|y|} in (0, 1], written
// with u = e - 1 as -u / (2 + u): the exponent is never positive, and tanh
// of small |y| keeps float32's relative accuracy (1 - e would cancel), which
// soft-capping scores of any size needs. |y| large gives u = -1, tanh = +-1.
template <class T, class Math>
T Tanh(T y) {
  const T a = Math::Abs(y);
  const T u = ExpM1NonPositive<T, Math>(Math::Sub(Math::Zero(), Math::Add(a, a)));
  return Math::CopySign(Math::Div(Math::Sub(Math::Zero(), u), Math::Add(Math::Set(2.0f), u)),
                        y);
}
