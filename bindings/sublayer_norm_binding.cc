// SublayerNormBinding: the norms and residual sum around one sublayer of a
// transformer layer or block that the worker pool splits
// (web/src/pool-split-blocks.js). Every worker of a pre or sandwich sublayer
// normalizes its input here; the worker that adds the sublayer's partial
// outputs joins them to the residual here (through the sandwich's output
// norm first, the post norm after), with the synchronous block's checks and
// messages (src/layers/transformer_block.cc, src/layers/residual.h). JS
// names the layer's method in front of each message.
#include <emscripten/bind.h>

#include <memory>
#include <string>
#include <vector>

#include "checks/validate.h"
#include "glue.h"
#include "register_class.h"
#include "js_arg_names.h"
#include "layers/norms.h"
#include "layers/residual.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_block.h"

namespace simd_attention::bindings {
namespace {

NormPlacement ParsePlacement(const std::string& name) {
  const NormPlacementTraits* p = RowNamed(kNormPlacements, name);
  if (p == nullptr) throw std::invalid_argument("SublayerNorm: unknown placement '" + name + "'");
  return p->value;
}

// Whether the norm kind named `name` (a resolved config's) has a shift,
// beta: what the zero weights of a block's synchronous stand-in hold.
bool NormHasShift(const std::string& name) {
  return Traits(ParseNormKind(name, "config.norm")).has_beta;
}

}  // namespace

class SublayerNormBinding : public Owned<BlockNorm> {
 public:
  // config {dModel, eps, norm, placement, layerForm, backend}: the block's
  // (or layer's) resolved dModel, eps and norm kind; the sublayer's
  // placement ('pre', 'post', 'sandwich', 'none'); layerForm: the encoder and
  // decoder layers' messages, else the block's.
  explicit SublayerNormBinding(const val& c)
      : Owned("BlockNorm", [&] { return MakeNorm(c); }),
        d_model_(SizeOf(c, "dModel")),
        placement_(ParsePlacement(c["placement"].as<std::string>())),
        layer_form_(c["layerForm"].as<bool>()),
        kernels_(&BestKernels(ParseBackend(c["backend"].as<std::string>()))),
        pool_(SharedThreadPool(1)) {
    if (Traits(placement_).output_norm) output_ = MakeNorm(c);
  }

  // Whether the sublayer's input is normalized (pre and sandwich) by every
  // worker of its part.
  bool normsInput() const { return Traits(placement_).input_norm; }

  // w {gamma, beta?}, named `name` as in the layer ("norm1") or block
  // ("sublayers[0] (ffn): norm"); a sandwich's output norm's `out`,
  // `outName`.
  val setWeights(const val& w, const std::string& name, const val& out,
                 const std::string& out_name) {
    return Guard([&] {
      // Without a norm ('none') its weights are ignored, as the block does.
      if (HasNorm(placement_)) {
        Checked().SetWeights(name, CopyFloatsIfGiven(w, "gamma"), CopyFloatsIfGiven(w, "beta"));
      }
      if (output_ != nullptr) {
        output_->SetWeights(out_name, CopyFloatsIfGiven(out, "gamma"),
                            CopyFloatsIfGiven(out, "beta"));
      }
    });
  }

  // x {data, batch, tokens, features}: the sublayer's input checked as the
  // synchronous block checks it, normalized (pre and sandwich).
  val input(const val& x) {
    return Guard([&] {
      const Input in(x);
      CheckTensor("x", in.tensor, d_model_, JsArgNames().d_model);
      std::vector<float> out(in.length);
      Checked().Forward(layer_form_ ? kLayerNormInput : "the input of a sublayer's norm",
                        in.data.get(), in.length / d_model_, out.data());
      return ToFloat32Array(out);
    });
  }

  // residual + y (y through the sandwich's output norm first), the sum
  // checked as `sublayer`'s; then normalized (post).
  val join(const val& residual, const val& y, const std::string& sublayer) {
    return Guard([&] {
      std::vector<float> x = CopyFloats(residual);
      std::vector<float> add = CopyFloats(y);
      const size_t rows = x.size() / d_model_;
      if (output_ != nullptr) {
        output_->Forward("the output of a sublayer", add.data(), rows, add.data());
      }
      AddResidual(sublayer.c_str(), *pool_, *kernels_, x, add);
      if (Traits(placement_).sum_norm) {
        Checked().Forward(layer_form_ ? kLayerNormInput : "the residual sum of a sublayer",
                          x.data(), rows, x.data());
      }
      return ToFloat32Array(x);
    });
  }

 private:
  // What the layers' norms name in a range check (transformer_layers.cc).
  static constexpr char kLayerNormInput[] = "the LayerNorm input";

  static std::unique_ptr<BlockNorm> MakeNorm(const val& c) {
    return std::make_unique<BlockNorm>(
        ParseNormKind(c["norm"].as<std::string>(), "config.norm"), SizeOf(c, "dModel"),
        float(c["eps"].as<double>()), BestKernels(ParseBackend(c["backend"].as<std::string>())),
        SharedThreadPool(1));
  }

  size_t d_model_;
  NormPlacement placement_;
  bool layer_form_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<BlockNorm> output_;  // a sandwich's norm after the mixer
};

EMSCRIPTEN_BINDINGS(simd_attention_sublayer_norm) {
  RegisterOwnedClass<SublayerNormBinding>("SublayerNormBinding")
      .function("setWeights", &SublayerNormBinding::setWeights)
      .function("normsInput", &SublayerNormBinding::normsInput)
      .function("input", &SublayerNormBinding::input)
      .function("join", &SublayerNormBinding::join);
  emscripten::function("normHasShift", &NormHasShift);
}

}  // namespace simd_attention::bindings
