#include "simd_attention/optimizers.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "dispatch/dispatch.h"
#include "kernels/optimizer.h"
#include "kernels/powers.h"
#include "threading/parallel.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

void CheckRange(const char* name, double value, double low, bool low_inclusive, double high,
                bool high_inclusive, const char* expected) {
  const bool ok = std::isfinite(value) && (low_inclusive ? value >= low : value > low) &&
                  (high_inclusive ? value <= high : value < high);
  if (!ok) {
    throw std::invalid_argument(
        Cat({"options.", name, ": expected ", expected, ", got ", NumberString(value)}));
  }
}

constexpr double kInf = HUGE_VAL;

}  // namespace

// Each parameter is named as the object's SetWeights names it.
void Optimizer::Step(Trainable& object) {
  std::vector<Parameter> parameters;
  object.TrainableParameters(parameters, "");
  Run(&object, object.kernels(), object.pool(), parameters);
  object.ParametersUpdated();
}

void Optimizer::Forget(const Trainable& object) {
  std::erase_if(states_, [&](const auto& s) { return s.first == &object; });
}

void Optimizer::Run(const Trainable* object, const KernelTable& k, ThreadPool& pool,
                    const std::vector<Parameter>& parameters) {
  auto it = std::find_if(states_.begin(), states_.end(),
                         [&](const auto& s) { return s.first == object; });
  State& state = it != states_.end() ? it->second : states_.emplace_back(object, State{}).second;
  const size_t slots = SlotsPerParameter();
  // Sized once, at the object's first step. State that does not fit belongs
  // to an object that lived at this address before: start over.
  bool fits = state.slots.size() == parameters.size() * slots;
  for (size_t i = 0; fits && i < state.slots.size(); ++i) {
    fits = state.slots[i].size() == parameters[i / slots].size;
  }
  if (!fits) {
    state = State{};
    for (const Parameter& p : parameters) {
      for (size_t s = 0; s < slots; ++s) state.slots.emplace_back(p.size, 0.0f);
    }
  }
  // Element-wise, ~1 ns an element: any split gives the same bits. Every
  // parameter's update is computed and checked before any is written, so a
  // step that would leave a value or a moment non-finite changes nothing.
  const auto pass = [&](size_t i, bool check_only) {
    const Parameter& p = parameters[i];
    std::atomic<unsigned> not_finite{0};
    ParallelElementwise(pool, p.size, 1.0, [&](size_t begin, size_t end) {
      float* at[2] = {};
      for (size_t s = 0; s < slots; ++s) at[s] = state.slots[i * slots + s].data() + begin;
      const Parameter part{p.value + begin, p.gradient + begin, end - begin, {}};
      not_finite.fetch_or(Update(k, part, at, state.steps, check_only),
                          std::memory_order_relaxed);
    });
    return not_finite.load(std::memory_order_relaxed);
  };
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (const unsigned result = pass(i, true)) Refuse(parameters[i].name, result);
  }
  // Written last checked first: what the checks read last is still in cache.
  for (size_t i = parameters.size(); i-- > 0;) pass(i, false);
  ++state.steps;
}

void Optimizer::Refuse(std::string_view parameter, unsigned not_finite) const {
  // A moment that overflows is the cause; the value then follows from it.
  const unsigned which = not_finite & kNewSlot1   ? kNewSlot1
                         : not_finite & kNewSlot0 ? kNewSlot0
                                                  : kNewWeight;
  throw std::range_error(Cat({parameter, ": ", Name(), " step refused: ", Overflow(which),
                              " would overflow float32; no weight or optimizer state changed"}));
}

Sgd::Sgd(const SgdOptions& o) : options_(o) {
  CheckRange("lr", o.lr, 0, false, kInf, false, "a finite number > 0");
  CheckRange("momentum", o.momentum, 0, true, kInf, false, "a finite number >= 0");
  CheckRange(o.names->weight_decay, o.weight_decay, 0, true, kInf, false,
             "a finite number >= 0");
  if (o.nesterov && o.momentum == 0) {
    throw std::invalid_argument(
        "options.nesterov: expected false without momentum (options.momentum 0), got true");
  }
  lr_ = float(o.lr);
  momentum_ = float(o.momentum);
  weight_decay_ = float(o.weight_decay);
  nesterov_ = o.nesterov;
}

unsigned Sgd::Update(const KernelTable& k, const Parameter& p, float* const* slots,
                     size_t step, bool check_only) const {
  return TrainingKernelsFor(k).sgd({p.value, p.gradient, momentum_ > 0 ? slots[0] : nullptr,
                                    p.size, lr_, momentum_, weight_decay_, nesterov_, step == 0,
                                    check_only});
}

const char* Sgd::Overflow(unsigned which) const {
  return which == kNewWeight ? "options.lr times its update"
                             : "its momentum buffer (the gradients are too large in magnitude)";
}

Adam::Adam(const AdamOptions& o) : options_(o) {
  CheckRange("lr", o.lr, 0, false, kInf, false, "a finite number > 0");
  CheckRange("beta1", o.beta1, 0, true, 1, false, "a number in [0, 1)");
  CheckRange("beta2", o.beta2, 0, true, 1, false, "a number in [0, 1)");
  CheckEps("options.eps", o.eps);
  CheckRange(o.names->weight_decay, o.weight_decay, 0, true, kInf, false,
             "a finite number >= 0");
}

unsigned Adam::Update(const KernelTable& k, const Parameter& p, float* const* slots,
                      size_t step, bool check_only) const {
  const AdamOptions& o = options_;
  const double bc1 = 1 - Power(o.beta1, step + 1), bc2 = 1 - Power(o.beta2, step + 1);
  return TrainingKernelsFor(k).adam(
      {p.value, p.gradient, slots[0], slots[1], p.size, float(o.beta1), float(o.beta2),
       float(o.eps), o.decoupled_weight_decay ? 0.0f : float(o.weight_decay),
       o.decoupled_weight_decay ? float(1 - o.lr * o.weight_decay) : 1.0f, float(o.lr / bc1),
       float(1 / std::sqrt(bc2)), check_only});
}

const char* Adam::Name() const { return options_.decoupled_weight_decay ? "AdamW" : "Adam"; }

const char* Adam::Overflow(unsigned which) const {
  return which == kNewWeight ? "options.lr times its update"
         : which == kNewSlot0
             ? "its first moment (the gradients are too large in magnitude)"
             : "its second moment (the gradients' squares: gradients beyond 1.8e19 in magnitude)";
}

}  // namespace simd_attention
