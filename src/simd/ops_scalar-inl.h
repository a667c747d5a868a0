// Vector layer, plain C++: a "vector" is one float. The kernels in
// src/kernels are written against this interface, so the scalar backend runs
// exactly their algorithm with one lane, and the other backends run their
// row tails through it; see ops_highway-inl.h for the contract every layer
// meets.
//
// Textual part of a per-target namespace: include only from a backend's
// instantiation file, after kernels/kernels_prelude.h and before the
// backend's own layer, which may take OperatorArithmetic and the scalar
// pairs from here.

// Add, Sub, Mul and Div of a layer whose vector type has the operators.
template <class V>
struct OperatorArithmetic {
  static V Add(V a, V b) { return a + b; }
  static V Sub(V a, V b) { return a - b; }
  static V Mul(V a, V b) { return a * b; }
  static V Div(V a, V b) { return a / b; }
};

struct ScalarOps : OperatorArithmetic<float> {
  using V = float;
  static constexpr size_t kLanes = 1;
  // Accumulators the compiler can keep in registers (x86-64: 16 xmm).
  static constexpr size_t kRegisters = 16;
  static constexpr bool kVectorISA = false;

  static V Zero() { return 0.0f; }
  static V Set(float x) { return x; }
  static V Load(const float* p) { return *p; }
  static void Store(V v, float* p) { *p = v; }
  static V Widen(const float* p) { return *p; }
  static V WidenUnscaled(const uint16_t* p, const Bits16Form& form) {
    const auto h = static_cast<uint32_t>(int32_t{static_cast<int16_t>(*p)});  // sign-extended
    const uint32_t bits =
        h * static_cast<uint32_t>(form.shift_factor) & static_cast<uint32_t>(form.mask);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  static V Widen(const uint16_t* p, const Bits16Form& form) {
    return WidenUnscaled(p, form) * form.scale;
  }
  static V Widen(const F16Bits* p) { return Widen(&p->bits, kF16Form); }
  static V Widen(const BF16Bits* p) { return Widen(&p->bits, kBF16Form); }
  static V Widen(const int8_t* p) { return static_cast<float>(*p); }
  using VI = int32_t;
  static VI ZeroI() { return 0; }
  static VI SetI(int32_t x) { return x; }
  static V ToFloat(VI v) { return static_cast<float>(v); }
  static VI RoundToInt(V x) { return static_cast<VI>(std::nearbyint(x)); }
  static void StoreInt16(VI v, int16_t* p) { *p = static_cast<int16_t>(v); }
  struct VP {
    int32_t lo, hi;
  };
  static VP LoadPairs(const int8_t* w) { return {w[0], w[1]}; }
  static void LoadNibblePairs(const uint8_t* w, VP* low, VP* high) {
    *low = {w[0] & 15, w[1] & 15};
    *high = {w[0] >> 4, w[1] >> 4};
  }
  static VP SetPair(int32_t pair) {
    return {static_cast<int16_t>(pair & 0xffff), static_cast<int16_t>(pair >> 16)};
  }
  static VP SubPairs(VP a, VP b) { return {a.lo - b.lo, a.hi - b.hi}; }
  static VI MulAddPairs(VP w, VP a, VI acc) { return acc + w.lo * a.lo + w.hi * a.hi; }
  static V Abs(V a) { return std::fabs(a); }
  static V CopySign(V m, V s) { return std::copysign(m, s); }
  static V Sqrt(V a) { return std::sqrt(a); }
  static V SelectPositive(V x, V a) { return x > 0.0f ? a : 0.0f; }
  static V MulAdd(V a, V b, V c) { return a * b + c; }
  static V Max(V a, V b) { return std::max(a, b); }
  static V Pow2(V n) {
    const float biased = n + 0x1.8000FEp23f;  // see ops_highway-inl.h
    // std::bit_cast is not in Emscripten 3.1.6's libc++.
    int32_t bits;
    std::memcpy(&bits, &biased, sizeof bits);
    bits = static_cast<int32_t>(static_cast<uint32_t>(bits) << 23);
    float x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
  }
  static float ReduceSum(V v) { return v; }
};
