// The inference library's side of training_hooks.h: simd_attention_inference
// links this in place of src/training/, so each hook a forward reaches when
// asked to train refuses (or, dropping state no forward made, does
// nothing), and the objects' vtables hold no training code.
#include <string_view>
#include <vector>

#include "simd_attention/multi_head_attention.h"
#include "simd_attention/transformer_block.h"
#include "simd_attention/transformer_layers.h"
#include "training/training_hooks.h"

namespace simd_attention {

const bool kTrainingLinked = false;

// Never reached: TrainingRequested refused options.training first.
void MultiHeadAttention::SaveForBackward(const Tensor3&, const Tensor3&, const Tensor3&,
                                         const MhaOptions&) {
  RefuseTrainingInThisBuild();
}
void MultiHeadAttention::RefuseTraining(const char*) { RefuseTrainingInThisBuild(); }
TransformerBlock::Record& TransformerBlock::StartRecord(size_t, size_t) {
  RefuseTrainingInThisBuild();
}
TransformerStack::Record& TransformerStack::StartRecord(size_t, size_t) {
  RefuseTrainingInThisBuild();
}

// No training forward ever kept anything.
void MultiHeadAttention::ReleaseTraining() {}

// Nothing trains, so there is nothing to list or update.
void MultiHeadAttention::TrainableParameters(std::vector<Parameter>&, std::string_view) {
  RefuseTrainingInThisBuild();
}
void MultiHeadAttention::ParametersUpdated() {}
void TransformerBlock::TrainableParameters(std::vector<Parameter>&, std::string_view) {
  RefuseTrainingInThisBuild();
}
void TransformerBlock::ParametersUpdated() {}
void TransformerStack::TrainableParameters(std::vector<Parameter>&, std::string_view) {
  RefuseTrainingInThisBuild();
}
void TransformerStack::ParametersUpdated() {}

}  // namespace simd_attention
