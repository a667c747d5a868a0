// FfnBinding and GatedFfnBinding, which only the worker pool uses
// (web/src/pool-parts.js), so the training module, which no pool loads,
// leaves them out.
#include <emscripten/bind.h>

#include <memory>
#include <string>
#include <vector>

#include "glue.h"
#include "register_class.h"
#include "held_bytes.h"
#include "layers/gated_feed_forward.h"
#include "layer_binding.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention::bindings {

// An FFN (`Net`: FeedForward or GatedFeedForward) alone, for the worker
// pool, which gives each worker some hidden units of a layer's or block's
// FFN (their columns of W1, or of W_gate and W_up; their entries of the
// hidden biases; their rows of W2 or W_down; a zero output bias but in the
// first worker) and adds the workers' outputs. Only the pool makes one,
// from a config C++ has accepted, and hands it rows of that width, so the
// glue checks no config and no x; SetWeights checks the weights.
template <class Net>
class FfnShardBinding : public Owned<Net> {
 public:
  FfnShardBinding(const char* kind, const val& c)
      : Owned<Net>(kind,
                   [&] {
                     return std::make_unique<Net>(
                         SizeOf(c, "dModel"), SizeOf(c, "ffnDim"),
                         ParseActivation(c["activation"].as<std::string>()),
                         BestKernels(ParseBackend(c["backend"].as<std::string>())),
                         SharedThreadPool(1), ParseWeightType(c["weights"].as<std::string>()));
                   }),
        d_model_(SizeOf(c, "dModel")),
        weights_(c["weights"].as<std::string>()) {}
  // x: rows of d_model floats. In place: Forward reads all of x into its
  // hidden units before it writes the output.
  val forward(const val& x) {
    return Guard([&] {
      std::vector<float> rows = CopyFloats(x);
      this->Checked().Forward(rows.data(), rows.size() / d_model_, rows.data());
      return ToFloat32Array(rows);
    });
  }

 protected:
  // Sets the weights `set` gives (the JS form read), then the bytes held.
  template <class Set>
  val SetWith(const Set& set) {
    return Guard([&] {
      set(this->Checked());
      weight_bytes_.Set(ParseWeightType(weights_), this->Checked().WeightBytes());
    });
  }

 private:
  size_t d_model_;
  std::string weights_;  // config.weights, which the constructor has parsed
  HeldBytes weight_bytes_{Held::kWeights};
};

class FfnBinding : public FfnShardBinding<FeedForward> {
 public:
  explicit FfnBinding(const val& c) : FfnShardBinding("FeedForward", c) {}
  // w {w1, b1, w2, b2}
  val setWeights(const val& w) {
    return SetWith([&](FeedForward& f) { f.SetWeights(JsFfnWeights(w).weights()); });
  }
};

class GatedFfnBinding : public FfnShardBinding<GatedFeedForward> {
 public:
  explicit GatedFfnBinding(const val& c) : FfnShardBinding("GatedFeedForward", c) {}
  // w {wGate, wUp, wDown, bGate?, bUp?, bDown?}; a bias not given is zero.
  val setWeights(const val& w) {
    return SetWith([&](GatedFeedForward& f) {
      const JsMatrix gate(w["wGate"]), up(w["wUp"]), down(w["wDown"]);
      const std::vector<float> b_gate = CopyFloatsIfGiven(w, "bGate");
      const std::vector<float> b_up = CopyFloatsIfGiven(w, "bUp");
      const std::vector<float> b_down = CopyFloatsIfGiven(w, "bDown");
      f.SetWeights({gate.floats, up.floats, down.floats, b_gate, b_up, b_down, gate.stored(),
                    up.stored(), down.stored()});
    });
  }
};

// forward of a shard binding, bound as a function whose first argument is
// the binding (its base's member is not the bound class's).
template <class Binding>
val Forward(Binding& binding, const val& x) {
  return binding.forward(x);
}

EMSCRIPTEN_BINDINGS(simd_attention_ffn) {
  RegisterOwnedClass<GatedFfnBinding>("GatedFfnBinding")
      .function("setWeights", &GatedFfnBinding::setWeights)
      .function("forward", &Forward<GatedFfnBinding>);
  RegisterOwnedClass<FfnBinding>("FfnBinding")
      .function("setWeights", &FfnBinding::setWeights)
      .function("forward", &Forward<FfnBinding>);
}

}  // namespace simd_attention::bindings
