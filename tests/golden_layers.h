// The golden encoder_layer and decoder_layer cases read into the layers' API
// types (header-only: the layer tests' shared readers).
#pragma once

#include <span>
#include <stdexcept>
#include <string>

#include "golden.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention::testing {

inline std::span<const float> GoldenF(const GoldenCase& c, const std::string& name) {
  return c.Tensor(name).f32;
}

inline LayerConfig GoldenLayerConfig(const GoldenCase& c) {
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

inline MhaWeights GoldenAttention(const GoldenCase& c, const std::string& prefix) {
  return {GoldenF(c, prefix + "w_q"), GoldenF(c, prefix + "w_k"), GoldenF(c, prefix + "w_v"),
          GoldenF(c, prefix + "w_o"), GoldenF(c, prefix + "b_q"), GoldenF(c, prefix + "b_k"),
          GoldenF(c, prefix + "b_v"), GoldenF(c, prefix + "b_o")};
}

inline FfnWeights GoldenFfn(const GoldenCase& c) {
  return {GoldenF(c, "ffn_w1"), GoldenF(c, "ffn_b1"), GoldenF(c, "ffn_w2"), GoldenF(c, "ffn_b2")};
}

inline NormWeights GoldenNorm(const GoldenCase& c, int i) {
  const std::string n = "ln" + std::to_string(i);
  return {GoldenF(c, n + "_gamma"), GoldenF(c, n + "_beta")};
}

inline Tensor3 GoldenInput(const GoldenCase& c, const std::string& name) {
  const GoldenTensor& t = c.Tensor(name);
  return {t.f32, t.shape[0], t.shape[1], t.shape[2]};
}

}  // namespace simd_attention::testing
