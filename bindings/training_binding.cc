// The training module's glue (bindings/training.cmake; TinyTransformer's is
// tiny_model_binding.cc): the backward passes of MultiHeadAttention, the
// layers, TransformerBlock and TransformerStack, and the optimizers, as functions of
// the bindings they act on (Embind registers a class's members once, in its
// own file; these exist in the training module only). As everywhere in
// bindings/, JS has checked types, and the C++ API checks shapes and values.
#include <emscripten/bind.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "block_binding.h"
#include "glue.h"
#include "js_arg_names.h"
#include "layer_binding.h"
#include "mha_binding.h"
#include "simd_attention/optimizers.h"
#include "tiny_model_binding.h"

namespace simd_attention::bindings {
namespace {

// A weight gradient as a fresh Float32Array; `from` is freed.
void SetGradient(val& js, const char* name, std::vector<float>& from) {
  js.set(name, ToFloat32Array(from));
  FreeFloats(from);
}

// A group of weight gradients as one object, named as setWeights names the
// weights; an empty one (a bias the object lacks, QK-norm's scales without
// config.qkNorm, an RMSNorm's beta) is left out.
val GradientGroup(std::initializer_list<std::pair<const char*, std::vector<float>*>> named) {
  val js = val::object();
  for (const auto& [name, gradient] : named) {
    if (!gradient->empty()) SetGradient(js, name, *gradient);
  }
  return js;
}

val AttentionWeightGradients(MhaGradients& g) {
  return GradientGroup({{"dWQ", &g.d_w_q}, {"dWK", &g.d_w_k}, {"dWV", &g.d_w_v},
                        {"dWO", &g.d_w_o}, {"dBQ", &g.d_b_q}, {"dBK", &g.d_b_k},
                        {"dBV", &g.d_b_v}, {"dBO", &g.d_b_o}, {"dQNorm", &g.d_q_norm},
                        {"dKNorm", &g.d_k_norm}});
}

val FfnWeightGradients(FfnGradients& g) {
  return GradientGroup({{"dW1", &g.d_w1}, {"dB1", &g.d_b1}, {"dW2", &g.d_w2}, {"dB2", &g.d_b2}});
}

val NormWeightGradients(NormGradients& g) {
  return GradientGroup({{"dGamma", &g.d_gamma}, {"dBeta", &g.d_beta}});
}

val GatedFfnWeightGradients(GatedFfnGradients& g) {
  return GradientGroup({{"dWGate", &g.d_w_gate}, {"dWUp", &g.d_w_up}, {"dWDown", &g.d_w_down},
                        {"dBGate", &g.d_b_gate}, {"dBUp", &g.d_b_up},
                        {"dBDown", &g.d_b_down}});
}

// d_output {data, batch, tokens, features}: Backward checks its shape and
// length against the training forward's output.
val MhaBackward(MhaBinding& binding, const val& d_output) {
  return Guard([&] {
    const Input d(d_output);
    MhaGradients g = binding.Checked().Backward(d.tensor);
    val js = AttentionWeightGradients(g);
    SetGradient(js, "dQuery", g.d_query);
    SetGradient(js, "dKey", g.d_key);
    SetGradient(js, "dValue", g.d_value);
    if (!g.d_input.empty()) SetGradient(js, "dInput", g.d_input);
    return js;
  });
}

// A layer's, block's or stack's backward: d_output read, the object's
// Backward run (it checks d_output against the training forward's output),
// and {dInput, ...} with the rest of its gradients written by
// `fill(object, gradients, js)`.
template <class Binding, class Fill>
val BackwardToJs(Binding& binding, const val& d_output, const Fill& fill) {
  return Guard([&] {
    const Input d(d_output);
    auto& object = binding.Checked();
    auto g = object.Backward(d.tensor);
    val js = val::object();
    SetGradient(js, "dInput", g.d_input);
    fill(object, g, js);
    return js;
  });
}

val EncoderBackward(EncoderLayerBinding& binding, const val& d_output) {
  return BackwardToJs(binding, d_output, [](auto&, EncoderGradients& g, val& js) {
    js.set("attention", AttentionWeightGradients(g.attention));
    js.set("ffn", FfnWeightGradients(g.ffn));
    js.set("norm1", NormWeightGradients(g.norm1));
    js.set("norm2", NormWeightGradients(g.norm2));
  });
}

val DecoderBackward(DecoderLayerBinding& binding, const val& d_output) {
  return BackwardToJs(binding, d_output, [](auto&, DecoderGradients& g, val& js) {
    SetGradient(js, "dMemory", g.d_memory);
    js.set("selfAttention", AttentionWeightGradients(g.self_attention));
    js.set("crossAttention", AttentionWeightGradients(g.cross_attention));
    js.set("ffn", FfnWeightGradients(g.ffn));
    js.set("norm1", NormWeightGradients(g.norm1));
    js.set("norm2", NormWeightGradients(g.norm2));
    js.set("norm3", NormWeightGradients(g.norm3));
  });
}

// [{norm, outputNorm?, attention? | ffn? | gatedFfn? | moe?}]: a block's
// sublayers' gradients named as setWeights' groups, each sublayer's mixer's
// alone.
val SublayerGradientsToJs(const BlockConfig& block, std::vector<SublayerGradients>& g) {
  val sublayers = val::array();
  for (size_t i = 0; i < g.size(); ++i) {
    const Sublayer& config = block.sublayers[i];
    SublayerGradients& s = g[i];
    val entry = val::object();
    entry.set("norm", NormWeightGradients(s.norm));
    if (config.norm == NormPlacement::kSandwich) {
      entry.set("outputNorm", NormWeightGradients(s.output_norm));
    }
    switch (config.mixer) {
      case MixerKind::kSelfAttention:
      case MixerKind::kCrossAttention:
        entry.set("attention", AttentionWeightGradients(s.attention));
        break;
      case MixerKind::kFeedForward:
        entry.set("ffn", FfnWeightGradients(s.ffn));
        break;
      case MixerKind::kGatedFeedForward:
        entry.set("gatedFfn", GatedFfnWeightGradients(s.gated_ffn));
        break;
      case MixerKind::kMixtureOfExperts: {
        val moe = GradientGroup({{"dRouter", &s.moe.d_router}});
        val experts = val::array();
        for (GatedFfnGradients& e : s.moe.experts) {
          experts.call<void>("push", GatedFfnWeightGradients(e));
        }
        moe.set("experts", experts);
        entry.set("moe", moe);
        break;
      }
    }
    sublayers.call<void>("push", entry);
  }
  return sublayers;
}

// {dInput, dMemory?, sublayers}
val BlockBackward(BlockBinding& binding, const val& d_output) {
  return BackwardToJs(binding, d_output, [](TransformerBlock& block, BlockGradients& g, val& js) {
    if (!g.d_memory.empty()) SetGradient(js, "dMemory", g.d_memory);
    js.set("sublayers", SublayerGradientsToJs(block.config(), g.sublayers));
  });
}

// {dInput, layers: [{sublayers}], finalNorm?}: grouped as setWeights'
// weights.
val StackBackward(StackBinding& binding, const val& d_output) {
  return BackwardToJs(binding, d_output, [](TransformerStack& stack, StackGradients& g,
                                            val& js) {
    val layers = val::array();
    for (std::vector<SublayerGradients>& layer : g.layers) {
      val entry = val::object();
      entry.set("sublayers", SublayerGradientsToJs(stack.config().block, layer));
      layers.call<void>("push", entry);
    }
    js.set("layers", layers);
    if (stack.config().final_norm) js.set("finalNorm", NormWeightGradients(g.final_norm));
  });
}

// The optimizers' options as JS names them, in the order options() lists
// them: the learning rate, each optimizer's own, the weight decay and how
// it applies.
template <class Options, class Visit>
  requires requires(Options& o) { o.lr; o.weight_decay; }
void VisitFields(Options& o, const Visit& visit) {
  visit("lr", o.lr);
  if constexpr (requires { o.momentum; }) visit("momentum", o.momentum);
  if constexpr (requires { o.beta1; }) {
    visit("beta1", o.beta1);
    visit("beta2", o.beta2);
    visit("eps", o.eps);
  }
  visit("weightDecay", o.weight_decay);
  if constexpr (requires { o.nesterov; }) visit("nesterov", o.nesterov);
  if constexpr (requires { o.decoupled_weight_decay; }) {
    visit("decoupledWeightDecay", o.decoupled_weight_decay);
  }
}

// The options JS gave over the C++ defaults, and the optimizer made from them.
template <class Made, class Options>
std::unique_ptr<Optimizer> Make(const val& js) {
  Options options;
  VisitFields(options, GivenFields(js));
  options.names = &JsArgNames();
  return std::make_unique<Made>(options);
}

}  // namespace

// SGD or Adam (kind 'sgd' or 'adam', from the JS class; the options JS was
// given, types checked, judged by the C++ constructors over the C++
// defaults). options(): those it steps with, every field set.
// step*(target, fresh): fresh is true at the first step the JS optimizer
// takes on that JS object, so state left at the same address by a disposed
// object is forgotten first (the C++ optimizer keys its moments by address).
class OptimizerBinding : public Owned<Optimizer> {
 public:
  OptimizerBinding(const std::string& kind, const val& js)
      : Owned("Optimizer", [&] {
          return kind == "sgd" ? Make<Sgd, SgdOptions>(js) : Make<Adam, AdamOptions>(js);
        }),
        sgd_(kind == "sgd") {}

  val options() {
    return Guard([&] {
      val js = val::object();
      if (sgd_) {
        SgdOptions o = static_cast<const Sgd&>(Checked()).options();
        VisitFields(o, FieldsToJs(js));
      } else {
        AdamOptions o = static_cast<const Adam&>(Checked()).options();
        VisitFields(o, FieldsToJs(js));
      }
      return js;
    });
  }

  template <class Binding>
  val Step(Binding& target, bool fresh) {
    return Guard([&] {
      Optimizer& o = Checked();
      auto& object = target.Checked();
      if (fresh) o.Forget(object);
      o.Step(object);
    });
  }

 private:
  bool sgd_;
};

EMSCRIPTEN_BINDINGS(simd_attention_training) {
  emscripten::function("mhaBackward", &MhaBackward);
  emscripten::function("encoderBackward", &EncoderBackward);
  emscripten::function("decoderBackward", &DecoderBackward);
  emscripten::function("blockBackward", &BlockBackward);
  emscripten::function("stackBackward", &StackBackward);
  emscripten::class_<OptimizerBinding>("OptimizerBinding")
      .constructor<const std::string&, const val&>()
      .function("takeError", &TakeError<OptimizerBinding>)
      .function("options", &OptimizerBinding::options)
      .function("stepAttention", &OptimizerBinding::Step<MhaBinding>)
      .function("stepEncoder", &OptimizerBinding::Step<EncoderLayerBinding>)
      .function("stepDecoder", &OptimizerBinding::Step<DecoderLayerBinding>)
      .function("stepBlock", &OptimizerBinding::Step<BlockBinding>)
      .function("stepStack", &OptimizerBinding::Step<StackBinding>)
      .function("stepTinyModel", &OptimizerBinding::Step<TinyModelBinding>);
}

}  // namespace simd_attention::bindings
