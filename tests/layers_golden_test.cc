// The golden encoder_layer, decoder_layer and positional_encoding cases of
// ../shared/golden, on every kernel table (and the layer reference).
#include <gtest/gtest.h>

#include "golden.h"
#include "golden_layers.h"
#include "reference/layers_reference.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

TEST(GoldenLayers, EncoderLayerReference) {
  for (const std::string& name : GoldenCaseNames("encoder_layer")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    EXPECT_TRUE(AllNear(ReferenceEncoderLayer(GoldenLayerConfig(c), GoldenAttention(c, ""), GoldenFfn(c), GoldenNorm(c, 1),
                                              GoldenNorm(c, 2), GoldenInput(c, "input"), {}),
                        GoldenF(c, "output"), c.tolerance));
  }
}

TEST(GoldenLayers, DecoderLayerReference) {
  for (const std::string& name : GoldenCaseNames("decoder_layer")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    EXPECT_TRUE(AllNear(ReferenceDecoderLayer(GoldenLayerConfig(c), GoldenAttention(c, "self_"),
                                              GoldenAttention(c, "cross_"), GoldenFfn(c), GoldenNorm(c, 1),
                                              GoldenNorm(c, 2), GoldenNorm(c, 3), GoldenInput(c, "input"),
                                              GoldenInput(c, "memory"), {}),
                        GoldenF(c, "output"), c.tolerance));
  }
}

class GoldenLayersOnTable : public TableTest {};

TEST_P(GoldenLayersOnTable, EncoderLayer) {
  for (const std::string& name : GoldenCaseNames("encoder_layer")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    TransformerEncoderLayer layer(GoldenLayerConfig(c), table());
    layer.SetWeights(GoldenAttention(c, ""), GoldenFfn(c), GoldenNorm(c, 1), GoldenNorm(c, 2));
    EXPECT_TRUE(AllNear(layer.Forward(GoldenInput(c, "input")), GoldenF(c, "output"), c.tolerance));
  }
}

TEST_P(GoldenLayersOnTable, DecoderLayer) {
  for (const std::string& name : GoldenCaseNames("decoder_layer")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    TransformerDecoderLayer layer(GoldenLayerConfig(c), table());
    layer.SetWeights(GoldenAttention(c, "self_"), GoldenAttention(c, "cross_"), GoldenFfn(c), GoldenNorm(c, 1),
                     GoldenNorm(c, 2), GoldenNorm(c, 3));
    EXPECT_TRUE(AllNear(layer.Forward(GoldenInput(c, "input"), GoldenInput(c, "memory")), GoldenF(c, "output"),
                        c.tolerance));
  }
}

TEST(GoldenLayers, PositionalEncoding) {
  for (const std::string& name : GoldenCaseNames("positional_encoding")) {
    SCOPED_TRACE(name);
    const GoldenCase c = LoadGoldenCase(name);
    EXPECT_TRUE(AllNear(PositionalEncoding(c.Config("t"), c.Config("d_model")),
                        GoldenF(c, "output"), c.tolerance));
  }
}

INSTANTIATE_ON_EVERY_TABLE(GoldenLayersOnTable);

}  // namespace
}  // namespace simd_attention::testing
