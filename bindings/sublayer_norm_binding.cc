// SublayerNormBinding: the residual sum and LayerNorm around one sublayer of
// a transformer layer that the worker pool splits (web/src/pool-layers.js).
// The worker that adds the sublayer's partial outputs joins them to the
// residual here, and every worker of a pre-LN sublayer normalizes its input
// here, with the synchronous layer's checks and messages (src/layers/residual.h,
// LayerNorm). JS names the layer's method in front of each message.
#include <emscripten/bind.h>

#include <memory>
#include <string>
#include <vector>

#include "glue.h"
#include "js_arg_names.h"
#include "layers/residual.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_layers.h"
#include "checks/validate.h"

namespace simd_attention::bindings {

class SublayerNormBinding : public Owned<LayerNorm> {
 public:
  // config {dModel, eps, normFirst, backend}, as the layer resolved them.
  explicit SublayerNormBinding(const val& c)
      : Owned("LayerNorm", [&] {
          return std::make_unique<LayerNorm>(
              SizeOf(c, "dModel"), float(c["eps"].as<double>()),
              BestKernels(ParseBackend(c["backend"].as<std::string>())));
        }),
        d_model_(SizeOf(c, "dModel")),
        norm_first_(c["normFirst"].as<bool>()),
        kernels_(&BestKernels(ParseBackend(c["backend"].as<std::string>()))),
        pool_(SharedThreadPool(1)) {}

  // w {gamma, beta}; name: the layer's, e.g. "norm1".
  val setWeights(const val& w, const std::string& name) {
    return Guard([&] {
      Checked().SetWeights(name.c_str(), NormWeights{CopyFloats(w["gamma"]),
                                                     CopyFloats(w["beta"])});
    });
  }

  // x {data, batch, tokens, features}: the layer's input checked as the
  // synchronous layer checks it, normalized for a pre-LN sublayer.
  val input(const val& x) {
    return Guard([&] {
      const Input in(x);
      CheckTensor("x", in.tensor, d_model_, JsArgNames().d_model);
      std::vector<float> out(in.length);
      Checked().Forward(in.data.get(), in.length / d_model_, out.data());
      return ToFloat32Array(out);
    });
  }

  // h + y, the sum checked as `sublayer`'s; then normalized (post-LN).
  val join(const val& h, const val& y, const std::string& sublayer) {
    return Guard([&] {
      std::vector<float> x = CopyFloats(h);
      const std::vector<float> add = CopyFloats(y);
      AddResidual(sublayer.c_str(), *pool_, *kernels_, x, add);
      if (!norm_first_) Checked().Forward(x.data(), x.size() / d_model_, x.data());
      return ToFloat32Array(x);
    });
  }

 private:
  size_t d_model_;
  bool norm_first_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
};

EMSCRIPTEN_BINDINGS(simd_attention_sublayer_norm) {
  emscripten::class_<SublayerNormBinding>("SublayerNormBinding")
      .constructor<const val&>()
      .function("takeError", &TakeError<SublayerNormBinding>)
      .function("setWeights", &SublayerNormBinding::setWeights)
      .function("input", &SublayerNormBinding::input)
      .function("join", &SublayerNormBinding::join);
}

}  // namespace simd_attention::bindings
