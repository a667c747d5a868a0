// The Embind class behind TinyTransformer of web/index.js (the training
// build only), declared for training_binding.cc's optimizers; defined and
// registered in tiny_model_binding.cc.
#pragma once

#include "glue.h"
#include "simd_attention/tiny_model.h"

namespace simd_attention::bindings {

class TinyModelBinding : public Owned<TinyTransformer> {
 public:
  // config {vocab, dModel, numHeads, numLayers, maxTokens, ffnDim,
  // activation, seed, backend}, every field given by JS.
  explicit TinyModelBinding(const val& config);
  val info() const;
  // tokens and targets: Int32Arrays of batch * tokensPerRow ids (targets
  // undefined: none scored).
  val forward(const val& tokens, const val& targets, size_t batch, size_t tokens_per_row,
              bool training, bool need_weights);
  val backward();
  val reset(double seed);
  val weights() const;
  val setWeights(const val& weights);
  val gradients() const;
};

}  // namespace simd_attention::bindings
