// Weights held as float16, bfloat16, int8 and q4 (MhaConfig::weights,
// LayerConfig::weights), on every kernel table.
//
// Against float32: the error a storage type adds is bounded by its unit
// roundoff u (2^-11 float16, 2^-8 bfloat16; int8: half a step of
// max|w|/127 per column, u <= 2^-8 relative to the column's largest weight;
// q4: half a step of max|w|/8 per block of 32, 2^-4 relative to the block's
// largest weight, a whole step where q4_0's 7 clamps).
// A dot product of length K with rounded weights errs by at most
// u * sum |a_k w_k|, which for the cases' inputs of mixed signs stays near
// u times the result's scale; attention passes three such products in a row
// (Q or K, V, then W_O), so about 3u of the output's scale, which the softmax
// does not amplify for the cases' moderate scores. A layer adds the FFN's two
// products (5u), and its LayerNorms rescale rows whose spread is of the
// order of their scale. The bounds are twice that; the tests print the
// errors seen (about 0.1-1.6u).
//
// int8 is also checked against the float64 reference on the quantized
// weights themselves (q * scale): there only float32 arithmetic is left, and
// the integer kernel's rounding of each activation to int16 (int8_gemm.h):
// half a step of max |a_row| / 32767, i.e. at most
// 2^-16 of the row's largest, so a product of length K errs by at most
// 2^-16 max |a_row| sum_k |w_k| more: float32's own worst case for a sum of
// 256 terms (K 2^-24), and of mixed signs, so typically about
// 2^-16 max |a_row| |w| sqrt(K / 3). The golden cases' float32 tolerances
// (1e-5 to 2e-3 absolute) hold with it; tests/int8_gemm_test.cc asserts
// the kernels' worst-case bound, and q4 likewise (tests/q4_gemm_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "golden.h"
#include "kernels/gemm.h"  // PanelBytes
#include "kernels/q4_packing.h"
#include "golden_layers.h"
#include "incremental_util.h"
#include "reference/attention_reference.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"
#include "checks/validate.h"

namespace simd_attention::testing {
namespace {

struct Narrow {
  WeightType type;
  const char* name;
  double u;  // unit roundoff
};
constexpr Narrow kNarrowTypes[] = {{WeightType::kF16, "f16", 0x1p-11},
                                   {WeightType::kBF16, "bf16", 0x1p-8},
                                   {WeightType::kInt8, "int8", 0x1p-8},
                                   {WeightType::kQ4, "q4", 0x1p-4}};

double MaxAbsDiff(std::span<const float> a, std::span<const float> b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

double Scale(std::span<const float> x) {
  double scale = 1;
  for (float v : x) scale = std::max(scale, double(std::fabs(v)));
  return scale;
}

void ExpectWithin(const std::string& what, const Narrow& t, std::span<const float> got,
                  std::span<const float> want, size_t chained_products) {
  const double err = MaxAbsDiff(got, want), scale = Scale(want);
  std::printf("%s %s: max |error| %.3g = %.2fu of the output scale %.3g\n", what.c_str(),
              t.name, err, err / (t.u * scale), scale);
  EXPECT_LE(err, 2 * double(chained_products) * t.u * scale) << what << " " << t.name;
}

// The case that puts scores in the thousands (it tests the softmax's
// subtraction of the row max) has keys whose scores lie within q4's
// rounding of each other: there the output moves between their values, by
// more than the bounds above, which hold for moderate scores. The q4 paths
// are held to them on every other case.
bool Q4OutOfScope(const std::string& case_name, WeightType type) {
  return type == WeightType::kQ4 && case_name == "self_large_scores";
}

class WeightTypes : public TableCaseTest {};

TEST_P(WeightTypes, MhaStaysWithinItsRoundoffOfFloat32) {
  const GoldenCase c = LoadGoldenCase(case_name());
  MhaCaseInputs in = MhaInputs(c);
  MultiHeadAttention f32(in.config, table());
  f32.SetWeights(in.weights);
  const MhaResult want = f32.Forward(in.query, in.key, in.value, in.options);
  for (const Narrow& t : kNarrowTypes) {
    if (Q4OutOfScope(case_name(), t.type)) continue;
    MhaConfig config = in.config;
    config.weights = t.type;
    MultiHeadAttention narrow(config, table());
    narrow.SetWeights(in.weights);
    ExpectWithin(case_name(), t, narrow.Forward(in.query, in.key, in.value, in.options).output,
                 want.output, 3);
  }
}

// Per column, as MultiHeadAttention quantizes: scale = max |w| / 127.
struct Quantized {
  std::vector<int8_t> values;
  std::vector<float> scales, dequantized;
};
Quantized Quantize(std::span<const float> w, size_t rows, size_t cols) {
  Quantized q{std::vector<int8_t>(w.size()), std::vector<float>(cols, 1.0f),
              std::vector<float>(w.size())};
  for (size_t j = 0; j < cols; ++j) {
    float largest = 0;
    for (size_t r = 0; r < rows; ++r) largest = std::max(largest, std::fabs(w[r * cols + j]));
    if (largest > 0) q.scales[j] = largest / 127.0f;
  }
  for (size_t i = 0; i < w.size(); ++i) {
    const float s = q.scales[i % cols];
    q.values[i] = static_cast<int8_t>(std::clamp(std::nearbyint(w[i] / s), -127.0f, 127.0f));
    q.dequantized[i] = float(q.values[i]) * s;
  }
  return q;
}

TEST_P(WeightTypes, Int8MatchesTheFloat64ReferenceOfItsQuantizedWeights) {
  const GoldenCase c = LoadGoldenCase(case_name());
  MhaCaseInputs in = MhaInputs(c);
  in.config.weights = WeightType::kInt8;
  MultiHeadAttention mha(in.config, table());
  const MhaConfig& config = mha.config();
  const size_t dk = config.head_dim, dv = config.head_dim_v;
  const Quantized q = Quantize(in.weights.w_q, config.d_model, config.num_heads * dk);
  const Quantized k = Quantize(in.weights.w_k, config.kdim, config.num_kv_heads * dk);
  const Quantized v = Quantize(in.weights.w_v, config.vdim, config.num_kv_heads * dv);
  const Quantized o = Quantize(in.weights.w_o, config.num_heads * dv, config.d_model);
  MhaWeights dequantized = in.weights;
  dequantized.w_q = q.dequantized;
  dequantized.w_k = k.dequantized;
  dequantized.w_v = v.dequantized;
  dequantized.w_o = o.dequantized;
  const MhaResult want =
      ReferenceAttention(config, dequantized, in.query, in.key, in.value, in.options);

  mha.SetWeights(in.weights);
  const MhaResult got = mha.Forward(in.query, in.key, in.value, in.options);
  EXPECT_TRUE(AllNear(got.output, want.output, c.tolerance));

  // QuantizeInt8, the API's quantization for callers that hold a matrix
  // themselves, gives exactly these values and scales.
  const auto expect_api = [](std::span<const float> w, size_t rows, size_t cols,
                             const Quantized& want) {
    const Int8Matrix api = QuantizeInt8(w, rows, cols);
    EXPECT_EQ(api.values, want.values);
    EXPECT_EQ(api.scales, want.scales);
  };
  expect_api(in.weights.w_q, config.d_model, config.num_heads * dk, q);
  expect_api(in.weights.w_k, config.kdim, config.num_kv_heads * dk, k);
  expect_api(in.weights.w_v, config.vdim, config.num_kv_heads * dv, v);
  expect_api(in.weights.w_o, config.num_heads * dv, config.d_model, o);

  // The same values and scales given as an int8 checkpoint: the same packed
  // weights, so the same bits.
  MhaWeights stored = in.weights;
  stored.w_q = stored.w_k = stored.w_v = stored.w_o = {};
  stored.stored_w_q = {.values = q.values, .scales = q.scales};
  stored.stored_w_k = {.values = k.values, .scales = k.scales};
  stored.stored_w_v = {.values = v.values, .scales = v.scales};
  stored.stored_w_o = {.values = o.values, .scales = o.scales};
  MultiHeadAttention given(in.config, table());
  given.SetWeights(stored);
  EXPECT_EQ(given.Forward(in.query, in.key, in.value, in.options).output, got.output);
}

// A matrix as q4 packing rounds it (per column, blocks of 32 rows), read
// back: the weights a q4 object multiplies by.
std::vector<float> Q4Dequantized(std::span<const float> w, size_t rows, size_t cols) {
  std::vector<uint8_t> packed(cols * PanelBytes(WeightType::kQ4, rows, 1));
  PackQ4(w.data(), rows, cols, 1, packed.data());
  std::vector<float> out(w.size());
  UnpackQ4(packed.data(), rows, cols, 1, out.data());
  return out;
}

// W_O as q4 holds it: its blocks run along the packed rows, where each
// head's d_v rows are padded with zero rows to whole vectors of the table
// (as Z's heads are), so a block holds fewer heads' rows where d_v is not a
// multiple of the lanes.
std::vector<float> Q4OutputProjection(std::span<const float> w, size_t heads, size_t dv,
                                      size_t dv_pad, size_t cols) {
  std::vector<float> padded(heads * dv_pad * cols, 0.0f);
  for (size_t h = 0; h < heads; ++h) {
    std::copy_n(w.data() + h * dv * cols, dv * cols, padded.data() + h * dv_pad * cols);
  }
  const std::vector<float> back = Q4Dequantized(padded, heads * dv_pad, cols);
  std::vector<float> out(w.size());
  for (size_t h = 0; h < heads; ++h) {
    std::copy_n(back.data() + h * dv_pad * cols, dv * cols, out.data() + h * dv * cols);
  }
  return out;
}

// Against the float64 reference on the weights as q4 holds them, what is
// left is the int16 rounding of the activations (as int8's) and float32
// arithmetic: the golden tolerances hold.
TEST_P(WeightTypes, Q4MatchesTheFloat64ReferenceOfItsQuantizedWeights) {
  const GoldenCase c = LoadGoldenCase(case_name());
  if (Q4OutOfScope(case_name(), WeightType::kQ4)) return;
  MhaCaseInputs in = MhaInputs(c);
  in.config.weights = WeightType::kQ4;
  MultiHeadAttention mha(in.config, table());
  const MhaConfig& config = mha.config();
  const size_t dk = config.head_dim, dv = config.head_dim_v;
  MhaWeights dequantized = in.weights;
  const std::vector<float> q = Q4Dequantized(in.weights.w_q, config.d_model, config.num_heads * dk);
  const std::vector<float> k = Q4Dequantized(in.weights.w_k, config.kdim, config.num_kv_heads * dk);
  const std::vector<float> v = Q4Dequantized(in.weights.w_v, config.vdim, config.num_kv_heads * dv);
  const size_t dv_pad = (dv + table().lanes - 1) / table().lanes * table().lanes;
  const std::vector<float> o =
      Q4OutputProjection(in.weights.w_o, config.num_heads, dv, dv_pad, config.d_model);
  dequantized.w_q = q;
  dequantized.w_k = k;
  dequantized.w_v = v;
  dequantized.w_o = o;
  const MhaResult want =
      ReferenceAttention(config, dequantized, in.query, in.key, in.value, in.options);
  mha.SetWeights(in.weights);
  EXPECT_TRUE(AllNear(mha.Forward(in.query, in.key, in.value, in.options).output, want.output,
                      c.tolerance));
}

TEST_P(WeightTypes, DecodingTokenByTokenMatchesTheFullForward) {
  const GoldenCase c = LoadGoldenCase(case_name());
  MhaCaseInputs in = MhaInputs(c);
  if (in.query.data.data() != in.key.data.data()) return;  // self-attention cases only
  in.options = {};
  in.options.causal = true;
  for (const Narrow& t : kNarrowTypes) {
    in.config.weights = t.type;
    MultiHeadAttention mha(in.config, table());
    mha.SetWeights(in.weights);
    const MhaResult full = mha.Forward(in.query, in.query, in.query, in.options);
    KVCache cache = mha.CreateKVCache(in.query.batch, in.query.tokens);
    std::vector<float> steps;
    for (size_t t0 = 0; t0 < in.query.tokens; ++t0) {
      const OwnedTensor x = Tokens(in.query, t0, 1);
      const MhaResult r = mha.ForwardIncremental(x.View(), cache, {});
      const std::vector<float> want =
          TokenRows(full.output, in.query.batch, in.query.tokens, in.config.d_model, t0, 1);
      EXPECT_TRUE(AllNear(r.output, want, c.tolerance)) << t.name << " token " << t0;
    }
  }
}

// A KV cache or precomputed K/V in float16 or bfloat16 rounds each key and
// value once (u relative); the scores then err by u times their magnitude
// and the output by about u of its scale, through W_O once more: the bound
// of three chained products covers it. int8 rounds each by at most 1/254
// of its row's largest magnitude (kv_cache.h), under its u of 2^-8, so the
// same bound holds for moderate scores; its bytes are a quarter of float's
// plus a float scale per key row and value row.
TEST_P(WeightTypes, NarrowCachesStayWithinTheirRoundoffOfFloat32) {
  const GoldenCase c = LoadGoldenCase(case_name());
  MhaCaseInputs in = MhaInputs(c);
  const bool self = in.query.data.data() == in.key.data.data();
  // The bytes of a cache of `rows` key rows and as many value rows.
  const auto bytes_for = [](WeightType type, size_t f32_bytes, size_t rows) {
    return f32_bytes * Traits(type).bits / 32 + (type == WeightType::kInt8 ? 2 * rows * 4 : 0);
  };
  size_t rows = 0;  // key rows of one head held
  const auto run = [&](WeightType cache_type) {
    MhaConfig config = in.config;
    config.cache_type = cache_type;
    MultiHeadAttention mha(config, table());
    mha.SetWeights(in.weights);
    std::vector<float> out;
    size_t bytes = 0;
    if (self && mha.config().kdim == mha.config().d_model) {
      KVCache cache = mha.CreateKVCache(in.query.batch, in.query.tokens);
      for (size_t t0 = 0; t0 < in.query.tokens; ++t0) {
        const OwnedTensor x = Tokens(in.query, t0, 1);
        const MhaResult r = mha.ForwardIncremental(x.View(), cache, {});
        out.insert(out.end(), r.output.begin(), r.output.end());
      }
      EXPECT_EQ(cache.type(), cache_type);
      bytes = cache.bytes();
      rows = in.query.batch * in.query.tokens * mha.config().num_kv_heads;
    } else if (!self && mha.config().kdim == mha.config().vdim &&
               in.key.data.data() == in.value.data.data()) {
      const PrecomputedKV kv = mha.PrecomputeKeyValue(in.key);
      out = mha.Forward(in.query, kv, {}).output;
      bytes = kv.bytes();
      rows = in.key.batch * in.key.tokens * mha.config().num_kv_heads;
    }
    return std::pair{out, bytes};
  };
  const auto [want, f32_bytes] = run(WeightType::kF32);
  if (want.empty()) return;  // neither a cache nor precomputed K/V fits the case
  for (const Narrow& t : kNarrowTypes) {
    if (!Traits(t.type).in_caches) continue;
    const auto [got, bytes] = run(t.type);
    ExpectWithin(case_name() + " cache", t, got, want, 3);
    EXPECT_EQ(bytes, bytes_for(t.type, f32_bytes, rows)) << t.name;
  }
}

TEST(QuantizeInt8, NamesItsArguments) {
  std::vector<float> w(6, 0.5f);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { QuantizeInt8(w, 2, 4); },
                                                {"matrix: expected 8 values for shape [2, 4], got 6"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { QuantizeInt8(w, 0, 6); },
                                                {"rows: must be > 0, got 0"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { QuantizeInt8(w, 6, 0); },
                                                {"cols: must be > 0, got 0"}));
  // A product that wraps size_t is refused by length, before any allocation.
  const size_t half = size_t{1} << (sizeof(size_t) * 4);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { QuantizeInt8(w, half, half); },
                                                {"matrix: expected ", " values for shape"}));
  w[4] = std::nanf("");
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { QuantizeInt8(w, 2, 3); },
                                                {"matrix: element 4 is NaN"}));
}

// The table the types' names, widths and ranges come from (weight_type.h),
// and the messages and checks built on it.
TEST(WeightTypeTraits, EachTypeHasOneRowWithItsNamesWidthAndRange) {
  struct Expected {
    WeightType type;
    const char* name;
    const char* message_name;
    size_t bits;
    float largest;
    bool in_caches;
  };
  constexpr float kFloatMax = std::numeric_limits<float>::max();
  const Expected expected[] = {{WeightType::kF32, "f32", "float32", 32, kFloatMax, true},
                               {WeightType::kF16, "f16", "float16", 16, 65504.0f, true},
                               {WeightType::kBF16, "bf16", "bfloat16", 16, 0x1.fep127f, true},
                               {WeightType::kInt8, "int8", "int8", 8, kFloatMax, true},
                               {WeightType::kQ4, "q4", "q4", 4, 8 * 65504.0f, false}};
  ASSERT_EQ(std::size(kWeightTypes), std::size(expected));
  for (const Expected& e : expected) {
    const WeightTypeTraits& t = Traits(e.type);
    EXPECT_EQ(t.value, e.type);
    EXPECT_STREQ(t.name, e.name);
    EXPECT_EQ(RowNamed(kWeightTypes, e.name), &t);
    EXPECT_STREQ(StorageTypeName(e.type), e.message_name);
    EXPECT_EQ(t.bits, e.bits);
    if (e.bits % 8 == 0) EXPECT_EQ(WeightBytes(e.type), e.bits / 8);
    EXPECT_EQ(LargestStorable(e.type), e.largest);
    EXPECT_EQ(t.in_caches, e.in_caches);
  }
  EXPECT_EQ(RowNamed(kWeightTypes, "f64"), nullptr);
  EXPECT_EQ(StorableRange(WeightType::kF16), "float16's range (magnitudes up to 65504)");
  EXPECT_EQ(StorableRange(WeightType::kQ4), "q4's range (magnitudes up to 524032)");
  // Only the types a cache may hold are offered for one.
  MhaConfig c{.d_model = 8, .num_heads = 2, .cache_type = WeightType::kQ4};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { MultiHeadAttention mha(c); },
      {"config.cache_type: expected float32, float16, bfloat16 or int8, got q4"}));
}

INSTANTIATE_TEST_SUITE_P(Cases, WeightTypes,
                         ::testing::ValuesIn(OnEveryTable(GoldenCaseNames("mha"))),
                         TableCaseParamName);

class LayerWeightTypes : public TableTest {};

TEST_P(LayerWeightTypes, EncoderAndDecoderStayWithinTheirRoundoffOfFloat32) {
  for (const std::string& name : GoldenCaseNames("encoder_layer")) {
    const GoldenCase c = LoadGoldenCase(name);
    LayerConfig config = GoldenLayerConfig(c);
    TransformerEncoderLayer f32(config, table());
    f32.SetWeights(GoldenAttention(c, ""), GoldenFfn(c), GoldenNorm(c, 1), GoldenNorm(c, 2));
    const std::vector<float> want = f32.Forward(GoldenInput(c, "input"));
    for (const Narrow& t : kNarrowTypes) {
      config.weights = t.type;
      TransformerEncoderLayer layer(config, table());
      layer.SetWeights(GoldenAttention(c, ""), GoldenFfn(c), GoldenNorm(c, 1), GoldenNorm(c, 2));
      ExpectWithin(name, t, layer.Forward(GoldenInput(c, "input")), want, 5);
    }
  }
  for (const std::string& name : GoldenCaseNames("decoder_layer")) {
    const GoldenCase c = LoadGoldenCase(name);
    LayerConfig config = GoldenLayerConfig(c);
    const auto run = [&](const LayerConfig& lc) {
      TransformerDecoderLayer layer(lc, table());
      layer.SetWeights(GoldenAttention(c, "self_"), GoldenAttention(c, "cross_"), GoldenFfn(c),
                       GoldenNorm(c, 1), GoldenNorm(c, 2), GoldenNorm(c, 3));
      return layer.Forward(GoldenInput(c, "input"), GoldenInput(c, "memory"));
    };
    const std::vector<float> want = run(config);
    for (const Narrow& t : kNarrowTypes) {
      config.weights = t.type;
      ExpectWithin(name, t, run(config), want, 8);
    }
  }
}

// A small self-attention whose weights are exact in float16 and bfloat16
// (random bits of either type), so that float32 weights and the same
// weights given as bits pack to the same panels.
struct BitsWeights {
  MhaConfig config;
  std::vector<uint16_t> bits[4];
  std::vector<float> values[4];
};

BitsWeights RandomBitsWeights(WeightType type) {
  BitsWeights w;
  w.config.d_model = 16;
  w.config.num_heads = 2;
  w.config.bias = false;
  w.config.weights = type;
  std::mt19937 rng(7);
  for (int m = 0; m < 4; ++m) {
    for (size_t i = 0; i < 16 * 16; ++i) {
      // Sign, an exponent for magnitudes in [2^-6, 2^0) and a random
      // mantissa: normal in both types.
      const uint16_t sign = (rng() & 1) << 15;
      uint16_t bits;
      float value;
      if (type == WeightType::kF16) {
        const uint32_t e = 9 + rng() % 6, mantissa = rng() & 0x3ff;
        bits = static_cast<uint16_t>(sign | (e << 10) | mantissa);
        value = std::ldexp(1.0f + float(mantissa) / 1024, int(e) - 15);
      } else {
        const uint32_t e = 121 + rng() % 6, mantissa = rng() & 0x7f;
        bits = static_cast<uint16_t>(sign | (e << 7) | mantissa);
        value = std::ldexp(1.0f + float(mantissa) / 128, int(e) - 127);
      }
      w.bits[m].push_back(bits);
      w.values[m].push_back(sign ? -value : value);
    }
  }
  return w;
}

TEST_P(LayerWeightTypes, SixteenBitCheckpointsPackAsTheirFloat32Values) {
  for (WeightType type : {WeightType::kF16, WeightType::kBF16}) {
    const BitsWeights w = RandomBitsWeights(type);
    std::mt19937 rng(3);
    const std::vector<float> x = RandomVector(2 * 5 * 16, 1.0f, rng);
    const Tensor3 t{x, 2, 5, 16};
    MultiHeadAttention from_floats(w.config, table()), from_bits(w.config, table());
    from_floats.SetWeights({.w_q = w.values[0], .w_k = w.values[1], .w_v = w.values[2],
                            .w_o = w.values[3]});
    from_bits.SetWeights({.stored_w_q = {.bits = w.bits[0]},
                          .stored_w_k = {.bits = w.bits[1]},
                          .stored_w_v = {.bits = w.bits[2]},
                          .stored_w_o = {.bits = w.bits[3]}});
    EXPECT_EQ(from_bits.Forward(t, t, t, {}).output, from_floats.Forward(t, t, t, {}).output);
  }
}

TEST_P(LayerWeightTypes, NarrowTypesHoldHalfOrAQuarterOfTheBytes) {
  const GoldenCase c = LoadGoldenCase(GoldenCaseNames("encoder_layer").front());
  LayerConfig config = GoldenLayerConfig(c);
  const auto bytes = [&](WeightType type) {
    config.weights = type;
    TransformerEncoderLayer layer(config, table());
    layer.SetWeights(GoldenAttention(c, ""), GoldenFfn(c), GoldenNorm(c, 1), GoldenNorm(c, 2));
    return layer.WeightBytes();
  };
  const size_t f32 = bytes(WeightType::kF32);
  EXPECT_EQ(bytes(WeightType::kF16) * 2, f32);
  EXPECT_EQ(bytes(WeightType::kBF16) * 2, f32);
  // int8: a quarter, plus one float scale per (padded) column of each of
  // the six matrices.
  const size_t int8 = bytes(WeightType::kInt8);
  EXPECT_GT(int8, f32 / 4);
  EXPECT_LT(int8 - f32 / 4, f32 / 4 / 8);
  // q4: 4.5 bits a weight (GGUF q4_0's 18 bytes per 32), K padded to whole
  // blocks of 32 and columns to whole panels.
  const size_t q4 = bytes(WeightType::kQ4);
  EXPECT_GE(q4 * 64, f32 * 9);
  EXPECT_LT(q4, int8);
}

TEST_P(LayerWeightTypes, RefusedWeightsNameThemselvesAndLeaveTheObjectAsItWas) {
  const BitsWeights w = RandomBitsWeights(WeightType::kF16);
  std::mt19937 rng(5);
  const std::vector<float> x = RandomVector(1 * 3 * 16, 1.0f, rng);
  const Tensor3 t{x, 1, 3, 16};
  MultiHeadAttention mha(w.config, table());
  const MhaWeights good{.w_q = w.values[0], .w_k = w.values[1], .w_v = w.values[2],
                        .w_o = w.values[3]};
  mha.SetWeights(good);
  const std::vector<float> before = mha.Forward(t, t, t, {}).output;
  // `attention` refuses W_Q given as `stored` alone, with `message`.
  const auto refuses_stored_w_q = [&](MultiHeadAttention& attention, const StoredMatrix& stored,
                                      std::initializer_list<std::string_view> message) {
    return ThrowsWith<std::invalid_argument>(
        [&] {
          attention.SetWeights(
              {.w_k = good.w_k, .w_v = good.w_v, .w_o = good.w_o, .stored_w_q = stored});
        },
        message);
  };

  std::vector<float> huge = w.values[2];
  huge[5] = 70000;
  MhaWeights bad = good;
  bad.w_v = huge;
  EXPECT_TRUE(ThrowsWith<std::range_error>([&] { mha.SetWeights(bad); },
                                           {"w_v: element 5 is 70000", "float16",
                                            "65504", "config.weights"}));
  std::vector<uint16_t> infinite = w.bits[1];
  infinite[3] = 0x7c00;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] {
        mha.SetWeights({.w_q = good.w_q, .w_v = good.w_v, .w_o = good.w_o,
                        .stored_w_k = {.bits = infinite}});
      },
      {"w_k: element 3 is +Infinity"}));
  const std::vector<int8_t> values(16 * 16, 1);
  const std::vector<float> scales(16, 0.5f);
  EXPECT_TRUE(refuses_stored_w_q(mha, {.values = values, .scales = scales},
                                 {"w_q: int8 values given, but config.weights is float16"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] {
        MhaWeights both = good;
        both.stored_w_o = {.bits = w.bits[3]};
        mha.SetWeights(both);
      },
      {"w_o: given both as float32 and in its storage type"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] {
        mha.SetWeights({.w_q = good.w_q, .w_k = good.w_k, .w_v = good.w_v,
                        .stored_w_o = {.bits = std::span(w.bits[3]).first(17)}});
      },
      {"w_o", "256", "17"}));
  EXPECT_EQ(mha.Forward(t, t, t, {}).output, before);

  MhaConfig q4_config = w.config;
  q4_config.weights = WeightType::kQ4;
  MultiHeadAttention q4(q4_config, table());
  EXPECT_TRUE(refuses_stored_w_q(q4, {.values = values, .scales = scales},
                                 {"w_q: int8 values given, but config.weights is q4"}));
  EXPECT_TRUE(refuses_stored_w_q(q4, {.bits = w.bits[0]},
                                 {"w_q: 16-bit weights given, but config.weights is q4"}));
  huge[5] = 6e5f;
  bad.w_v = huge;
  EXPECT_TRUE(ThrowsWith<std::range_error>([&] { q4.SetWeights(bad); },
                                           {"w_v: element 5 is 600000", "q4's range",
                                            "524032", "config.weights"}));

  MhaConfig int8 = w.config;
  int8.weights = WeightType::kInt8;
  MultiHeadAttention q(int8, table());
  EXPECT_TRUE(refuses_stored_w_q(q, {.values = values, .scales = std::span(scales).first(15)},
                                 {"w_q.scales", "16", "15"}));
}

TEST_P(LayerWeightTypes, NarrowCachesRefuseWhatTheyCannotHold) {
  BitsWeights w = RandomBitsWeights(WeightType::kF16);
  w.config.weights = WeightType::kF32;
  w.config.cache_type = WeightType::kF16;
  MultiHeadAttention mha(w.config, table());
  mha.SetWeights({.w_q = w.values[0], .w_k = w.values[1], .w_v = w.values[2],
                  .w_o = w.values[3]});
  KVCache cache = mha.CreateKVCache(1, 4);
  std::mt19937 rng(11);
  const std::vector<float> x = RandomVector(16, 1.0f, rng);
  mha.ForwardIncremental(Tensor3{x, 1, 1, 16}, cache, {});
  const std::vector<float> keys = cache.Keys();

  std::vector<float> huge = x;
  for (float& v : huge) v *= 1e6f;  // projections far beyond 65504
  EXPECT_TRUE(ThrowsWith<std::range_error>(
      [&] { mha.ForwardIncremental(Tensor3{huge, 1, 1, 16}, cache, {}); },
      {"the key projection x W_k + b_k: values up to", "float16's range", "config.cache_type"}));
  std::vector<float> big_keys(16, 1.0f);
  big_keys[3] = 1e5f;
  EXPECT_TRUE(ThrowsWith<std::range_error>(
      [&] { cache.Append(big_keys, std::vector<float>(16, 1.0f), 1); },
      {"keys: element 3 is 100000", "float16", "config.cache_type"}));
  EXPECT_EQ(cache.length(), 1u);
  EXPECT_EQ(cache.Keys(), keys);

  // int8's row scales carry any finite range; what is not finite is refused
  // as in the other types, the cache left as it was.
  MhaConfig int8_config = w.config;
  int8_config.cache_type = WeightType::kInt8;
  MultiHeadAttention int8(int8_config, table());
  int8.SetWeights({.w_q = w.values[0], .w_k = w.values[1], .w_v = w.values[2],
                   .w_o = w.values[3]});
  KVCache int8_cache = int8.CreateKVCache(1, 4);
  int8.ForwardIncremental(Tensor3{huge, 1, 1, 16}, int8_cache, {});
  int8_cache.Append(big_keys, std::vector<float>(16, 1.0f), 1);
  const std::vector<float> held = int8_cache.Keys();
  EXPECT_FLOAT_EQ(held[16 + 3], 1e5f);  // the row's largest: 127 times its scale
  std::vector<float> nan_keys = big_keys;
  nan_keys[5] = std::nanf("");
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { int8_cache.Append(nan_keys, std::vector<float>(16, 1.0f), 1); },
      {"keys: element 5 is NaN"}));
  EXPECT_EQ(int8_cache.length(), 2u);
  EXPECT_EQ(int8_cache.Keys(), held);
}

INSTANTIATE_ON_EVERY_TABLE(LayerWeightTypes);

}  // namespace
}  // namespace simd_attention::testing
