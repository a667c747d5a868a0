// Embind classes behind TransformerBlock and TransformerStack of
// web/index.js. As in layer_binding.cc, JS has checked types; shapes and
// values are checked by the C++ API, whose messages use the JS names.
#include <emscripten/bind.h>

#include <memory>
#include <string>
#include <vector>

#include "block_binding.h"
#include "checks/validate.h"
#include "glue.h"
#include "held_bytes.h"
#include "js_arg_names.h"
#include "kv_binding.h"
#include "layer_binding.h"
#include "register_class.h"
#include "simd_attention/transformer_block.h"
#include "training/training_module.h"

namespace simd_attention::bindings {
namespace {

// config.sublayers: [{mixer, norm?, parallel?}], names judged here.
std::vector<Sublayer> SublayersFromJs(const val& js) {
  std::vector<Sublayer> out(js["length"].as<size_t>());
  for (size_t i = 0; i < out.size(); ++i) {
    const val s = js[i];
    const std::string at = "config.sublayers[" + std::to_string(i) + "]";
    const std::string mixer = s["mixer"].as<std::string>();
    const MixerKindTraits* m = RowNamed(kMixerKinds, mixer);
    if (m == nullptr) {
      static constexpr ChoiceList kChoices = ChoicesOf(kMixerKinds, &MixerKindTraits::name, true);
      throw std::invalid_argument(Cat({at, ".mixer: expected ", kChoices.view(), ", got '",
                                       mixer, "'"}));
    }
    out[i].mixer = m->value;
    if (Given(s["norm"])) {
      const std::string norm = s["norm"].as<std::string>();
      const NormPlacementTraits* p = RowNamed(kNormPlacements, norm);
      if (p == nullptr) {
        static constexpr ChoiceList kChoices =
            ChoicesOf(kNormPlacements, &NormPlacementTraits::name, true);
        throw std::invalid_argument(Cat({at, ".norm: expected ", kChoices.view(), ", got '",
                                         norm, "'"}));
      }
      out[i].norm = p->value;
    }
    ReadField(s, "parallel", out[i].parallel);
  }
  return out;
}

BlockConfig BlockConfigFromJs(const val& js) {
  BlockConfig c = ConfigFromJs<BlockConfig>(js);
  c.sublayers = SublayersFromJs(js["sublayers"]);
  return c;
}

StackConfig StackConfigFromJs(const val& js) {
  StackConfig s;
  s.block = BlockConfigFromJs(js);
  ReadField(js, "numLayers", s.num_layers);
  ReadField(js, "finalNorm", s.final_norm);
  const val windows = js["layerWindows"];
  if (Given(windows)) {
    for (size_t i = 0; i < windows["length"].as<size_t>(); ++i) {
      const std::vector<double> w =
          Integers("config.layerWindows[" + std::to_string(i) + "]", windows[i],
                   -9007199254740991.0);
      s.layer_windows.push_back({static_cast<int64_t>(w[0]), static_cast<int64_t>(w[1])});
    }
  }
  return s;
}

// The kernels of c.backend, as the block's.
val BlockInfo(const BlockConfig& c) {
  val v = ConfigInfo(c, c.head_dim, BestKernels(c.backend));
  val sublayers = val::array();
  for (const Sublayer& s : c.sublayers) {
    val entry = val::object();
    const InfoFields fields(entry, c.head_dim);
    fields("mixer", Traits(s.mixer).name);
    fields("norm", Traits(s.norm).name);
    fields("parallel", s.parallel);
    sublayers.call<void>("push", entry);
  }
  v.set("sublayers", sublayers);
  return v;
}

// A gated FFN's weights from JS ({wGate, wUp, wDown, bGate?, bUp?,
// bDown?}), copied; `weights` views the copies.
struct JsGatedFfnWeights {
  JsMatrix gate, up, down;
  std::vector<float> b_gate, b_up, b_down;
  GatedFfnWeights weights;

  explicit JsGatedFfnWeights(const val& g)
      : gate(g["wGate"]),
        up(g["wUp"]),
        down(g["wDown"]),
        b_gate(CopyFloatsIfGiven(g, "bGate")),
        b_up(CopyFloatsIfGiven(g, "bUp")),
        b_down(CopyFloatsIfGiven(g, "bDown")),
        weights{gate.floats, up.floats, down.floats, b_gate, b_up, b_down,
                gate.stored(), up.stored(), down.stored()} {}
};

// One sublayer's weights from JS ({norm: {gamma, beta?}, outputNorm?,
// attention?, ffn?, gatedFfn?, moe?: {router, experts}}), copied; `weights`
// views the copies.
struct JsSublayerWeights {
  std::vector<float> gamma, beta, out_gamma, out_beta, router;
  std::unique_ptr<JsMhaWeights> attention;
  std::unique_ptr<JsFfnWeights> ffn;
  std::unique_ptr<JsGatedFfnWeights> gated_ffn;
  std::vector<std::unique_ptr<JsGatedFfnWeights>> experts;
  std::vector<GatedFfnWeights> expert_views;
  SublayerWeights weights;

  explicit JsSublayerWeights(const val& js) {
    if (Given(js["norm"])) {  // none for norm 'none'
      gamma = CopyFloatsIfGiven(js["norm"], "gamma");
      beta = CopyFloatsIfGiven(js["norm"], "beta");
      weights.norm = {gamma, beta};
    }
    if (Given(js["outputNorm"])) {
      out_gamma = CopyFloatsIfGiven(js["outputNorm"], "gamma");
      out_beta = CopyFloatsIfGiven(js["outputNorm"], "beta");
      weights.output_norm = {out_gamma, out_beta};
    }
    if (Given(js["attention"])) {
      attention = std::make_unique<JsMhaWeights>(js["attention"]);
      weights.attention = attention->weights;
    }
    if (Given(js["ffn"])) {
      ffn = std::make_unique<JsFfnWeights>(js["ffn"]);
      weights.ffn = ffn->weights();
    }
    if (Given(js["gatedFfn"])) {
      gated_ffn = std::make_unique<JsGatedFfnWeights>(js["gatedFfn"]);
      weights.gated_ffn = gated_ffn->weights;
    }
    if (Given(js["moe"])) {
      const val m = js["moe"];
      router = CopyFloatsIfGiven(m, "router");
      const val list = m["experts"];
      for (size_t e = 0; Given(list) && e < list["length"].as<size_t>(); ++e) {
        experts.push_back(std::make_unique<JsGatedFfnWeights>(list[e]));
        expert_views.push_back(experts.back()->weights);
      }
      weights.moe = {router, expert_views};
    }
  }
};

// A layer's sublayers' weights (JS: {sublayers: [...]}), copied into
// `owned` (one list for every layer of a stack); their views.
std::vector<SublayerWeights> BlockWeightsFromJs(
    const val& js, std::vector<std::unique_ptr<JsSublayerWeights>>& owned) {
  const val list = js["sublayers"];
  std::vector<SublayerWeights> views(list["length"].as<size_t>());
  for (size_t i = 0; i < views.size(); ++i) {
    owned.push_back(std::make_unique<JsSublayerWeights>(list[i]));
    views[i] = owned.back()->weights;
  }
  return views;
}

}  // namespace

BlockBinding::BlockBinding(const val& config)
    : Owned("TransformerBlock", &BlockConfigFromJs, config) {}

val BlockBinding::info() {
  return Guard([&] { return BlockInfo(Checked().config()); });
}

val BlockBinding::setWeights(const val& w) {
  return Guard([&] {
    TransformerBlock& b = Checked();
    std::vector<std::unique_ptr<JsSublayerWeights>> owned;
    b.SetWeights(BlockWeightsFromJs(w, owned));
    weight_bytes_.Set(b.config().weights, b.WeightBytes());
  });
}

val BlockBinding::forward(const val& x, const val& memory, const val& options) {
  return Guard([&] {
    TransformerBlock& b = Checked();
    const Input in(x);
    const JsForwardOptions<BlockOptions> o(options);
    if (!Given(memory)) return ToFloat32Array(b.Forward(in.tensor, o.options));
    const Input m(memory);
    return ToFloat32Array(b.Forward(in.tensor, m.tensor, o.options));
  });
}

val BlockBinding::createKVCache(KVCacheBinding& into, size_t batch, size_t max_length) {
  return into.Fill([&] { return Checked().CreateKVCache(batch, max_length); });
}

val BlockBinding::forwardIncremental(const val& x, KVCacheBinding& cache, const val& options) {
  return Guard([&] {
    TransformerBlock& b = Checked();
    KVCache& c = cache.Checked();
    const Input in(x);
    const JsForwardOptions<SelfAttentionOptions> o(options);
    return ToFloat32Array(b.ForwardIncremental(in.tensor, c, o.options));
  });
}

StackBinding::StackBinding(const val& config)
    : Owned("TransformerStack", &StackConfigFromJs, config) {}

val StackBinding::info() {
  return Guard([&] {
    TransformerStack& s = Checked();
    val v = BlockInfo(s.config().block);
    const InfoFields fields(v, s.config().block.head_dim);
    fields("numLayers", s.config().num_layers);
    fields("finalNorm", s.config().final_norm);
    if (!s.config().layer_windows.empty()) {
      val windows = val::array();
      for (const auto& w : s.config().layer_windows) {
        val pair = val::array();
        pair.call<void>("push", double(w[0]));
        pair.call<void>("push", double(w[1]));
        windows.call<void>("push", pair);
      }
      v.set("layerWindows", windows);
    }
    return v;
  });
}

val StackBinding::setWeights(const val& w) {
  return Guard([&] {
    TransformerStack& s = Checked();
    const val layers = w["layers"];
    std::vector<std::unique_ptr<JsSublayerWeights>> owned;
    std::vector<std::vector<SublayerWeights>> views(layers["length"].as<size_t>());
    for (size_t i = 0; i < views.size(); ++i) views[i] = BlockWeightsFromJs(layers[i], owned);
    std::vector<float> gamma, beta;
    if (Given(w["finalNorm"])) {
      gamma = CopyFloatsIfGiven(w["finalNorm"], "gamma");
      beta = CopyFloatsIfGiven(w["finalNorm"], "beta");
    }
    s.SetWeights(views, NormWeights{gamma, beta});
    weight_bytes_.Set(s.config().block.weights, s.WeightBytes());
  });
}

val StackBinding::forward(const val& x, const val& options) {
  return Guard([&] {
    const Input in(x);
    const JsForwardOptions<BlockOptions> o(options);
    return ToFloat32Array(Checked().Forward(in.tensor, o.options));
  });
}

val StackBinding::createKVCaches(const val& into, size_t batch, size_t max_length) {
  return Guard([&] {
    std::vector<KVCache> caches = Checked().CreateKVCaches(batch, max_length);
    for (size_t i = 0; i < caches.size(); ++i) {
      KVCacheBinding* b = into[i].as<KVCacheBinding*>(emscripten::allow_raw_pointers());
      b->cache.emplace(std::move(caches[i]));
      b->Count();
    }
  });
}

val StackBinding::forwardIncremental(const val& x, const val& caches, const val& options) {
  return Guard([&] {
    TransformerStack& s = Checked();
    std::vector<KVCache*> each;
    for (size_t i = 0; i < caches["length"].as<size_t>(); ++i) {
      each.push_back(&caches[i].as<KVCacheBinding*>(emscripten::allow_raw_pointers())->Checked());
    }
    const Input in(x);
    const JsForwardOptions<SelfAttentionOptions> o(options);
    return ToFloat32Array(s.ForwardIncremental(in.tensor, std::span<KVCache* const>(each),
                                               o.options));
  });
}

EMSCRIPTEN_BINDINGS(simd_attention_blocks) {
  auto block = RegisterConfiguredClass<BlockBinding>("BlockBinding");
  block.function("createKVCache", &BlockBinding::createKVCache);
  auto stack = RegisterConfiguredClass<StackBinding>("StackBinding");
  stack.function("createKVCaches", &StackBinding::createKVCaches);
  // The training module makes no KV caches (createKVCache and
  // createKVCaches refuse there), so no call reaches a forwardIncremental.
  if constexpr (!kTrainingModule) {
    block.function("forwardIncremental", &BlockBinding::forwardIncremental);
    stack.function("forwardIncremental", &StackBinding::forwardIncremental);
  }
}

}  // namespace simd_attention::bindings
