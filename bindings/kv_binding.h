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
#include "simd_attention/kv_cache.h"

namespace simd_attention::bindings {

class KVCacheBinding {
 public:
  std::optional<KVCache> cache;

  KVCache& Checked() {
    if (!cache) throw std::logic_error("KV cache: not created");
    return *cache;
  }
  // 0 while empty (never throws: JS reads it as a property).
  size_t length() const { return cache ? cache->length() : 0; }
  val info();
  // keys {data, batch, tokens, features}, values alike; JS checked that the
  // batches and token counts agree and the widths are H*d_k and H*d_v.
  val append(const val& keys, const val& values);
  val keys();
  val values();
  val truncate(size_t n);
  val reset();
};

class PrecomputedBinding {
 public:
  std::optional<PrecomputedKV> kv;

  const PrecomputedKV& Checked() const {
    if (!kv) throw std::logic_error("precomputed key/value: not created");
    return *kv;
  }
  val info();
};

// Runs `body` that may append to `cache`; if it throws, the cache is rolled
// back to its length before the call (a failed step leaves it unchanged),
// and a cache overflow (std::length_error from the cache's own check, which
// the glue would otherwise report as out of memory) becomes
// std::invalid_argument with the cache's message and a hint.
template <typename Body>
auto WithCacheRollback(KVCache& cache, size_t adding, Body&& body) {
  const size_t before = cache.length();
  const bool fits = before + adding <= cache.max_length();
  try {
    return body();
  } catch (const std::length_error& e) {
    if (cache.length() > before) cache.Truncate(before);
    if (!fits) {
      throw std::invalid_argument(std::string(e.what()) +
                                  "; create the cache with a larger maxLength, "
                                  "or truncate() or reset() it");
    }
    throw;
  } catch (...) {
    if (cache.length() > before) cache.Truncate(before);
    throw;
  }
}

}  // namespace simd_attention::bindings
