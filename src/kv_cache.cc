#include "simd_attention/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "checked_size.h"
#include "validate.h"

namespace simd_attention {
namespace {

// Copies n rows of `heads` x d floats into rows padded to d_pad (pad stays 0).
void PadRows(const float* from, size_t n, size_t heads, size_t d, size_t d_pad,
             float* to) {
  for (size_t r = 0; r < n * heads; ++r) std::copy_n(from + r * d, d, to + r * d_pad);
}

void UnpadRows(const float* from, size_t n, size_t heads, size_t d,
               size_t d_pad, float* to) {
  for (size_t r = 0; r < n * heads; ++r) std::copy_n(from + r * d_pad, d, to + r * d);
}

}  // namespace

KVCache::KVCache(const KVLayout& layout, size_t batch, size_t max_length,
                 const ArgNames& names)
    : layout_(layout), names_(&names), batch_(batch), max_length_(max_length) {
  CheckPositive("batch", batch);
  CheckPositive(names.max_length, max_length);
  const size_t keys = CheckedCount(
      "KV cache keys",
      {{"batch", batch}, {names.max_length, max_length}, {"padded key row", layout.key_row()}});
  const size_t values = CheckedCount("KV cache values", {{"batch", batch},
                                                         {names.max_length, max_length},
                                                         {"padded value row", layout.value_row()}});
  k_.assign(keys, 0.0f);
  v_.assign(values, 0.0f);
}

PrecomputedKV::PrecomputedKV(const KVLayout& layout, size_t batch, size_t tokens)
    : layout_(layout), batch_(batch), tokens_(tokens) {
  k_.resize(CheckedCount("precomputed keys", {{"memory.batch * memory.tokens", batch * tokens},
                                              {"padded key row", layout.key_row()}}));
  v_.resize(CheckedCount("precomputed values",
                         {{"memory.batch * memory.tokens", batch * tokens},
                          {"padded value row", layout.value_row()}}));
}

void KVCache::CheckRoom(size_t n) const {
  if (n > max_length_ - length_) {
    throw std::length_error("KV cache full: holds " + std::to_string(length_) + " of " +
                            std::to_string(max_length_) + " tokens, cannot add " +
                            std::to_string(n) + "; create the cache with a larger " +
                            names_->max_length + ", or truncate or reset it");
  }
}

void KVCache::Append(std::span<const float> keys, std::span<const float> values,
                     size_t n) {
  const KVLayout& l = layout_;
  CheckLength("keys", keys.size(), {batch_, n, l.heads * l.dk});
  CheckLength("values", values.size(), {batch_, n, l.heads * l.dv});
  CheckFinite("keys", keys);
  CheckFinite("values", values);
  CheckRoom(n);
  for (size_t b = 0; b < batch_; ++b) {
    PadRows(keys.data() + b * n * l.heads * l.dk, n, l.heads, l.dk, l.dk_pad,
            key_row(b, length_));
    PadRows(values.data() + b * n * l.heads * l.dv, n, l.heads, l.dv, l.dv_pad,
            value_row(b, length_));
  }
  length_ += n;
  max_abs_key_ = std::max(max_abs_key_, MaxAbs(keys));
}

void KVCache::Append(const Tensor3& keys, const Tensor3& values) {
  const KVLayout& l = layout_;
  CheckEqual("keys.batch", keys.batch, batch_, "batch of the KV cache");
  CheckEqual("keys.features", keys.features, l.heads * l.dk, "heads * key head width");
  CheckEqual("values.batch", values.batch, batch_, "batch of the KV cache");
  CheckEqual("values.tokens", values.tokens, keys.tokens, "keys.tokens");
  CheckEqual("values.features", values.features, l.heads * l.dv, "heads * value head width");
  Append(keys.data, values.data, keys.tokens);
}

std::vector<float> KVCache::Keys() const {
  const KVLayout& l = layout_;
  std::vector<float> out(batch_ * length_ * l.heads * l.dk);
  for (size_t b = 0; b < batch_; ++b) {
    UnpadRows(k_.data() + b * max_length_ * l.key_row(), length_, l.heads, l.dk,
              l.dk_pad, out.data() + b * length_ * l.heads * l.dk);
  }
  return out;
}

std::vector<float> KVCache::Values() const {
  const KVLayout& l = layout_;
  std::vector<float> out(batch_ * length_ * l.heads * l.dv);
  for (size_t b = 0; b < batch_; ++b) {
    UnpadRows(v_.data() + b * max_length_ * l.value_row(), length_, l.heads,
              l.dv, l.dv_pad, out.data() + b * length_ * l.heads * l.dv);
  }
  return out;
}

void KVCache::Truncate(size_t n) {
  if (n > length_) {
    throw std::invalid_argument("n: expected at most the cache's length (" +
                                std::to_string(length_) + "), got " + std::to_string(n));
  }
  length_ = n;
}

}  // namespace simd_attention
