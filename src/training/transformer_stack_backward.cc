// TransformerStack's backward: through the final norm, then each layer's
// own backward (TransformerBlock::Backward, from the record the layer kept)
// in reverse, the gradient of a layer's input the d_output of the layer
// before it.
#include <string>

#include "checks/validate.h"
#include "layers/norms.h"
#include "layers/transformer_block_parts.h"
#include "training/gradients.h"

namespace simd_attention {

TransformerStack::Record& TransformerStack::StartRecord(size_t batch, size_t tokens) {
  if (record_ == nullptr) record_ = MakeTrainingOnly<Record>();
  Record& r = *record_;
  r.ready = false;
  r.batch = batch;
  r.tokens = tokens;
  r.final_norm_input.clear();
  return r;
}

StackGradients TransformerStack::Backward(const Tensor3& d_output) {
  StackGradients g;
  Backward(d_output, g);
  return g;
}

void TransformerStack::Backward(const Tensor3& d_output, StackGradients& g) {
  if (record_ == nullptr || !record_->ready) ThrowNoTrainingForward();
  Record& r = *record_;
  const size_t d_model = config_.block.d_model, rows = r.batch * r.tokens;
  CheckOutputGradient(config_.block.names->d_output, d_output, r.batch, r.tokens, d_model);
  r.has_gradients = false;  // until this one is complete
  // d: dL/d(the output of the layer at hand).
  std::vector<float> d(rows * d_model);
  if (final_norm_ != nullptr) {
    final_norm_->Backward(r.final_norm_input.data(), rows, d_output.data.data(), d.data(),
                          g.final_norm);
    CheckComputed("the gradients", d, kGradientTooLarge);
  } else {
    d.assign(d_output.data.begin(), d_output.data.end());
    g.final_norm = {};
  }
  // Each layer's gradients computed in place in g (its vectors reused).
  g.layers.resize(layers_.size());
  BlockGradients layer;
  layer.d_input.swap(g.d_input);
  for (size_t i = layers_.size(); i-- > 0;) {
    layer.sublayers.swap(g.layers[i]);
    layers_[i].Backward({d, r.batch, r.tokens, d_model}, layer);
    layer.sublayers.swap(g.layers[i]);
    d.swap(layer.d_input);
  }
  g.d_input.swap(d);
  r.has_gradients = true;
}

void TransformerStack::TrainableParameters(std::vector<Parameter>& out,
                                           std::string_view prefix) {
  if (record_ == nullptr || !record_->has_gradients) ThrowNoGradients();
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i].TrainableParameters(out, Cat({prefix, "layers[", std::to_string(i), "]."}));
  }
  if (final_norm_ != nullptr) {
    final_norm_->TrainableParameters(out, Cat({prefix, config_.block.names->final_norm, "."}));
  }
}

void TransformerStack::ParametersUpdated() {
  for (TransformerBlock& layer : layers_) layer.ParametersUpdated();
  if (final_norm_ != nullptr) final_norm_->ParametersUpdated();
  if (record_ != nullptr) record_->ready = false;
}

}  // namespace simd_attention
