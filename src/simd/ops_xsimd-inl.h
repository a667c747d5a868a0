// Vector layer on xsimd for one architecture `Arch` (xsimd::avx512bw,
// xsimd::fma3<xsimd::avx2>, xsimd::sse4_2, xsimd::wasm). Same contract as
// ops_highway-inl.h, which documents it.
//
// Textual part of a per-target namespace: include only from
// src/backends/xsimd.cc, after <xsimd/xsimd.hpp> and ops_scalar-inl.h.

template <class Arch>
struct XsimdOps : OperatorArithmetic<xsimd::batch<float, Arch>> {
  using V = xsimd::batch<float, Arch>;
  static constexpr size_t kLanes = V::size;
  static constexpr size_t kRegisters =
      std::is_base_of_v<xsimd::avx512f, Arch> ? 32 : 16;
  static constexpr bool kVectorISA = true;

  static V Zero() { return V(0.0f); }
  static V Set(float x) { return V(x); }
  static V Load(const float* p) { return V::load_unaligned(p); }
  static void Store(V v, float* p) { v.store_unaligned(p); }
  static V Widen(const float* p) { return Load(p); }
  static V WidenUnscaled(const uint16_t* p, const Bits16Form& form) {
    using I = xsimd::batch<int32_t, Arch>;
    const I h = I::load_unaligned(reinterpret_cast<const int16_t*>(p));
    return xsimd::bitwise_cast<float>((h * I(form.shift_factor)) & I(form.mask));
  }
  static V Widen(const uint16_t* p, const Bits16Form& form) {
    return WidenUnscaled(p, form) * V(form.scale);
  }
  static V Widen(const F16Bits* p) { return Widen(&p->bits, kF16Form); }
  static V Widen(const BF16Bits* p) { return Widen(&p->bits, kBF16Form); }
  using VI = xsimd::batch<int32_t, Arch>;
  static VI ZeroI() { return VI(0); }
  static VI SetI(int32_t x) { return VI(x); }
  static V ToFloat(VI v) { return xsimd::batch_cast<float>(v); }
#if defined(__wasm_simd128__)
  // A 32-bit load and two sign extensions (xsimd's conversion goes through
  // memory a lane at a time), then as ops_highway-inl.h's: each q as the
  // float bits of 1.5 * 2^23 + q, less 1.5 * 2^23.
  static V Widen(const int8_t* p) {
    const v128_t i16 = wasm_i16x8_extend_low_i8x16(wasm_v128_load32_zero(p));
    const v128_t i32 = wasm_i32x4_extend_low_i16x8(i16);
    return V(wasm_i32x4_add(i32, wasm_i32x4_splat(0x4B400000))) - V(0x1.8p23f);
  }
#else
  static V Widen(const int8_t* p) { return ToFloat(VI::load_unaligned(p)); }
#endif
  // xsimd 13 has no pairwise int16 multiply-add, float-to-int rounding to
  // nearest or int32-to-int16 narrowing: the ISA's own, on the batch's
  // register (one ISA per compilation, see backends/xsimd.cc).
#if defined(__wasm_simd128__)
  using VP = v128_t;
  static VP LoadPairs(const int8_t* w) { return wasm_i16x8_load8x8(w); }
  static void LoadNibblePairs(const uint8_t* w, VP* low, VP* high) {
    const v128_t bytes = wasm_u16x8_load8x8(w);
    *low = wasm_v128_and(bytes, wasm_i16x8_splat(15));
    *high = wasm_u16x8_shr(bytes, 4);
  }
  static VP SetPair(int32_t pair) { return wasm_i32x4_splat(pair); }
  static VP SubPairs(VP a, VP b) { return wasm_i16x8_sub(a, b); }
  static VI MulAddPairs(VP w, VP a, VI acc) { return acc + VI(wasm_i32x4_dot_i16x8(w, a)); }
  // The magic-number rounding of ops_highway-inl.h.
  static VI RoundToInt(V x) {
    return xsimd::bitwise_cast<int32_t>(x + V(0x1.8p23f)) - VI(0x4B400000);
  }
  static void StoreInt16(VI v, int16_t* p) {
    wasm_v128_store64_lane(p, wasm_i16x8_narrow_i32x4(v128_t(v), v128_t(v)), 0);
  }
#elif defined(__AVX512BW__)
  using VP = __m512i;
  static VP LoadPairs(const int8_t* w) {
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
  }
  static void LoadNibblePairs(const uint8_t* w, VP* low, VP* high) {
    const __m512i bytes =
        _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
    *low = _mm512_and_si512(bytes, _mm512_set1_epi16(15));
    *high = _mm512_srli_epi16(bytes, 4);
  }
  static VP SetPair(int32_t pair) { return _mm512_set1_epi32(pair); }
  static VP SubPairs(VP a, VP b) { return _mm512_sub_epi16(a, b); }
  static VI MulAddPairs(VP w, VP a, VI acc) { return acc + VI(_mm512_madd_epi16(w, a)); }
  static VI RoundToInt(V x) { return VI(_mm512_cvtps_epi32(x)); }
  static void StoreInt16(VI v, int16_t* p) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtsepi32_epi16(v));
  }
#elif defined(__AVX2__)
  using VP = __m256i;
  static VP LoadPairs(const int8_t* w) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
  }
  static void LoadNibblePairs(const uint8_t* w, VP* low, VP* high) {
    const __m256i bytes =
        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    *low = _mm256_and_si256(bytes, _mm256_set1_epi16(15));
    *high = _mm256_srli_epi16(bytes, 4);
  }
  static VP SetPair(int32_t pair) { return _mm256_set1_epi32(pair); }
  static VP SubPairs(VP a, VP b) { return _mm256_sub_epi16(a, b); }
  static VI MulAddPairs(VP w, VP a, VI acc) { return acc + VI(_mm256_madd_epi16(w, a)); }
  static VI RoundToInt(V x) { return VI(_mm256_cvtps_epi32(x)); }
  static void StoreInt16(VI v, int16_t* p) {
    const __m256i r = v;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                     _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
  }
#else
  using VP = __m128i;
  static VP LoadPairs(const int8_t* w) {
    return _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w)));
  }
  static void LoadNibblePairs(const uint8_t* w, VP* low, VP* high) {
    const __m128i bytes = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w)));
    *low = _mm_and_si128(bytes, _mm_set1_epi16(15));
    *high = _mm_srli_epi16(bytes, 4);
  }
  static VP SetPair(int32_t pair) { return _mm_set1_epi32(pair); }
  static VP SubPairs(VP a, VP b) { return _mm_sub_epi16(a, b); }
  static VI MulAddPairs(VP w, VP a, VI acc) { return acc + VI(_mm_madd_epi16(w, a)); }
  static VI RoundToInt(V x) { return VI(_mm_cvtps_epi32(x)); }
  static void StoreInt16(VI v, int16_t* p) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packs_epi32(v, v));
  }
#endif
  static V Abs(V a) { return xsimd::abs(a); }
  static V CopySign(V m, V s) { return xsimd::copysign(m, s); }
  static V Sqrt(V a) { return xsimd::sqrt(a); }
  static V SelectPositive(V x, V a) { return xsimd::select(x > V(0.0f), a, V(0.0f)); }
#if defined(__wasm_relaxed_simd__)
  // xsimd 13.2's fma for wasm is mul + add (wasm-simd128 has no FMA);
  // relaxed SIMD's madd becomes one vfmadd231ps in V8 (see ops_highway-inl.h).
  static V MulAdd(V a, V b, V c) {
    static_assert(std::is_same_v<Arch, xsimd::wasm>);
    using F = __f32x4;
    return V(v128_t(__builtin_wasm_fma_f32x4(F(v128_t(a)), F(v128_t(b)), F(v128_t(c)))));
  }
#else
  static V MulAdd(V a, V b, V c) { return xsimd::fma(a, b, c); }
#endif
  static V Max(V a, V b) { return xsimd::max(a, b); }
  static V Pow2(V n) {
    const V biased = n + V(0x1.8000FEp23f);  // see ops_highway-inl.h
    return xsimd::bitwise_cast<float>(xsimd::bitwise_cast<int32_t>(biased) << 23);
  }
  static float ReduceSum(V v) { return xsimd::reduce_add(v); }
  struct PairSwapped {
    static constexpr uint32_t get(size_t i, size_t) { return static_cast<uint32_t>(i ^ 1); }
  };
  static V SwapPairs(V v) {
    return xsimd::swizzle(v, xsimd::make_batch_constant<uint32_t, Arch, PairSwapped>());
  }
};
