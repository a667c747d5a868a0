// The golden encoder_layer, decoder_layer and positional_encoding cases of
// ../shared/golden, on every kernel table (and the layer reference).
#include <gtest/gtest.h>

#include "golden.h"
#include "reference/layers_reference.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

std::span<const float> F(const GoldenCase& c, const std::string& name) {
  return c.Tensor(name).f32;
}

LayerConfig Config(const GoldenCase& c) {
  LayerConfig config;
  config.d_model = c.Config("d_model");
  config.num_heads = c.Config("num_heads");
  config.ffn_dim = c.Config("ffn_dim");
  config.eps = static_cast<float>(c.config.at("layer_norm_eps"));
  config.norm_first = c.config_text.at("norm") == "pre";
  const std::string& act = c.config_text.at("activation");
  config.activation = act == "relu"   ? Activation::kRelu
                      : act == "gelu" ? Activation::kGeluErf
                                      : throw std::runtime_error("activation " + act);
  return config;
}

MhaWeights Attention(const GoldenCase& c, const std::string& prefix) {
  return {F(c, prefix + "w_q"), F(c, prefix + "w_k"), F(c, prefix + "w_v"),
          F(c, prefix + "w_o"), F(c, prefix + "b_q"), F(c, prefix + "b_k"),
          F(c, prefix + "b_v"), F(c, prefix + "b_o")};
}

FfnWeights Ffn(const GoldenCase& c) {
  return {F(c, "ffn_w1"), F(c, "ffn_b1"), F(c, "ffn_w2"), F(c, "ffn_b2")};
}

NormWeights Norm(const GoldenCase& c, int i) {
  const std::string n = "ln" + std::to_string(i);
  return {F(c, n + "_gamma"), F(c, n + "_beta")};
}

Tensor3 Input(const GoldenCase& c, const std::string& name) {
  const GoldenTensor& t = c.Tensor(name);
  return {t.f32, t.shape[0], t.shape[1], t.shape[2]};
}

TEST(GoldenLayers, EncoderLayerReference) {
  for (const std::string& name : GoldenCaseNames("encoder_layer")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    EXPECT_TRUE(AllNear(ReferenceEncoderLayer(Config(c), Attention(c, ""), Ffn(c), Norm(c, 1),
                                              Norm(c, 2), Input(c, "input"), {}),
                        F(c, "output"), c.tolerance));
  }
}

TEST(GoldenLayers, DecoderLayerReference) {
  for (const std::string& name : GoldenCaseNames("decoder_layer")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    EXPECT_TRUE(AllNear(ReferenceDecoderLayer(Config(c), Attention(c, "self_"),
                                              Attention(c, "cross_"), Ffn(c), Norm(c, 1),
                                              Norm(c, 2), Norm(c, 3), Input(c, "input"),
                                              Input(c, "memory"), {}),
                        F(c, "output"), c.tolerance));
  }
}

class GoldenLayersOnTable : public TableTest {};

TEST_P(GoldenLayersOnTable, EncoderLayer) {
  for (const std::string& name : GoldenCaseNames("encoder_layer")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    TransformerEncoderLayer layer(Config(c), table());
    layer.SetWeights(Attention(c, ""), Ffn(c), Norm(c, 1), Norm(c, 2));
    EXPECT_TRUE(AllNear(layer.Forward(Input(c, "input")), F(c, "output"), c.tolerance));
  }
}

TEST_P(GoldenLayersOnTable, DecoderLayer) {
  for (const std::string& name : GoldenCaseNames("decoder_layer")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    TransformerDecoderLayer layer(Config(c), table());
    layer.SetWeights(Attention(c, "self_"), Attention(c, "cross_"), Ffn(c), Norm(c, 1),
                     Norm(c, 2), Norm(c, 3));
    EXPECT_TRUE(AllNear(layer.Forward(Input(c, "input"), Input(c, "memory")), F(c, "output"),
                        c.tolerance));
  }
}

TEST(GoldenLayers, PositionalEncoding) {
  for (const std::string& name : GoldenCaseNames("positional_encoding")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    EXPECT_TRUE(AllNear(PositionalEncoding(c.Config("t"), c.Config("d_model")),
                        F(c, "output"), c.tolerance));
  }
}

INSTANTIATE_ON_EVERY_TABLE(GoldenLayersOnTable);

}  // namespace
}  // namespace simd_attention::testing
