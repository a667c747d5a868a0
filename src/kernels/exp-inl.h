// e^x for x <= 0 over a vector layer: every exponential the kernels take has
// a non-positive argument (softmax's score minus its row max, GELU's
// e^{-2|y|} and e^{-y^2}), so one short algorithm with no overflow path
// serves all of them, and every backend computes the same values.
//
// Cody-Waite reduction x = n ln2 + t with |t| <= ln2/2 and a degree-5
// minimax polynomial, e^t = 1 + t p(t) (XNNPACK's rr2_p5, max relative error
// 1.6e-7 over [-87, 0]), then 2^n from the exponent bits (Pow2). About a
// dozen vector ops, against some twenty for a general exp with its range
// checks, which made the softmax a sixth of the attention kernel's time.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after the vector layer.

// T is a vector of the layer `Math` (or a float, for row tails).
template <class T, class Math>
T ExpNonPositive(T x) {
  // Below -88, n rounds to -127, whose 2^n is +0: e^x flushes to zero
  // (e^-88 = 6e-39 is subnormal anyway) and e^-inf is exactly 0, which
  // fully masked rows rely on.
  x = Math::Max(x, Math::Set(-88.0f));
  // Round x log2(e) to an integer by adding and removing 1.5 * 2^23, where
  // float has no fraction bits left; no rounding instruction needed.
  const T magic = Math::Set(0x1.8p23f);
  const T n = Math::Sub(Math::MulAdd(x, Math::Set(0x1.715476p+0f), magic), magic);
  // ln2 split in two: n * ln2_hi is exact for |n| <= 127, so t keeps the
  // bits of x even without a fused multiply-add.
  T t = Math::MulAdd(n, Math::Set(-0x1.62E400p-1f), x);
  t = Math::MulAdd(n, Math::Set(-0x1.7F7D1Cp-20f), t);
  T p = Math::Set(0x1.0F9F9Cp-7f);
  p = Math::MulAdd(p, t, Math::Set(0x1.573A1Ap-5f));
  p = Math::MulAdd(p, t, Math::Set(0x1.555A80p-3f));
  p = Math::MulAdd(p, t, Math::Set(0x1.FFFDC6p-2f));
  p = Math::MulAdd(p, t, Math::Set(0x1.FFFFF6p-1f));
  const T s = Math::Pow2(n);
  return Math::MulAdd(Math::Mul(t, s), p, s);
}
