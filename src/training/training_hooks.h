// Training as a link choice. The forwards (api/, layers/) are compiled once,
// into the core that both libraries hold; what they do only when asked to
// train (keep a record for the backward, list their parameters) are hooks
// that a program gets from the one library it links: simd_attention, with
// this folder (the backwards, the optimizers, the tiny model and
// training_hooks.cc), or simd_attention_inference, with
// api/training_refused.cc in its place, where each hook refuses. Nothing is
// decided by a compile flag; the npm package's inference modules link the
// latter.
#pragma once

#include "checks/validate.h"
#include "simd_attention/training_only.h"

namespace simd_attention {

// True in simd_attention (training_hooks.cc), false in
// simd_attention_inference (api/training_refused.cc). A constant at the
// link: the npm package's modules are linked with -flto, which folds it in
// the inference ones, so every training path after TrainingRequested is
// dropped from their .wasm (about 7 kB, which their size budget has no
// room for).
extern const bool kTrainingLinked;

// options.training as this program honours it: the value itself, or false
// where the training library is not linked (which refuses true). Always
// inlined (emcc's -Os turns inlining off), so that the link sees false
// there.
[[gnu::always_inline]] inline bool TrainingRequested(bool training) {
  if (!kTrainingLinked) {
    if (training) RefuseTrainingInThisBuild();
    return false;
  }
  return training;
}

// What a training forward kept (a TrainingOnly member), dropped when the
// weights change or a forward does not train; and read, or null. Where
// training is not linked no forward kept anything: the link folds both to
// nothing.
template <class T>
[[gnu::always_inline]] inline void DropTraining(TrainingOnly<T>& kept) {
  if (kTrainingLinked) kept.reset();
}
template <class T>
[[gnu::always_inline]] inline T* TrainingKept(const TrainingOnly<T>& kept) {
  return kTrainingLinked ? kept.get() : nullptr;
}

}  // namespace simd_attention
