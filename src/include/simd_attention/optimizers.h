// Optimizers that update a Trainable object's weights in place from its
// last Backward's gradients (trainable.h: a MultiHeadAttention, a
// TransformerBlock or TransformerStack, a layer, a TinyTransformer): one
// fused SIMD pass per parameter over the packed weights the object computes
// with, so a training step re-packs nothing from the caller. The rules are
// torch.optim's: SGD (dampening 0), Adam and AdamW.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "simd_attention/arg_names.h"
#include "simd_attention/trainable.h"

namespace simd_attention {

// The defaults are torch.optim's (SGD's lr: 1e-3, as Adam's), and C++'s
// alone: the JS package leaves an option it is not given to them.
struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0;      // 0 = plain SGD
  double weight_decay = 0;  // L2: added to the gradient
  bool nesterov = false;
  const ArgNames* names = &CppArgNames();  // for messages
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // AdamW: decay the weights, not the gradient
  const ArgNames* names = &CppArgNames();  // for messages
};

// Step(object) updates every parameter the object lists (its weights,
// biases and norm scales) from its last Backward (std::logic_error without one since its
// last SetWeights). A step that would make a value or a moment non-finite
// (an lr or gradients too large for float32) throws std::range_error naming
// the parameter as SetWeights does, the optimizer and what would overflow,
// and changes nothing: every update is computed and checked before any is
// written. The moments (the state) are kept per object and
// parameter, sized at the object's first Step; Forget(object) drops them
// (e.g. before the object is destroyed, or to start over). After a step the
// object's training state is released (a Backward needs a new training
// forward), and KV caches or precomputed keys and values made before it are
// stale, as after SetWeights.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  void Step(Trainable& object);
  void Forget(const Trainable& object);

 protected:
  struct State {
    size_t steps = 0;                       // done before this one
    std::vector<std::vector<float>> slots;  // per parameter, slots_per_parameter each
  };
  virtual size_t SlotsPerParameter() const = 0;
  // One parameter's update; slots: this optimizer's state for it. With
  // check_only, nothing is written and the result says which new values
  // would not be finite (kernels/optimizer.h).
  virtual unsigned Update(const KernelTable& k, const Parameter& p, float* const* slots,
                          size_t step, bool check_only) const = 0;
  // "SGD", "Adam", "AdamW"; and what overflowed, for one bit of Update's
  // result.
  virtual const char* Name() const = 0;
  virtual const char* Overflow(unsigned which) const = 0;

 private:
  void Run(const Trainable* object, const KernelTable& k, ThreadPool& pool,
           const std::vector<Parameter>& parameters);
  [[noreturn]] void Refuse(std::string_view parameter, unsigned not_finite) const;
  // Per object, in the order of their first steps: a program trains a few
  // objects, so a search beats a hash table's code (the training .wasm).
  std::vector<std::pair<const Trainable*, State>> states_;
};

class Sgd final : public Optimizer {
 public:
  // Throws std::invalid_argument naming the option: lr a finite number > 0,
  // momentum and weight_decay finite and >= 0, nesterov only with momentum.
  explicit Sgd(const SgdOptions& options);
  const SgdOptions& options() const { return options_; }

 private:
  size_t SlotsPerParameter() const override { return momentum_ > 0 ? 1 : 0; }
  unsigned Update(const KernelTable& k, const Parameter& p, float* const* slots, size_t step,
                  bool check_only) const override;
  const char* Name() const override { return "SGD"; }
  const char* Overflow(unsigned which) const override;
  SgdOptions options_;
  float lr_, momentum_, weight_decay_;
  bool nesterov_;
};

class Adam final : public Optimizer {
 public:
  // Throws std::invalid_argument naming the option: lr finite and > 0, eps
  // finite and > 0 as float32 (CheckEps), beta1 and beta2 in [0, 1),
  // weight_decay finite and >= 0.
  explicit Adam(const AdamOptions& options);
  const AdamOptions& options() const { return options_; }

 private:
  size_t SlotsPerParameter() const override { return 2; }
  unsigned Update(const KernelTable& k, const Parameter& p, float* const* slots, size_t step,
                  bool check_only) const override;
  const char* Name() const override;
  const char* Overflow(unsigned which) const override;
  AdamOptions options_;
};

}  // namespace simd_attention
