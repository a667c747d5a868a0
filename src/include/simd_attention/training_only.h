// A member that only training fills (a training forward's saved state, a
// backward's transposes and gradients), held by a pointer whose deleter is
// given by the code that creates it. The owner's destructor and moves then
// call through that pointer instead of inlining ~T, so a program that never
// trains (the npm package's inference builds) links no code of T at all.
#pragma once

#include <memory>

namespace simd_attention {

// The deleter: a function pointer, null until MakeTrainingOnly sets it, so
// that an empty TrainingOnly is default-constructed (zeros, inlined into its
// owner's constructor; a unique_ptr<T, void (*)(T*)> had to be given
// {nullptr, nullptr}, an out-of-line call in code compiled for size).
template <class T>
struct TrainingOnlyDeleter {
  void (*destroy)(T*) = nullptr;
  void operator()(T* p) const { destroy(p); }
};

template <class T>
using TrainingOnly = std::unique_ptr<T, TrainingOnlyDeleter<T>>;

// Called only by training code: the one place ~T is instantiated.
template <class T>
TrainingOnly<T> MakeTrainingOnly() {
  return TrainingOnly<T>(new T(), TrainingOnlyDeleter<T>{[](T* p) { delete p; }});
}

}  // namespace simd_attention
