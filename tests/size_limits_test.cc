// Sizes that wrap size_t (32 bits in wasm, 64 natively) or exceed what can be
// allocated: every entry point refuses them before allocating anything, with
// SizeLimitError naming the buffer, its factors and the bytes (or
// std::invalid_argument for a length that cannot match a wrapping shape),
// and the object gives the right answer afterwards.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "checks/checked_size.h"
#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/transformer_block.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

using testing::OwnedTensor;
using testing::RandomTensor;
using testing::RandomWeights;
using testing::ThrowsWith;

constexpr int kSizeBits = sizeof(size_t) * 8;
constexpr bool kWasm32 = kSizeBits == 32;
// Times a row of 8 or more floats this wraps size_t (to 0 for exactly 8).
constexpr size_t kWrapsTimes8 = size_t{1} << (kSizeBits - 3);
// Squared, this wraps size_t to 0.
constexpr size_t kWrapsSquared = size_t{1} << (kSizeBits / 2);
// What the limit says on this platform for a product that wraps.
const char* const kLimit =
    kWasm32 ? "a wasm32 module can hold" : "overflows a 64-bit size";

// A small self-attention that must keep working after every refusal.
struct SmallMha {
  MhaConfig config{.d_model = 8, .num_heads = 2};
  std::mt19937 rng{7};
  MultiHeadAttention mha{config};
  testing::OwnedWeights weights = RandomWeights(testing::Resolve(config), rng);
  OwnedTensor x = RandomTensor(2, 5, 8, rng);
  std::vector<float> expected;

  MhaOptions causal{.causal = true};

  SmallMha() {
    mha.SetWeights(weights.View());
    expected = mha.Forward(x.View(), causal).output;
  }
  // Token by token through a cache, as the causal forward.
  void ExpectStillWorks() {
    EXPECT_EQ(mha.Forward(x.View(), causal).output, expected);
    KVCache cache = mha.CreateKVCache(2, 5);
    EXPECT_TRUE(testing::AllNear(mha.ForwardIncremental(x.View(), cache).output, expected, 1e-5));
  }
};

TEST(SizeLimits, ProductsAreExactOrFlaggedAsOverflow) {
  EXPECT_EQ(ProductOf({kWrapsSquared, kWrapsSquared}).value,
            uint64_t{kWrapsSquared} * kWrapsSquared);
  EXPECT_FALSE(ProductOf({size_t{1} << 31, 2}).overflow);
  EXPECT_EQ(ProductOf({size_t{1} << 31, 2}).value, uint64_t{1} << 32);
  EXPECT_TRUE(ProductOf({SIZE_MAX, SIZE_MAX, SIZE_MAX}).overflow);
  EXPECT_EQ(ProductString(ProductOf({uint32_t{1} << 16, uint32_t{1} << 16})), "4294967296");
  EXPECT_EQ(ProductString(ProductOf({size_t{1} << 31, size_t{1} << 31})), "4611686018427387904");
  EXPECT_EQ(ProductString(ProductOf({size_t{1} << 31, size_t{1} << 31, size_t{1} << 31})),
            "more than 18446744073709551615");
  EXPECT_EQ(BytesString(24), "24 B");
  EXPECT_EQ(BytesString(16.0 * (1 << 30)), "16 GiB");
  EXPECT_EQ(BytesString(1.5 * (1 << 20)), "1.5 MiB");
  // As %g: six significant digits, exponent form below 1e-4 and from 1e6.
  EXPECT_EQ(NumberString(0), "0");
  EXPECT_EQ(NumberString(1e20), "1e+20");
  EXPECT_EQ(NumberString(3.4028234663852886e38), "3.40282e+38");
  EXPECT_EQ(NumberString(0.35355339), "0.353553");
  EXPECT_EQ(NumberString(-2.5), "-2.5");
  EXPECT_EQ(NumberString(123456.7), "123457");
  EXPECT_EQ(NumberString(999999.7), "1e+06");
  EXPECT_EQ(NumberString(0.0001234), "0.0001234");
  EXPECT_EQ(NumberString(1.5e-300), "1.5e-300");
  EXPECT_EQ(NumberString(1e40), "1e+40");
  EXPECT_EQ(NumberString(100), "100");
}

TEST(SizeLimits, CheckedCountNamesFactorsAndBytes) {
  EXPECT_EQ(CheckedCount("buffer", {{"a", 3}, {"b", 5}}), 15u);
  EXPECT_TRUE(ThrowsWith<SizeLimitError>(
      [] { CheckedCount("KV cache keys", {{"batch", 1}, {"maxLength", kWrapsTimes8}, {"row", 8}}); },
      {"KV cache keys: batch * maxLength * row = 1 * ", " floats", kLimit}));
}

TEST(SizeLimits, LengthOfAWrappingShapeIsNeverMatchedByAnEmptyArray) {
  // Before: the product wrapped to 0 and an empty array passed.
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [] { CheckLength("w_q", 0, {kWrapsSquared, kWrapsSquared}); },
      {"w_q: expected ", kWasm32 ? "4294967296" : "more than 18446744073709551615",
       "values for shape", "got 0"}));
}

TEST(SizeLimits, ConfigWhoseWeightsCannotExist) {
  MhaConfig c{.d_model = kWrapsSquared, .num_heads = 1};
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { MultiHeadAttention m(c); },
                                         {"w_q: d_model * (num_heads * head_dim) = ", kLimit}));
  c = {.d_model = 8, .num_heads = 2, .kdim = kWrapsTimes8};
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { MultiHeadAttention m(c); },
                                         {"w_k: kdim * (num_kv_heads * head_dim) = "}));
  c = {.d_model = 8, .num_heads = 2, .head_dim_v = kWrapsTimes8};
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { MultiHeadAttention m(c); }, {"w_v"}));
  c = {.d_model = 8, .num_heads = 4, .head_dim = SIZE_MAX / 2};
  // 64-bit builds: the product itself overflows; wasm32: w_q cannot exist.
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { MultiHeadAttention m(c); },
                                         {"num_heads * head_dim"}));
  c = {.d_model = 8, .num_heads = 4, .head_dim_v = SIZE_MAX / 2};
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { MultiHeadAttention m(c); }, {"head_dim_v"}));
  LayerConfig layer{.d_model = 8, .num_heads = 2, .ffn_dim = kWrapsTimes8};
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { TransformerEncoderLayer l(layer); },
                                         {"ffn.w1: d_model * ffn_dim"}));
}

TEST(SizeLimits, KVCacheThatWouldWrap) {
  SmallMha s;
  for (const size_t max_length : {kWrapsTimes8, kWrapsTimes8 + 1, SIZE_MAX}) {
    EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { s.mha.CreateKVCache(1, max_length); },
                                           {"KV cache keys: batch * max_length * padded key row"}))
        << max_length;
  }
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { s.mha.CreateKVCache(kWrapsSquared, kWrapsSquared); },
                                         {"KV cache keys"}));
  s.ExpectStillWorks();
}

TEST(SizeLimits, SixteenBitCacheCountedInItsOwnElements) {
  // 2^10 sequences x 2^30 tokens x 512 elements of 2 bytes: 1 PiB, half what
  // the float cache of the same shape would take.
  MhaConfig c{.d_model = 512, .num_heads = 8, .cache_type = WeightType::kF16};
  MultiHeadAttention mha(c);
  EXPECT_TRUE(ThrowsWith<SizeLimitError>(
      [&] { mha.CreateKVCache(size_t{1} << 10, size_t{1} << 30); },
      {"KV cache keys: batch * max_length * padded key row = 1024 * 1073741824 * 512 = ",
       " elements (1 PiB)"}));
}

TEST(SizeLimits, Int8CacheCountedInItsOwnElements) {
  // The same shape in int8: a byte an element (512 TiB), its row scales
  // counted apart.
  MhaConfig c{.d_model = 512, .num_heads = 8, .cache_type = WeightType::kInt8};
  MultiHeadAttention mha(c);
  EXPECT_TRUE(ThrowsWith<SizeLimitError>(
      [&] { mha.CreateKVCache(size_t{1} << 10, size_t{1} << 30); },
      {"KV cache keys: batch * max_length * padded key row = 1024 * 1073741824 * 512 = "
       "562949953421312 bytes exceeds"}));
  EXPECT_EQ(mha.CreateKVCache(2, 3).bytes(), 2 * (2 * 3 * 512) + 2 * (2 * 3 * 8) * sizeof(float));
}

TEST(SizeLimits, StackOfMoreLayersThanMemory) {
  StackConfig c{.block = {.d_model = 8,
                          .num_heads = 2,
                          .sublayers = {{.mixer = MixerKind::kSelfAttention}}},
                .num_layers = SIZE_MAX / 2};
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { TransformerStack stack(c); },
                                         {"layers: num_layers = "}));
}

TEST(SizeLimits, DecoderLayerCacheLargerThanMemory) {
  // 128 sequences x 65536 tokens x 512 floats: 16 GiB of keys.
  TransformerDecoderLayer layer(LayerConfig{.d_model = 512, .num_heads = 8, .ffn_dim = 16});
  EXPECT_TRUE(ThrowsWith<SizeLimitError>(
      [&] { layer.self_attention().CreateKVCache(size_t{1} << 20, size_t{1} << 30); },
      {"KV cache keys: batch * max_length * padded key row = 1048576 * 1073741824 * 512"}));
}

TEST(SizeLimits, PositionalEncodingTooLarge) {
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([] { PositionalEncoding(kWrapsSquared, kWrapsSquared); },
                                         {"output: t * d_model = "}));
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([] { PositionalEncoding(2, SIZE_MAX / 2 + 1); },
                                         {"output: t * d_model"}));
  EXPECT_EQ(PositionalEncoding(2, 4).size(), 8u);
}

// Keys projected from a narrow input to a wide attention: the input fits,
// its projection does not (2^23 tokens x 1024 heads x a padded head of
// d_k = 1: 32 GiB and more).
TEST(SizeLimits, ProjectionOfManyNarrowTokens) {
  const MhaConfig config{.d_model = 1024, .num_heads = 1024, .kdim = 1, .vdim = 1};
  MultiHeadAttention mha(config);
  std::mt19937 rng(3);
  const testing::OwnedWeights w = RandomWeights(testing::Resolve(config), rng);
  mha.SetWeights(w.View());
  const size_t tokens = size_t{1} << 23;
  const std::vector<float> memory(tokens, 0.5f);
  const Tensor3 m{memory, 1, tokens, 1};
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { mha.PrecomputeKeyValue(m); },
                                         {"precomputed keys: memory.batch * memory.tokens * "
                                          "padded key row = 8388608 * "}));
  const std::vector<float> query(1024, 0.25f);
  const Tensor3 q{query, 1, 1, 1024};
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { mha.Forward(q, m, m); },
                                         {"projected keys and values: key.batch * key.tokens"}));
  // Still usable with sizes that fit.
  const Tensor3 small{std::span(memory).first(4), 1, 4, 1};
  EXPECT_EQ(mha.Forward(q, small, small).output.size(), 1024u);
}

// wasm32 only: outputs of a forward whose inputs fit but whose requested
// outputs do not (natively the same sizes would be real, 16 GiB, buffers).
TEST(SizeLimits, AttentionWeightsLargerThanTheWasmHeap) {
  if (!kWasm32) {
    // Natively: the same refusal for a size beyond 64 bits.
    EXPECT_TRUE(ThrowsWith<SizeLimitError>(
        [] { CheckedCount("attention weights", {{"batch", 1}, {"num_heads", 16},
                                                {"query tokens", size_t{1} << 31},
                                                {"key tokens", size_t{1} << 31}}); },
        {"attention weights: batch * num_heads * query tokens * key tokens"}));
    return;
  }
  const MhaConfig config{.d_model = 16, .num_heads = 16};
  MultiHeadAttention mha(config);
  std::mt19937 rng(5);
  mha.SetWeights(RandomWeights(testing::Resolve(config), rng).View());
  const OwnedTensor x = RandomTensor(1, 16384, 16, rng);
  MhaOptions options;
  options.need_weights = true;
  EXPECT_TRUE(ThrowsWith<SizeLimitError>(
      [&] { mha.Forward(x.View(), options); },
      {"attention weights: batch * num_heads * query tokens * key tokens = 1 * 16 * 16384 * "
       "16384 = 4294967296 floats (16 GiB) exceeds the 2 GiB a wasm32 module can hold"}));
  // The same object still works with outputs that fit.
  const OwnedTensor y = RandomTensor(1, 64, 16, rng);
  EXPECT_EQ(mha.Forward(y.View(), options).attn_weights.size(), size_t{16 * 64 * 64});
}

}  // namespace
}  // namespace simd_attention
