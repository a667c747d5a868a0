// Embind classes behind KVCache and PrecomputedKeyValue of web/index.js.
// Each holds one C++ object made by a MultiHeadAttention (or a decoder
// layer's attention). They start empty: JS constructs one, then hands it to
// the creating call (MhaBinding::createKVCache, ...precomputeKeyValue,
// DecoderLayerBinding::createKVCache, ...precomputeMemory), which fills it or
// returns an error value; JS deletes it on error.
#pragma once

#include <memory>
#include <optional>

#include "glue.h"
#include "held_bytes.h"
#include "simd_attention/kv_cache.h"

namespace simd_attention::bindings {

class KVCacheBinding {
 public:
  std::optional<KVCache> cache;
  HeldBytes held{Held::kCache};

  // memoryStats() counts the cache once it is created.
  void Count() { held.Set(cache->type(), cache->bytes()); }
  KVCache& Checked() {
    if (!cache) throw std::logic_error("KV cache: not created");
    return *cache;
  }
  // 0 while empty (never throws: JS reads it as a property).
  size_t length() const { return cache ? cache->length() : 0; }
  val info();
  // keys {data, batch, tokens, features}, values alike.
  val append(const val& keys, const val& values);
  val keys();
  val values();
  val truncate(size_t n);
  val reset();
};

class PrecomputedBinding {
 public:
  std::optional<PrecomputedKV> kv;
  HeldBytes held{Held::kCache};

  void Count() { held.Set(kv->type(), kv->bytes()); }
  const PrecomputedKV& Checked() const {
    if (!kv) throw std::logic_error("precomputed key/value: not created");
    return *kv;
  }
  val info();
};

}  // namespace simd_attention::bindings
