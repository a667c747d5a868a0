// The Embind classes behind TransformerBlock and TransformerStack of
// web/index.js, declared for the bindings that take one as an argument
// (training_binding.cc: their backward and the optimizers' step); defined
// and registered in block_binding.cc.
#pragma once

#include "glue.h"
#include "held_bytes.h"
#include "kv_binding.h"
#include "simd_attention/transformer_block.h"

namespace simd_attention::bindings {

class BlockBinding : public Owned<TransformerBlock> {
 public:
  explicit BlockBinding(const val& config);
  val info();
  val setWeights(const val& w);
  // memory: a tensor or undefined; options.training keeps what Backward needs.
  val forward(const val& x, const val& memory, const val& options);
  // The training module refuses KV caches (MultiHeadAttention's refusal).
  val createKVCache(KVCacheBinding& into, size_t batch, size_t max_length);
  val forwardIncremental(const val& x, KVCacheBinding& cache, const val& options);

 private:
  HeldBytes weight_bytes_{Held::kWeights};
};

class StackBinding : public Owned<TransformerStack> {
 public:
  explicit StackBinding(const val& config);
  val info();
  // {layers: [{sublayers}], finalNorm?: {gamma, beta?}}
  val setWeights(const val& w);
  // options.training keeps what Backward needs.
  val forward(const val& x, const val& options);
  // into: a JS array of numLayers empty KVCacheBinding, filled in order.
  // The training module refuses KV caches (TransformerStack's refusal).
  val createKVCaches(const val& into, size_t batch, size_t max_length);
  // caches: a JS array of KVCacheBinding, one per layer.
  val forwardIncremental(const val& x, const val& caches, const val& options);

 private:
  HeldBytes weight_bytes_{Held::kWeights};
};

}  // namespace simd_attention::bindings
