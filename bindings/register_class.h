// Registering the Embind class of a binding made from a JS config (an Owned
// binding: MhaBinding, the layers', the blocks'), with the members each of
// them has.
#pragma once

#include <emscripten/bind.h>

#include "glue.h"

namespace simd_attention::bindings {

// class_<Binding> `name`, constructed from the JS config, with takeError,
// info, setWeights and forward; the caller adds its own members.
template <class Binding>
emscripten::class_<Binding> RegisterConfiguredClass(const char* name) {
  emscripten::class_<Binding> c(name);
  c.template constructor<const val&>()
      .function("takeError", &TakeError<Binding>)
      .function("info", &Binding::info)
      .function("setWeights", &Binding::setWeights)
      .function("forward", &Binding::forward);
  return c;
}

}  // namespace simd_attention::bindings
