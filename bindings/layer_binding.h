// The Embind classes behind TransformerEncoderLayer and
// TransformerDecoderLayer of web/index.js, declared for the bindings that
// take one as an argument (training_binding.cc); defined and registered in
// layer_binding.cc. JsFfnWeights: the weights of a layer's FFN, and of the
// worker pool's FfnBinding (ffn_binding.cc).
#pragma once

#include <vector>

#include "glue.h"
#include "held_bytes.h"
#include "kv_binding.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention::bindings {

// A feed-forward network's weights from JS ({w1, b1, w2, b2}), copied;
// weights() views the copies.
struct JsFfnWeights {
  JsMatrix w1;
  std::vector<float> b1;
  JsMatrix w2;
  std::vector<float> b2;
  explicit JsFfnWeights(const val& js);
  FfnWeights weights() const {
    return FfnWeights{w1.floats, b1, w2.floats, b2, w1.stored(), w2.stored()};
  }
};

class EncoderLayerBinding : public Owned<TransformerEncoderLayer> {
 public:
  explicit EncoderLayerBinding(const val& config);
  val info();
  val setWeights(const val& w);
  val forward(const val& x, const val& options);

 private:
  HeldBytes weight_bytes_{Held::kWeights};
};

class DecoderLayerBinding : public Owned<TransformerDecoderLayer> {
 public:
  explicit DecoderLayerBinding(const val& config);
  val info();
  val setWeights(const val& w);
  // memory: a tensor.
  val forward(const val& x, const val& memory, const val& options);
  // memory: K/V from precomputeMemory (or any attention of the same layout).
  val forwardPrecomputed(const val& x, const PrecomputedBinding& memory, const val& options);
  // One decoding step; a failed step leaves the cache as it was.
  val forwardIncremental(const val& x, KVCacheBinding& cache, const PrecomputedBinding& memory,
                         const val& options);
  val createKVCache(KVCacheBinding& into, size_t batch, size_t max_length);
  val precomputeMemory(PrecomputedBinding& into, const val& memory, const val& mask);

 private:
  HeldBytes weight_bytes_{Held::kWeights};
};

}  // namespace simd_attention::bindings
