#include "kv_binding.h"

#include <emscripten/bind.h>

#include "training/training_module.h"

namespace simd_attention::bindings {

val KVCacheBinding::info() {
  return Guard([&] {
    const KVCache& c = Checked();
    return SizesToJs({{"batch", c.batch()}, {"maxLength", c.max_length()}, {"length", c.length()}});
  });
}

val KVCacheBinding::append(const val& keys, const val& values) {
  return Guard([&] {
    KVCache& c = Checked();
    const Input k(keys), v(values);
    c.Append(k.tensor, v.tensor);
  });
}

val KVCacheBinding::keys() {
  return Guard([&] { return ToFloat32Array(Checked().Keys()); });
}

val KVCacheBinding::values() {
  return Guard([&] { return ToFloat32Array(Checked().Values()); });
}

val KVCacheBinding::truncate(size_t n) {
  return Guard([&] {
    Checked().Truncate(n);
  });
}

val KVCacheBinding::reset() {
  return Guard([&] {
    Checked().Reset();
  });
}

val PrecomputedBinding::info() {
  return Guard([&] {
    const PrecomputedKV& kv = Checked();
    return SizesToJs({{"batch", kv.batch()}, {"tokens", kv.tokens()}});
  });
}

EMSCRIPTEN_BINDINGS(simd_attention_kv) {
  // The training module makes no KV cache and no precomputed keys and
  // values (training_module.h): JS constructs the empty objects, whose
  // filling it refuses, and nothing else.
  auto cache = emscripten::class_<KVCacheBinding>("KVCacheBinding").constructor<>();
  auto precomputed = emscripten::class_<PrecomputedBinding>("PrecomputedBinding").constructor<>();
  if constexpr (!kTrainingModule) {
    cache.function("info", &KVCacheBinding::info)
        .function("length", &KVCacheBinding::length)
        .function("append", &KVCacheBinding::append)
        .function("keys", &KVCacheBinding::keys)
        .function("values", &KVCacheBinding::values)
        .function("truncate", &KVCacheBinding::truncate)
        .function("reset", &KVCacheBinding::reset);
    precomputed.function("info", &PrecomputedBinding::info);
  }
}

}  // namespace simd_attention::bindings
