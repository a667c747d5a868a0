// A member that only training fills (a training forward's saved state, a
// backward's transposes and gradients), held by a pointer whose deleter is
// given by the code that creates it. The owner's destructor and moves then
// call through that pointer instead of inlining ~T, so a program that never
// trains (the npm package's inference builds) links no code of T at all.
#pragma once

#include <memory>

namespace simd_attention {

template <class T>
using TrainingOnly = std::unique_ptr<T, void (*)(T*)>;

// Called only by training code: the one place ~T is instantiated.
template <class T>
TrainingOnly<T> MakeTrainingOnly() {
  return TrainingOnly<T>(new T(), [](T* p) { delete p; });
}

}  // namespace simd_attention
