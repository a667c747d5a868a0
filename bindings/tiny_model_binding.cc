// TinyTransformer's glue: its forward on token ids, its weights and
// gradients as { embedding, layers: [{ wQ, ... }], unembedding,
// unembeddingBias } of Float32Arrays. JS has checked types; C++ judges
// sizes and values.
#include "tiny_model_binding.h"

#include <emscripten/bind.h>

#include <string>
#include <utility>
#include <vector>

#include "js_arg_names.h"
#include "register_class.h"
#include "simd_attention/activation.h"

namespace simd_attention::bindings {
namespace {

TinyModelConfig ConfigFromJs(const val& js) {
  TinyModelConfig c;
  c.vocab = SizeOf(js, "vocab");
  c.d_model = SizeOf(js, "dModel");
  c.num_heads = SizeOf(js, "numHeads");
  c.num_layers = SizeOf(js, "numLayers");
  c.max_tokens = SizeOf(js, "maxTokens");
  c.ffn_dim = SizeOf(js, "ffnDim");
  c.activation = ParseActivation(js["activation"].as<std::string>());
  c.seed = static_cast<uint64_t>(js["seed"].as<double>());
  c.backend = ParseBackend(js["backend"].as<std::string>());
  c.names = &JsArgNames();
  return c;
}

// One layer's weight keys: the JS name and the member.
using Member = std::vector<float> TinyLayerWeights::*;
constexpr std::pair<const char*, Member> kLayerKeys[] = {
    {"wQ", &TinyLayerWeights::w_q}, {"wK", &TinyLayerWeights::w_k},
    {"wV", &TinyLayerWeights::w_v}, {"wO", &TinyLayerWeights::w_o},
    {"bQ", &TinyLayerWeights::b_q}, {"bK", &TinyLayerWeights::b_k},
    {"bV", &TinyLayerWeights::b_v}, {"bO", &TinyLayerWeights::b_o},
    {"w1", &TinyLayerWeights::w1},  {"b1", &TinyLayerWeights::b1},
    {"w2", &TinyLayerWeights::w2},  {"b2", &TinyLayerWeights::b2}};

val WeightsToJs(TinyModelWeights&& w) {
  val js = val::object();
  js.set("embedding", ToFloat32Array(w.embedding));
  val layers = val::array();
  for (TinyLayerWeights& l : w.layers) {
    val layer = val::object();
    for (const auto& [name, member] : kLayerKeys) {
      if (!(l.*member).empty()) layer.set(name, ToFloat32Array(l.*member));
    }
    layers.call<void>("push", layer);
  }
  js.set("layers", layers);
  js.set("unembedding", ToFloat32Array(w.unembedding));
  js.set("unembeddingBias", ToFloat32Array(w.unembedding_bias));
  return js;
}

TinyModelWeights WeightsFromJs(const val& js) {
  TinyModelWeights w;
  w.embedding = CopyFloats(js["embedding"]);
  const val layers = js["layers"];
  const size_t n = layers["length"].as<size_t>();
  w.layers.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const val layer = layers[i];
    for (const auto& [name, member] : kLayerKeys) {
      w.layers[i].*member = CopyFloatsIfGiven(layer, name);
    }
  }
  w.unembedding = CopyFloats(js["unembedding"]);
  w.unembedding_bias = CopyFloats(js["unembeddingBias"]);
  return w;
}

}  // namespace

TinyModelBinding::TinyModelBinding(const val& config)
    : Owned("TinyTransformer", [&] { return std::make_unique<TinyTransformer>(ConfigFromJs(config)); }) {}

val TinyModelBinding::info() const {
  return Guard([&] {
    const TinyModelConfig& c = Checked().config();
    val v = val::object();
    v.set("vocab", c.vocab);
    v.set("dModel", c.d_model);
    v.set("numHeads", c.num_heads);
    v.set("numLayers", c.num_layers);
    v.set("maxTokens", c.max_tokens);
    v.set("ffnDim", c.ffn_dim);
    v.set("activation", std::string(ActivationName(c.activation)));
    v.set("seed", static_cast<double>(c.seed));
    v.set("backend", std::string(BackendName(*c.backend)));
    v.set("kernels", std::string(DescribeKernels(Checked().kernels()).name));
    return v;
  });
}

val TinyModelBinding::forward(const val& tokens, const val& targets, size_t batch,
                              size_t tokens_per_row, bool training, bool need_weights) {
  return Guard([&] {
    const std::vector<int32_t> ids = CopyInts(tokens);
    std::vector<int32_t> scored = Given(targets) ? CopyInts(targets) : std::vector<int32_t>{};
    if (!Given(targets)) scored.assign(ids.size(), -1);
    TinyModelResult r = Checked().Forward(ids, scored, batch, tokens_per_row,
                                          {.training = training, .need_weights = need_weights});
    val out = val::object();
    out.set("loss", r.loss);
    out.set("accuracy", r.accuracy);
    out.set("counted", r.counted);
    out.set("logits", ToFloat32Array(r.logits));
    if (need_weights) {
      val layers = val::array();
      for (const std::vector<float>& w : r.attn_weights) layers.call<void>("push", ToFloat32Array(w));
      out.set("attnWeights", layers);
    }
    return out;
  });
}

val TinyModelBinding::backward() {
  return Guard([&] { Checked().Backward(); });
}

val TinyModelBinding::reset(double seed) {
  return Guard([&] { Checked().Reset(static_cast<uint64_t>(seed)); });
}

val TinyModelBinding::weights() const {
  return Guard([&] { return WeightsToJs(Checked().Weights()); });
}

val TinyModelBinding::setWeights(const val& weights) {
  return Guard([&] { Checked().SetWeights(WeightsFromJs(weights)); });
}

val TinyModelBinding::gradients() const {
  return Guard([&] { return WeightsToJs(Checked().Gradients()); });
}

EMSCRIPTEN_BINDINGS(simd_attention_tiny_model) {
  RegisterConfiguredClass<TinyModelBinding>("TinyModelBinding")
      .function("backward", &TinyModelBinding::backward)
      .function("reset", &TinyModelBinding::reset)
      .function("weights", &TinyModelBinding::weights)
      .function("gradients", &TinyModelBinding::gradients);
}

}  // namespace simd_attention::bindings
