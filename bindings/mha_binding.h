// The Embind class behind MultiHeadAttention of web/index.js, declared for
// the bindings that take one as an argument (training_binding.cc); defined
// and registered in mha_binding.cc.
#pragma once

#include "glue.h"
#include "held_bytes.h"
#include "kv_binding.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::bindings {

class MhaBinding : public Owned<MultiHeadAttention> {
 public:
  explicit MhaBinding(const val& config);

  // The resolved config and the kernels in use.
  val info() const;

  val setWeights(const val& w);

  // `state` uses the state_dict names with '.' replaced by '_'
  // (out_proj_weight, out_proj_bias); web/index.js normalises the keys. The
  // transposes are the C++ API's (src/pytorch_weights.h).
  val setWeightsFromPyTorch(const val& state);

  // key undefined: self-attention; value undefined: value = key. Each input
  // is copied into the heap once.
  val forward(const val& query, const val& key, const val& value, const val& options);

  // Cross-attention on K/V projected by precomputeKeyValue.
  val forwardPrecomputed(const val& query, const PrecomputedBinding& kv, const val& options);

  // Fills `into` (a fresh PrecomputedBinding) with memory's projected K/V.
  val precomputeKeyValue(PrecomputedBinding& into, const val& memory, const val& mask);

  // Fills `into` (a fresh KVCacheBinding) with an empty cache.
  val createKVCache(KVCacheBinding& into, size_t batch, size_t max_length);

  // n new tokens x against the cache; a failed call leaves the cache as it was.
  val forwardIncremental(const val& x, KVCacheBinding& cache, const val& options);

 private:
  void CountWeights();

  HeldBytes weight_bytes_{Held::kWeights};
};

}  // namespace simd_attention::bindings
