// Embind classes behind TransformerEncoderLayer and TransformerDecoderLayer
// of web/index.js. As in mha_binding.cc, JS has checked types; shapes and values
// are checked by the C++ API, whose messages use the JS names.
#include "layer_binding.h"

#include <emscripten/bind.h>

#include <memory>
#include <string>

#include "glue.h"
#include "held_bytes.h"
#include "js_arg_names.h"
#include "kv_binding.h"
#include "register_class.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention::bindings {
namespace {

struct Norm {
  std::vector<float> gamma, beta;
  explicit Norm(const val& js) : gamma(CopyFloats(js["gamma"])), beta(CopyFloats(js["beta"])) {}
  NormWeights weights() const { return NormWeights{gamma, beta}; }
};

// The config with the heads' count and width and the threads resolved.
val LayerInfo(LayerConfig c, const KernelTable& kernels) {
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  if (c.threads == 0) c.threads = ThreadPool::DefaultThreads();
  return ConfigInfo(c, c.d_model / c.num_heads, kernels);
}

val TensorToJs(const std::vector<float>& data) { return ToFloat32Array(data); }

}  // namespace

JsFfnWeights::JsFfnWeights(const val& js)
    : w1(js["w1"]), b1(CopyFloatsIfGiven(js, "b1")), w2(js["w2"]), b2(CopyFloatsIfGiven(js, "b2")) {}

EncoderLayerBinding::EncoderLayerBinding(const val& config)
    : Owned("TransformerEncoderLayer", &ConfigFromJs<LayerConfig>, config) {}

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
    const JsForwardOptions<EncoderOptions> o(options);
    return TensorToJs(layer.Forward(in.tensor, o.options));
  });
}

DecoderLayerBinding::DecoderLayerBinding(const val& config)
    : Owned("TransformerDecoderLayer", &ConfigFromJs<LayerConfig>, config) {}

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
    const JsForwardOptions<DecoderOptions> o(options);
    return TensorToJs(layer.Forward(in.tensor, m.tensor, o.options));
  });
}

val DecoderLayerBinding::forwardPrecomputed(const val& x, const PrecomputedBinding& memory,
                                            const val& options) {
  return Guard([&] {
    TransformerDecoderLayer& layer = Checked();
    const Input in(x);
    const JsForwardOptions<DecoderOptions> o(options);
    return TensorToJs(layer.Forward(in.tensor, memory.Checked(), o.options));
  });
}

val DecoderLayerBinding::forwardIncremental(const val& x, KVCacheBinding& cache,
                                            const PrecomputedBinding& memory, const val& options) {
  return Guard([&] {
    TransformerDecoderLayer& layer = Checked();
    KVCache& c = cache.Checked();
    const PrecomputedKV& kv = memory.Checked();
    const Input in(x);
    const JsForwardOptions<SelfAttentionOptions> o(options);
    return TensorToJs(layer.ForwardIncremental(in.tensor, c, kv, o.options));
  });
}

val DecoderLayerBinding::createKVCache(KVCacheBinding& into, size_t batch, size_t max_length) {
  return into.Fill([&] { return Checked().self_attention().CreateKVCache(batch, max_length); });
}

val DecoderLayerBinding::precomputeMemory(PrecomputedBinding& into, const val& memory,
                                          const val& mask) {
  return into.Fill(memory, mask, [&](const Tensor3& m, const std::vector<uint8_t>& bytes) {
    return Checked().PrecomputeMemory(m, bytes);
  });
}

EMSCRIPTEN_BINDINGS(simd_attention_layers) {
  RegisterConfiguredClass<EncoderLayerBinding>("EncoderLayerBinding");
  auto decoder = RegisterConfiguredClass<DecoderLayerBinding>("DecoderLayerBinding")
                     .function("precomputeMemory", &DecoderLayerBinding::precomputeMemory);
  RegisterDecoding(decoder);
}

}  // namespace simd_attention::bindings
