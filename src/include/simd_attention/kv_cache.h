// Projected keys and values kept between calls: the growing cache of
// autoregressive self-attention, and the fixed K/V of an encoder memory that
// every decoding step's cross-attention reuses. Both are created by a
// MultiHeadAttention and hold its padded per-head layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "simd_attention/aligned_vector.h"
#include "simd_attention/arg_names.h"
#include "simd_attention/tensor.h"
#include "simd_attention/weight_type.h"

namespace simd_attention {

// Layout of projected K/V rows: H heads of d (keys) or d_v (values) floats,
// each padded to d_pad with zeros so that kernels see whole vectors.
struct KVLayout {
  size_t heads = 0;
  size_t dk = 0, dk_pad = 0;
  size_t dv = 0, dv_pad = 0;
  size_t key_row() const { return heads * dk_pad; }
  size_t value_row() const { return heads * dv_pad; }
};

// Where rows of keys or values lie: element i of head h's row t of batch
// item b at b * batch + h * head + t * row + i.
struct KVStrides {
  size_t batch, head, row;
};

// Rows of projected keys or values as a cache holds them: float32, or
// float16/bfloat16 (MhaConfig::cache_type), which the attention kernel
// widens a key block at a time.
class KVRows {
 public:
  KVRows() = default;
  KVRows(WeightType type, size_t elements);  // zeros
  WeightType type() const { return type_; }
  size_t bytes() const { return f32_.size() * sizeof(float) + narrow_.size(); }
  // Element `at`, as the kernels take it (AttentionArgs::k).
  const void* at(size_t element) const;
  // Stores `count` floats from element `at` on, rounded to the type (the
  // caller has checked their range: CheckStorable).
  void Store(size_t at, const float* values, size_t count);
  // Elements [at, at + count) as floats.
  void Load(size_t at, size_t count, float* out) const;

 private:
  WeightType type_ = WeightType::kF32;
  AlignedVector<float> f32_;
  AlignedVector<uint8_t> narrow_;  // 16-bit elements, as bytes (as PackedMatrix::narrow)
};

class KVCache {
 public:
  size_t batch() const { return batch_; }
  size_t max_length() const { return max_length_; }
  size_t length() const { return length_; }

  // Appends n already-projected tokens: keys [B, n, H*d_k], values
  // [B, n, H*d_v], token-major. Throws std::invalid_argument on a wrong
  // length and std::length_error when the cache would overflow.
  void Append(std::span<const float> keys, std::span<const float> values,
              size_t n);
  // The same from tensors: keys [B, n, H*d_k], values [B, n, H*d_v], their
  // shapes checked against the cache's.
  void Append(const Tensor3& keys, const Tensor3& values);
  // What is cached, [B, length, H*d_k] and [B, length, H*d_v].
  std::vector<float> Keys() const;
  std::vector<float> Values() const;
  // Head-major: a head's keys (values) of a batch item are max_length
  // padded rows one after another, which a decoding step's dot products
  // and P V loop read as one stream.
  KVStrides key_strides() const {
    return {layout_.heads * max_length_ * layout_.dk_pad, max_length_ * layout_.dk_pad,
            layout_.dk_pad};
  }
  KVStrides value_strides() const {
    return {layout_.heads * max_length_ * layout_.dv_pad, max_length_ * layout_.dv_pad,
            layout_.dv_pad};
  }
  // Rolls back to the first n tokens (n <= length).
  void Truncate(size_t n);
  void Reset() {
    length_ = 0;
    max_abs_key_ = 0;
  }
  WeightType type() const { return k_.type(); }
  // Bytes held for keys and values (all max_length tokens).
  size_t bytes() const { return k_.bytes() + v_.bytes(); }

 private:
  friend class MultiHeadAttention;
  KVCache(const KVLayout& layout, size_t batch, size_t max_length, WeightType type,
          const ArgNames& names);
  // Throws std::length_error unless n more tokens fit.
  void CheckRoom(size_t n) const;
  // Stores n tokens past the length from padded token-major rows, keys [B,
  // n, key_row] and values [B, n, value_row] (rounded to the cache's type;
  // the caller has checked them); the length stays.
  void StoreRows(const float* keys, const float* values, size_t n);

  KVLayout layout_;
  const ArgNames* names_;  // for the messages
  size_t batch_, max_length_, length_ = 0;
  // Largest |k| appended since the last Reset (kept, not recomputed, after a
  // Truncate): bounds the attention scores without a pass over the cache.
  double max_abs_key_ = 0;
  KVRows k_, v_;  // [B, H, max_length, padded head] (key_strides, value_strides)
};

// Cross-attention keys and values of one memory, projected once.
class PrecomputedKV {
 public:
  size_t batch() const { return batch_; }
  size_t tokens() const { return tokens_; }
  WeightType type() const { return k_.type(); }
  size_t bytes() const { return k_.bytes() + v_.bytes(); }

 private:
  friend class MultiHeadAttention;
  PrecomputedKV(const KVLayout& layout, size_t batch, size_t tokens, WeightType type);

  KVLayout layout_;
  size_t batch_, tokens_;
  double max_abs_key_ = 0;             // largest |k|
  KVRows k_, v_;                       // [B, tokens, padded row]
  std::vector<uint8_t> key_padding_;  // [B, tokens] or empty
};

}  // namespace simd_attention
