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
// widens a key block at a time, or int8 with a float scale per row.
//
// int8: each row of one head (the d_k keys, or d_v values, of one token and
// head; `row` elements with its padding) is quantized symmetrically on its
// own: scale = max |x| / 127 (at least the smallest positive float, so a
// row of tiny subnormals divides by no 0; one ulp less where 127 times it
// would overflow, so every value held is finite; 1 for a row of zeros), q =
// x / scale rounded to nearest even, within [-127, 127]. The row holds
// q * scale: each element within scale / 2 = max |row| / 254 of the float
// given (the bound tests/kv_cache_test.cc checks, relative to a float32
// cache), and zeros stay exact. The kernels read q in registers and apply
// the scale once per key after its dot product, and fold it into p_j in
// P V.
class KVRows {
 public:
  KVRows() = default;
  // `elements` zeros, in rows of `row` elements (the scales' unit for int8).
  KVRows(WeightType type, size_t elements, size_t row);
  WeightType type() const { return type_; }
  size_t bytes() const {
    return f32_.size() * sizeof(float) + narrow_.size() + scales_.size() * sizeof(float);
  }
  // Element `at`, as the kernels take it (AttentionArgs::k).
  const void* at(size_t element) const;
  // int8: the scale of the row holding element `at` (a row's first: at a
  // multiple of `row`); nullptr for the other types.
  const float* scale_at(size_t element) const {
    return scales_.empty() ? nullptr : scales_.data() + element / row_;
  }
  // Stores `count` floats from element `at` on, rounded to the type (the
  // caller has checked their range: CheckStorable). int8: whole rows (at
  // and count multiples of `row`).
  void Store(size_t at, const float* values, size_t count);
  // Elements [at, at + count) as floats (int8: from a row's first element).
  void Load(size_t at, size_t count, float* out) const;

 private:
  WeightType type_ = WeightType::kF32;
  size_t row_ = 1;
  AlignedVector<float> f32_;
  AlignedVector<uint8_t> narrow_;  // 16-bit or int8 elements, as bytes (as PackedMatrix::narrow)
  AlignedVector<float> scales_;    // int8: one per row
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
