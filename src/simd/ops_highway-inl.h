// Vector layer on Google Highway for the current HWY_TARGET.
//
// The kernels (src/kernels/*-inl.h) are templates over an `Ops` type with
// this interface, the whole of what they need from a SIMD library:
//   V                      vector of kLanes floats
//   kLanes, kRegisters     lanes and architectural vector registers; the
//                          kernels derive their register tiles from these
//   kVectorISA             whether V is a SIMD register (false: one lane,
//                          or lanes emulated in scalar code)
//   Zero Set Load Store    unaligned loads/stores of whole vectors
//   Add Sub Mul Div Max    element-wise
//   MulAdd(a, b, c)        a * b + c, fused if the ISA can
//   Abs CopySign(m, s)     |x|; |m| with the sign of s
//   Sqrt                   correctly rounded square root
//   SelectPositive(x, a)   a where x > 0, else +0 (ReLU's gradient)
//   Pow2(n)                2^n for an integral n in [-127, 127], straight
//                          into the exponent bits; n = -127 gives +0
//   ReduceSum              horizontal sum to a float
//   Widen(p)               a vector of floats from kLanes packed weights at
//                          p: float, F16Bits or BF16Bits
//   Widen(bits, form)      the same from kLanes 16-bit floats of either
//                          kind, the kind given as data (gemm.h)
//   WidenUnscaled(bits, form)  Widen(bits, form) before its last step, the
//                          multiply by form.scale: exact, for a caller
//                          that folds the scale into the other factor
//   Widen(int8s)           a vector of floats from kLanes int8 (an int8 KV
//                          cache's rows, kv_cache.h), exact
//   VI ZeroI ToFloat       vector of kLanes int32; zero; converted to float
//   SetI(x)                int32 x in every lane
//   RoundToInt(x)          x rounded to the nearest integer, ties to even
//                          (as std::nearbyint), for |x| < 2^22
//   StoreInt16(v, p)       kLanes int32 of v, each within int16, as int16
//                          at p
//   VP                     kLanes pairs of int16 (one scalar layer pair)
//   LoadPairs(w)           2 * kLanes int8 at w sign-extended to int16:
//                          pair i is (w[2i], w[2i+1])
//   LoadNibblePairs(w, low, high)  2 * kLanes bytes at w as two VP: each
//                          byte's low nibble in *low, its high nibble in
//                          *high, 0..15 (q4 weights, q4_layout.h)
//   SetPair(pair)          the two int16 of `pair` (lo in its low half) in
//                          every pair
//   SubPairs(a, b)         a - b, int16 by int16
//   MulAddPairs(w, a, acc) acc + w.lo * a.lo + w.hi * a.hi in int32 lane i
//                          from pair i: x86 pmaddwd (AVX3_DL vpdpwssd), wasm
//                          i32x4.dot_i16x8_s
//   SwapPairs              lanes (0 1)(2 3)... exchanged; only where
//                          kLanes >= 2 (the scalar layers have no pairs)
// ops_xsimd-inl.h and ops_scalar-inl.h provide the same for xsimd and plain
// C++, so one algorithm serves every backend.
//
// Textual part of the per-target namespace hwy::HWY_NAMESPACE-style block of
// src/backends/highway.cc: include only from there, after hwy/highway.h and
// ops_scalar-inl.h.

struct HighwayOps {
  using D = hwy::HWY_NAMESPACE::ScalableTag<float>;
  using V = hwy::HWY_NAMESPACE::Vec<D>;
  static constexpr size_t kLanes = hwy::HWY_NAMESPACE::MaxLanes(D());
// x86 targets at or above AVX3 (lower values are better targets, and only
// x86 targets use the lowest bits) have zmm0-31; 64-bit Arm has v0-31 (NEON)
// and z0-31 (SVE), 32-bit Arm 16 q registers.
#if HWY_TARGET <= HWY_AVX3 || HWY_ARCH_ARM_A64
  static constexpr size_t kRegisters = 32;  // zmm0-31, v0-31, z0-31
#else
  static constexpr size_t kRegisters = 16;  // xmm/ymm0-15; wasm: V8 on x86
#endif

  static constexpr bool kVectorISA = HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR;

  static V Zero() { return hwy::HWY_NAMESPACE::Zero(D()); }
  static V Set(float x) { return hwy::HWY_NAMESPACE::Set(D(), x); }
  static V Load(const float* p) { return hwy::HWY_NAMESPACE::LoadU(D(), p); }
  static void Store(V v, float* p) { hwy::HWY_NAMESPACE::StoreU(v, D(), p); }
  using DI = hwy::HWY_NAMESPACE::RebindToSigned<D>;
  using VI = hwy::HWY_NAMESPACE::Vec<DI>;
  static V Widen(const float* p) { return Load(p); }
  static V WidenUnscaled(const uint16_t* p, const Bits16Form& form) {
    const hwy::HWY_NAMESPACE::Rebind<int16_t, DI> d16;
    const VI h = hwy::HWY_NAMESPACE::PromoteTo(
        DI(), hwy::HWY_NAMESPACE::LoadU(d16, reinterpret_cast<const int16_t*>(p)));
    const VI shifted = hwy::HWY_NAMESPACE::Mul(h, hwy::HWY_NAMESPACE::Set(DI(), form.shift_factor));
    const VI bits = hwy::HWY_NAMESPACE::And(shifted, hwy::HWY_NAMESPACE::Set(DI(), form.mask));
    return hwy::HWY_NAMESPACE::BitCast(D(), bits);
  }
  static V Widen(const uint16_t* p, const Bits16Form& form) {
    return Mul(WidenUnscaled(p, form), Set(form.scale));
  }
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  // F16C's vcvtph2ps.
  static V Widen(const F16Bits* p) {
    const hwy::HWY_NAMESPACE::Rebind<hwy::float16_t, D> d16;
    return hwy::HWY_NAMESPACE::PromoteTo(
        D(), hwy::HWY_NAMESPACE::LoadU(d16, reinterpret_cast<const hwy::float16_t*>(p)));
  }
#else
  // No conversion instruction (wasm, SSE4, EMU128): Highway's PromoteTo
  // takes 14 operations, infinities and subnormals apart; kF16Form (gemm.h)
  // takes 4.
  static V Widen(const F16Bits* p) { return Widen(&p->bits, kF16Form); }
#endif
  static V Widen(const BF16Bits* p) { return Widen(&p->bits, kBF16Form); }
#if HWY_TARGET == HWY_WASM
  // A 32-bit load, two sign extensions, then each q as the float bits of
  // 1.5 * 2^23 + q, less 1.5 * 2^23 (exact): V8's f32x4.convert_i32x4_s
  // made a decoding step over an int8 cache 1.8x slower (D1).
  static V Widen(const int8_t* p) {
    const v128_t i16 = wasm_i16x8_extend_low_i8x16(wasm_v128_load32_zero(p));
    const v128_t i32 = wasm_i32x4_extend_low_i16x8(i16);
    return Sub(V{wasm_i32x4_add(i32, wasm_i32x4_splat(0x4B400000))}, Set(0x1.8p23f));
  }
#else
  static V Widen(const int8_t* p) {
    const hwy::HWY_NAMESPACE::Rebind<int8_t, DI> d8;
    return ToFloat(hwy::HWY_NAMESPACE::PromoteTo(DI(), hwy::HWY_NAMESPACE::LoadU(d8, p)));
  }
#endif
  static VI ZeroI() { return hwy::HWY_NAMESPACE::Zero(DI()); }
  static VI SetI(int32_t x) { return hwy::HWY_NAMESPACE::Set(DI(), x); }
  static V ToFloat(VI v) { return hwy::HWY_NAMESPACE::ConvertTo(D(), v); }
  // The int8 kernel's quantization (int8_gemm.h). WASM (V8 wraps
  // i32x4.trunc_sat_f32x4_s in fix-ups) and the one-lane targets round by
  // Pow2's magic-number addition, the integer in the low bits; the others
  // convert with the ISA's round-to-nearest-even instruction (x86
  // cvtps2dq): there the addition would let GCC contract the caller's
  // multiply into a fused multiply-add, which rounds once and may round a
  // tie differently from std::nearbyint of the product.
  static VI RoundToInt(V x) {
#if HWY_TARGET == HWY_WASM || HWY_TARGET == HWY_EMU128 || HWY_TARGET == HWY_SCALAR
    const VI biased = hwy::HWY_NAMESPACE::BitCast(DI(), Add(x, Set(0x1.8p23f)));
    return hwy::HWY_NAMESPACE::Sub(biased, hwy::HWY_NAMESPACE::Set(DI(), 0x4B400000));
#else
    return hwy::HWY_NAMESPACE::NearestInt(x);
#endif
  }
  static void StoreInt16(VI v, int16_t* p) {
    const hwy::HWY_NAMESPACE::Rebind<int16_t, DI> d16;
    hwy::HWY_NAMESPACE::StoreU(hwy::HWY_NAMESPACE::DemoteTo(d16, v), d16, p);
  }
#if HWY_TARGET == HWY_SCALAR
  // One lane holds no pair of int16: the scalar layer's pairs.
  using VP = ScalarOps::VP;
  static VP LoadPairs(const int8_t* w) { return ScalarOps::LoadPairs(w); }
  static void LoadNibblePairs(const uint8_t* w, VP* low, VP* high) {
    ScalarOps::LoadNibblePairs(w, low, high);
  }
  static VP SetPair(int32_t pair) { return ScalarOps::SetPair(pair); }
  static VP SubPairs(VP a, VP b) { return ScalarOps::SubPairs(a, b); }
  static VI MulAddPairs(VP w, VP a, VI acc) {
    return hwy::HWY_NAMESPACE::Add(acc, hwy::HWY_NAMESPACE::Set(DI(), w.lo * a.lo + w.hi * a.hi));
  }
#else
  using DP = hwy::HWY_NAMESPACE::Repartition<int16_t, DI>;
  using VP = hwy::HWY_NAMESPACE::Vec<DP>;
#if HWY_TARGET == HWY_WASM
  // One v128.load8x8_s (pmovsxbw from memory in V8): Highway's LoadU and
  // PromoteTo stay two instructions, a 64-bit load and a sign extension.
  static VP LoadPairs(const int8_t* w) { return VP{wasm_i16x8_load8x8(w)}; }
  static VP LoadBytes16(const uint8_t* w) { return VP{wasm_u16x8_load8x8(w)}; }
#else
  static VP LoadPairs(const int8_t* w) {
    const hwy::HWY_NAMESPACE::Rebind<int8_t, DP> d8;
    return hwy::HWY_NAMESPACE::PromoteTo(DP(), hwy::HWY_NAMESPACE::LoadU(d8, w));
  }
  // 2 * kLanes bytes zero-extended to int16.
  static VP LoadBytes16(const uint8_t* w) {
    const hwy::HWY_NAMESPACE::RebindToUnsigned<DP> du;
    const hwy::HWY_NAMESPACE::Rebind<uint8_t, DP> d8;
    return hwy::HWY_NAMESPACE::BitCast(
        DP(), hwy::HWY_NAMESPACE::PromoteTo(du, hwy::HWY_NAMESPACE::LoadU(d8, w)));
  }
#endif
  static void LoadNibblePairs(const uint8_t* w, VP* low, VP* high) {
    const VP bytes = LoadBytes16(w);
    *low = hwy::HWY_NAMESPACE::And(bytes, hwy::HWY_NAMESPACE::Set(DP(), 15));
    *high = hwy::HWY_NAMESPACE::ShiftRight<4>(bytes);
  }
  static VP SetPair(int32_t pair) {
    return hwy::HWY_NAMESPACE::BitCast(DP(), hwy::HWY_NAMESPACE::Set(DI(), pair));
  }
  static VP SubPairs(VP a, VP b) { return hwy::HWY_NAMESPACE::Sub(a, b); }
#if HWY_TARGET == HWY_AVX3_DL
  // AVX512-VNNI's vpdpwssd: pmaddwd and the add in one instruction.
  // Highway 1.0.3 has no op for it, and its AVX3_DL target attributes name
  // avxvnni, not avx512vnni, which the intrinsic needs; the CPUs it runs on
  // have AVX512-VNNI (Highway's run-time check for AVX3_DL).
  static VI MulAddPairs(VP w, VP a, VI acc) {
    __m512i sum = acc.raw;
    asm("vpdpwssd %2, %1, %0" : "+v"(sum) : "v"(w.raw), "v"(a.raw));
    return VI{sum};
  }
#elif HWY_TARGET == HWY_EMU128
  // Each lane's two products added to it at once: EMU128's
  // ReorderWidenMulAccumulate sums odd lanes apart, one more pass over the
  // lanes to add them back.
  static VI MulAddPairs(VP w, VP a, VI acc) {
    for (size_t i = 0; i < kLanes; ++i) {
      acc.raw[i] +=
          int32_t{w.raw[2 * i]} * a.raw[2 * i] + int32_t{w.raw[2 * i + 1]} * a.raw[2 * i + 1];
    }
    return acc;
  }
#else
  // ReorderWidenMulAccumulate is pmaddwd / i32x4.dot_i16x8_s plus an add on
  // x86 and WASM (odd_sums stays zero).
  static VI MulAddPairs(VP w, VP a, VI acc) {
    VI odd_sums = ZeroI();
    const VI sums = hwy::HWY_NAMESPACE::ReorderWidenMulAccumulate(DI(), w, a, acc, odd_sums);
    return hwy::HWY_NAMESPACE::RearrangeToOddPlusEven(sums, odd_sums);
  }
#endif
#endif
  static V Add(V a, V b) { return hwy::HWY_NAMESPACE::Add(a, b); }
  static V Sub(V a, V b) { return hwy::HWY_NAMESPACE::Sub(a, b); }
  static V Mul(V a, V b) { return hwy::HWY_NAMESPACE::Mul(a, b); }
  static V Div(V a, V b) { return hwy::HWY_NAMESPACE::Div(a, b); }
  static V Abs(V a) { return hwy::HWY_NAMESPACE::Abs(a); }
  static V CopySign(V m, V s) { return hwy::HWY_NAMESPACE::CopySign(m, s); }
  static V Sqrt(V a) { return hwy::HWY_NAMESPACE::Sqrt(a); }
  static V SelectPositive(V x, V a) {
    return hwy::HWY_NAMESPACE::IfThenElseZero(hwy::HWY_NAMESPACE::Gt(x, Zero()), a);
  }
#if HWY_TARGET == HWY_WASM && defined(__wasm_relaxed_simd__)
  // Highway 1.0.3 lowers MulAdd on WASM to mul + add (wasm-simd128 has no
  // FMA). Relaxed SIMD's madd becomes one vfmadd231ps in V8; it may round
  // once or twice depending on the host, which the kernels' tolerances allow.
  static V MulAdd(V a, V b, V c) {
    return V{__builtin_wasm_fma_f32x4(a.raw, b.raw, c.raw)};
  }
#else
  static V MulAdd(V a, V b, V c) { return hwy::HWY_NAMESPACE::MulAdd(a, b, c); }
#endif
  static V Max(V a, V b) { return hwy::HWY_NAMESPACE::Max(a, b); }
  // n + 1.5 * 2^23 + 127 holds n + 127 in its low mantissa bits, which a
  // shift moves into the exponent field: no float-to-int conversion, which
  // wasm-simd128 makes costly (V8 wraps i32x4.trunc_sat_f32x4_s in NaN and
  // overflow fix-ups). The other layers do the same.
  static V Pow2(V n) {
    const hwy::HWY_NAMESPACE::RebindToSigned<D> di;
    const V biased = hwy::HWY_NAMESPACE::Add(n, Set(0x1.8000FEp23f));
    return hwy::HWY_NAMESPACE::BitCast(
        D(), hwy::HWY_NAMESPACE::ShiftLeft<23>(hwy::HWY_NAMESPACE::BitCast(di, biased)));
  }
  static float ReduceSum(V v) {
    return hwy::HWY_NAMESPACE::GetLane(hwy::HWY_NAMESPACE::SumOfLanes(D(), v));
  }
#if HWY_TARGET != HWY_SCALAR
  static V SwapPairs(V v) { return hwy::HWY_NAMESPACE::Shuffle2301(v); }
#endif
};
