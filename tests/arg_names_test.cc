// Messages name arguments as the caller passed them in config.names: a
// binding's names reach its users unchanged, and C++ users get CppArgNames().
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "simd_attention/arg_names.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// Every name different from C++'s, so a message that used a C++ name shows.
ArgNames OtherNames() {
  ArgNames n = CppArgNames();
  n.d_model = "width";
  n.num_heads = "heads";
  n.w_q = "queryWeights";
  n.b_o = "outputBias";
  n.key_padding_mask = "padding";
  n.max_length = "capacity";
  n.ffn_dim = "hidden";
  n.eps = "epsilon";
  n.self_attention = "selfAttn";
  n.memory_key_padding_mask = "memoryPadding";
  n.layer_norm_gamma = "scale";
  return n;
}

const ArgNames kOther = OtherNames();

MhaConfig Config(size_t d_model, size_t heads) {
  MhaConfig c;
  c.d_model = d_model;
  c.num_heads = heads;
  c.names = &kOther;
  return c;
}

LayerConfig Layer(size_t d_model, size_t heads, size_t ffn_dim) {
  LayerConfig c;
  c.d_model = d_model;
  c.num_heads = heads;
  c.ffn_dim = ffn_dim;
  c.names = &kOther;
  return c;
}

TEST(ArgNames, CppNamesAreTheDefault) {
  MhaConfig c;
  c.d_model = 10;
  c.num_heads = 3;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { MultiHeadAttention mha(c); },
                                                {"config.d_model: must be divisible by num_heads"}));
}

TEST(ArgNames, ConfigWeightsMasksAndCacheUseTheGivenNames) {
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { MultiHeadAttention mha(Config(10, 3)); },
                                                {"config.width: must be divisible by heads (3)"}));
  MultiHeadAttention mha(Config(4, 2));
  const std::vector<float> w(16, 0.1f), b(4, 0.0f), short_w(15, 0.1f);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.SetWeights({short_w, w, w, w, b, b, b, b}); },
      {"queryWeights: expected 16 values for shape [4, 4], got 15"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.SetWeights({w, w, w, w, b, b, b, {}}); }, {"outputBias: expected 4 values"}));
  mha.SetWeights({w, w, w, w, b, b, b, b});
  const std::vector<float> x(8, 0.5f);
  const std::vector<uint8_t> mask(3, 1);
  MhaOptions o;
  o.key_padding_mask = mask;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.Forward(Tensor3{x, 1, 2, 4}, o); }, {"padding: expected 2 values"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { mha.Forward(Tensor3{x, 1, 4, 2}); },
                                                {"query.features: expected 4 (width), got 2"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { mha.CreateKVCache(1, 0); },
                                                {"capacity: must be > 0, got 0"}));
  KVCache cache = mha.CreateKVCache(1, 1);
  EXPECT_TRUE(ThrowsWith<std::length_error>(
      [&] { mha.ForwardIncremental(Tensor3{x, 1, 2, 4}, cache); },
      {"KV cache full", "create the cache with a larger capacity"}));
}

TEST(ArgNames, LayersPrefixTheirPartsAndNameTheirOptions) {
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { TransformerDecoderLayer l(Layer(4, 2, 0)); },
                                                {"config.hidden: must be > 0, got 0"}));
  LayerConfig bad_eps = Layer(4, 2, 8);
  bad_eps.eps = 1e40;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { TransformerEncoderLayer l(bad_eps); },
                                                {"config.epsilon: expected a finite number > 0"}));
  TransformerDecoderLayer layer(Layer(4, 2, 8));
  const std::vector<float> w(16, 0.1f), b(4, 0.0f), w1(32, 0.1f), b1(8, 0.0f), g(4, 1.0f);
  const std::vector<float> short_w(15, 0.1f);
  const MhaWeights good{w, w, w, w, b, b, b, b}, bad{short_w, w, w, w, b, b, b, b};
  const FfnWeights ffn{w1, b1, w1, b};
  const NormWeights norm{g, b};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { layer.SetWeights(bad, good, ffn, norm, norm, norm); },
      {"selfAttn.queryWeights: expected 16 values"}));
  layer.SetWeights(good, good, ffn, norm, norm, norm);
  const std::vector<float> x(8, 0.5f), memory(12, 0.5f);
  const std::vector<uint8_t> mask(2, 1);
  DecoderOptions o;
  o.memory_key_padding_mask = mask;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { layer.Forward(Tensor3{x, 1, 2, 4}, Tensor3{memory, 1, 3, 4}, o); },
      {"memoryPadding: expected 3 values"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { layer.Forward(Tensor3{x, 1, 4, 2}, Tensor3{memory, 1, 3, 4}); },
      {"x.features: expected 4 (width), got 2"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { LayerNormForward(Tensor3{x, 1, 2, 4}, {b1, b}, 1e-5, BestKernels(Backend::kHighway),
                             kOther); },
      {"scale: expected 4 values"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { PositionalEncoding(2, 0, kOther); },
                                                {"width: must be > 0, got 0"}));
}

}  // namespace
}  // namespace simd_attention::testing
