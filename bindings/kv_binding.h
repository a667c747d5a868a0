// Embind classes behind KVCache and PrecomputedKeyValue of web/index.js.
// Each holds one C++ object made by a MultiHeadAttention (or a decoder
// layer's attention). They start empty: JS constructs one, then hands it to
// the creating call (MhaBinding::createKVCache, ...precomputeKeyValue,
// DecoderLayerBinding::createKVCache, ...precomputeMemory), which fills it or
// returns an error value; JS deletes it on error.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

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
  // Fills this empty binding with the cache `make()` creates (the
  // createKVCache of the object it is for), counted.
  template <class Make>
  val Fill(Make&& make) {
    return Guard([&] {
      cache.emplace(make());
      Count();
    });
  }
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

  const PrecomputedKV& Checked() const {
    if (!kv) throw std::logic_error("precomputed key/value: not created");
    return *kv;
  }
  // Fills this empty binding with project(memory, mask), counted: `memory`
  // a JS tensor, `mask` undefined or its key padding mask (a Uint8Array),
  // both copied.
  template <class Project>
  val Fill(const val& memory, const val& mask, Project&& project) {
    return Guard([&] {
      const Input m(memory);
      kv.emplace(project(m.tensor, Given(mask) ? CopyBytes(mask) : std::vector<uint8_t>{}));
      held.Set(kv->type(), kv->bytes());
    });
  }
  val info();
};

}  // namespace simd_attention::bindings
