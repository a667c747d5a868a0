// FfnBinding, which only the worker pool uses (web/src/pool-parts.js), so
// the training module, which no pool loads, leaves it out.
#include <emscripten/bind.h>

#include <memory>
#include <string>
#include <vector>

#include "glue.h"
#include "held_bytes.h"
#include "layer_binding.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention::bindings {

// A layer's FFN alone, for the worker pool, which gives each worker some
// hidden units of a layer (W1 columns, b1, W2 rows, a zero b2) and adds the
// workers' outputs. Only the pool makes one, from a layer config C++ has
// accepted, and hands it rows of that layer's width, so the glue checks no
// config and no x; SetWeights checks the weights.
class FfnBinding : public Owned<FeedForward> {
 public:
  explicit FfnBinding(const val& c)
      : Owned("FeedForward",
              [&] {
                return std::make_unique<FeedForward>(
                    SizeOf(c, "dModel"), SizeOf(c, "ffnDim"),
                    ParseActivation(c["activation"].as<std::string>()),
                    BestKernels(ParseBackend(c["backend"].as<std::string>())), SharedThreadPool(1),
                    ParseWeightType(c["weights"].as<std::string>()));
              }),
        d_model_(SizeOf(c, "dModel")),
        weights_(c["weights"].as<std::string>()) {}
  val setWeights(const val& w) {
    return Guard([&] {
      Checked().SetWeights(JsFfnWeights(w).weights());
      weight_bytes_.Set(ParseWeightType(weights_), Checked().WeightBytes());
    });
  }
  // x: rows of d_model floats. In place: Forward reads all of x into its
  // hidden units before it writes the output.
  val forward(const val& x) {
    return Guard([&] {
      std::vector<float> rows = CopyFloats(x);
      Checked().Forward(rows.data(), rows.size() / d_model_, rows.data());
      return ToFloat32Array(rows);
    });
  }

 private:
  size_t d_model_;
  std::string weights_;  // config.weights, which the constructor has parsed
  HeldBytes weight_bytes_{Held::kWeights};
};

EMSCRIPTEN_BINDINGS(simd_attention_ffn) {
  emscripten::class_<FfnBinding>("FfnBinding")
      .constructor<const val&>()
      .function("takeError", &TakeError<FfnBinding>)
      .function("setWeights", &FfnBinding::setWeights)
      .function("forward", &FfnBinding::forward);
}

}  // namespace simd_attention::bindings
