// What the optimizers (optimizers.h) update: an object that lists its
// parameters, each a value it computes with and its last Backward's
// gradient in the same layout, so that one fused pass updates it in place.
// MultiHeadAttention, TransformerBlock, TransformerStack, the encoder and
// decoder layers and TinyTransformer are Trainable; an object made of
// others lists theirs under its own names.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace simd_attention {

struct KernelTable;
class ThreadPool;

struct Parameter {
  float* value;  // the values the object computes with (packed panels, a norm's gamma)
  const float* gradient;  // the last Backward's, in the same layout
  size_t size;
  std::string name;  // as SetWeights names it: "w_q", "sublayers[1].ffn.b1" ...
};

class Trainable {
 public:
  virtual ~Trainable() = default;
  // Appends every parameter, its name prefixed with `prefix`. Throws
  // std::logic_error without a Backward since the weights last changed.
  virtual void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) = 0;
  // After an optimizer wrote new values in place: what the object derived
  // from the old ones (packed transposes, a training forward's state, a
  // norm's effective scales) is stale.
  virtual void ParametersUpdated() = 0;
  // The kernels and pool the object runs on, which its updates run on too.
  virtual const KernelTable& kernels() const = 0;
  virtual ThreadPool& pool() const = 0;
};

}  // namespace simd_attention
