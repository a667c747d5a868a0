// Embind classes behind TransformerEncoderLayer and TransformerDecoderLayer
// of web/index.js, and the module functions positionalEncoding and
// layerNorm. As in mha_binding.cc, JS has checked types; shapes and values
// are checked by the C++ API, whose messages use the JS names.
#include "layer_binding.h"

#include <emscripten/bind.h>

#include <memory>
#include <string>

#include "glue.h"
#include "held_bytes.h"
#include "js_arg_names.h"
#include "kv_binding.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_layers.h"
#include "training/training_module.h"

namespace simd_attention::bindings {
namespace {

// LayerConfig's fields as JS names them (config of the layers).
template <class Visit>
void VisitFields(LayerConfig& c, const Visit& visit) {
  VisitSharedFields(c, visit);
  visit("ffnDim", c.ffn_dim);
  visit("normFirst", c.norm_first);
  visit("activation", c.activation);
  visit("eps", c.eps);
}

// The keys JS gave; the others keep LayerConfig's defaults.
LayerConfig LayerConfigFromJs(const val& js) {
  LayerConfig c;
  VisitFields(c, GivenFields(js));
  c.names = &JsArgNames();
  return c;
}

struct Norm {
  std::vector<float> gamma, beta;
  explicit Norm(const val& js) : gamma(CopyFloats(js["gamma"])), beta(CopyFloats(js["beta"])) {}
  NormWeights weights() const { return NormWeights{gamma, beta}; }
};

val LayerInfo(const LayerConfig& c, const KernelTable& kernels) {
  val v = SharedInfo{c.d_model, c.num_heads, c.num_kv_heads == 0 ? c.num_heads : c.num_kv_heads,
                     c.d_model / c.num_heads,
                     c.threads == 0 ? ThreadPool::DefaultThreads() : c.threads, c.rope,
                     c.weights, c.cache_type, kernels}
              .ToJs();
  v.set("ffnDim", c.ffn_dim);
  v.set("normFirst", c.norm_first);
  v.set("activation", std::string(ActivationName(c.activation)));
  v.set("eps", c.eps);
  return v;
}

val TensorToJs(const std::vector<float>& data) { return ToFloat32Array(data); }

}  // namespace

JsFfnWeights::JsFfnWeights(const val& js)
    : w1(js["w1"]), b1(CopyFloatsIfGiven(js, "b1")), w2(js["w2"]), b2(CopyFloatsIfGiven(js, "b2")) {}

EncoderLayerBinding::EncoderLayerBinding(const val& config)
    : Owned("TransformerEncoderLayer",
            [&] { return std::make_unique<TransformerEncoderLayer>(LayerConfigFromJs(config)); }) {}

val EncoderLayerBinding::info() {
  return Guard([&] {
    const LayerConfig& c = Checked().config();
    return LayerInfo(c, BestKernels(c.backend));
  });
}

val EncoderLayerBinding::setWeights(const val& w) {
  return Guard([&] {
    TransformerEncoderLayer& layer = Checked();
    const JsMhaWeights attention(w["attention"]);
    const JsFfnWeights ffn(w["ffn"]);
    const Norm norm1(w["norm1"]), norm2(w["norm2"]);
    layer.SetWeights(attention.weights, ffn.weights(), norm1.weights(), norm2.weights());
    weight_bytes_.Set(layer.config().weights, layer.WeightBytes());
  });
}

val EncoderLayerBinding::forward(const val& x, const val& options) {
  return Guard([&] {
    TransformerEncoderLayer& layer = Checked();
    const Input in(x);
    const JsAttentionOptions shared(options);
    EncoderOptions o;
    ReadCausal(options["causal"], o.causal, o.causal_alignment);
    o.training = options["training"].as<bool>();
    o.key_padding_mask = shared.key_padding_mask;
    shared.SetOn(o.self_attention);
    return TensorToJs(layer.Forward(in.tensor, o));
  });
}

DecoderLayerBinding::DecoderLayerBinding(const val& config)
    : Owned("TransformerDecoderLayer",
            [&] { return std::make_unique<TransformerDecoderLayer>(LayerConfigFromJs(config)); }) {}

val DecoderLayerBinding::info() {
  return Guard([&] {
    TransformerDecoderLayer& layer = Checked();
    return LayerInfo(layer.config(), layer.self_attention().kernels());
  });
}

val DecoderLayerBinding::setWeights(const val& w) {
  return Guard([&] {
    TransformerDecoderLayer& layer = Checked();
    const JsMhaWeights self(w["selfAttention"]), cross(w["crossAttention"]);
    const JsFfnWeights ffn(w["ffn"]);
    const Norm norm1(w["norm1"]), norm2(w["norm2"]), norm3(w["norm3"]);
    layer.SetWeights(self.weights, cross.weights, ffn.weights(), norm1.weights(), norm2.weights(),
                     norm3.weights());
    weight_bytes_.Set(layer.config().weights, layer.WeightBytes());
  });
}

val DecoderLayerBinding::forward(const val& x, const val& memory, const val& options) {
  return Guard([&] {
    TransformerDecoderLayer& layer = Checked();
    const Input in(x), m(memory);
    Masks masks(options);
    return TensorToJs(layer.Forward(in.tensor, m.tensor, masks.options));
  });
}

val DecoderLayerBinding::forwardPrecomputed(const val& x, const PrecomputedBinding& memory,
                                            const val& options) {
  return Guard([&] {
    TransformerDecoderLayer& layer = Checked();
    const Input in(x);
    Masks masks(options);
    return TensorToJs(layer.Forward(in.tensor, memory.Checked(), masks.options));
  });
}

val DecoderLayerBinding::forwardIncremental(const val& x, KVCacheBinding& cache,
                                            const PrecomputedBinding& memory, const val& options) {
  return Guard([&] {
    TransformerDecoderLayer& layer = Checked();
    KVCache& c = cache.Checked();
    const PrecomputedKV& kv = memory.Checked();
    const Input in(x);
    const JsAttentionOptions shared(options);
    SelfAttentionOptions self;
    shared.SetOn(self);
    return TensorToJs(layer.ForwardIncremental(in.tensor, c, kv, self));
  });
}

val DecoderLayerBinding::createKVCache(KVCacheBinding& into, size_t batch, size_t max_length) {
  return Guard([&] {
    into.cache.emplace(Checked().self_attention().CreateKVCache(batch, max_length));
    into.Count();
  });
}

val DecoderLayerBinding::precomputeMemory(PrecomputedBinding& into, const val& memory,
                                          const val& mask) {
  return Guard([&] {
    TransformerDecoderLayer& layer = Checked();
    const Input m(memory);
    const std::vector<uint8_t> bytes = Given(mask) ? CopyBytes(mask) : std::vector<uint8_t>{};
    into.kv.emplace(layer.PrecomputeMemory(m.tensor, bytes));
    into.Count();
  });
}

namespace {

val PositionalEncodingJs(size_t t, size_t d_model) {
  return Guard([&] { return ToFloat32Array(PositionalEncoding(t, d_model, JsArgNames())); });
}

// x {data, batch, tokens, features}; options {gamma, beta, eps, backend}.
val LayerNormJs(const val& x, const val& options) {
  return Guard([&] {
    const Input in(x);
    const std::vector<float> gamma = CopyFloats(options["gamma"]);
    const std::vector<float> beta = CopyFloats(options["beta"]);
    const KernelTable& kernels = BestKernels(ParseBackend(options["backend"].as<std::string>()));
    return ToFloat32Array(LayerNormForward(in.tensor, NormWeights{gamma, beta},
                                           options["eps"].as<double>(), kernels, JsArgNames()));
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(simd_attention_layers) {
  emscripten::class_<EncoderLayerBinding>("EncoderLayerBinding")
      .constructor<const val&>()
      .function("takeError", &TakeError<EncoderLayerBinding>)
      .function("info", &EncoderLayerBinding::info)
      .function("setWeights", &EncoderLayerBinding::setWeights)
      .function("forward", &EncoderLayerBinding::forward);
  auto decoder = emscripten::class_<DecoderLayerBinding>("DecoderLayerBinding")
                     .constructor<const val&>()
                     .function("takeError", &TakeError<DecoderLayerBinding>)
                     .function("info", &DecoderLayerBinding::info)
                     .function("setWeights", &DecoderLayerBinding::setWeights)
                     .function("forward", &DecoderLayerBinding::forward)
                     .function("createKVCache", &DecoderLayerBinding::createKVCache)
                     .function("precomputeMemory", &DecoderLayerBinding::precomputeMemory);
  // As MultiHeadAttention's (mha_binding.cc).
  if constexpr (!kTrainingModule) {
    decoder.function("forwardPrecomputed", &DecoderLayerBinding::forwardPrecomputed)
        .function("forwardIncremental", &DecoderLayerBinding::forwardIncremental);
  }
  emscripten::function("positionalEncoding", &PositionalEncodingJs);
  emscripten::function("layerNorm", &LayerNormJs);
}

}  // namespace simd_attention::bindings
