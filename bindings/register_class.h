// Registering the Embind class of a binding made from a JS config (an Owned
// binding: MhaBinding, the layers', the blocks', the pool's parts), with the
// members each of them has.
#pragma once

#include <emscripten/bind.h>

#include "glue.h"
#include "training/training_module.h"

namespace simd_attention::bindings {

// class_<Binding> `name`, constructed from the JS config, with takeError;
// the caller adds its own members.
template <class Binding>
emscripten::class_<Binding> RegisterOwnedClass(const char* name) {
  emscripten::class_<Binding> c(name);
  c.template constructor<const val&>().function("takeError", &TakeError<Binding>);
  return c;
}

// The same with info, setWeights and forward.
template <class Binding>
emscripten::class_<Binding> RegisterConfiguredClass(const char* name) {
  emscripten::class_<Binding> c = RegisterOwnedClass<Binding>(name);
  c.function("info", &Binding::info)
      .function("setWeights", &Binding::setWeights)
      .function("forward", &Binding::forward);
  return c;
}

// What decodes with a KV cache (MultiHeadAttention, the decoder layer):
// createKVCache, and forwardPrecomputed and forwardIncremental, which take
// precomputed keys and values or a KV cache, where the module makes them
// (not the training module, training_module.h).
template <class Binding>
void RegisterDecoding(emscripten::class_<Binding>& c) {
  c.function("createKVCache", &Binding::createKVCache);
  if constexpr (!kTrainingModule) {
    c.function("forwardPrecomputed", &Binding::forwardPrecomputed)
        .function("forwardIncremental", &Binding::forwardIncremental);
  }
}

}  // namespace simd_attention::bindings
