#include "simd_attention/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "kernels/weight_packing.h"
#include "checks/validate.h"
#include "training/training_module.h"

namespace simd_attention {
namespace {

// Copies n rows of `heads` x d floats into rows padded to d_pad (pad stays 0).
void PadRows(const float* from, size_t n, size_t heads, size_t d, size_t d_pad,
             float* to) {
  for (size_t r = 0; r < n * heads; ++r) std::copy_n(from + r * d, d, to + r * d_pad);
}

// n token-major padded rows of every batch item ([B, n, heads * d_pad])
// into `rows` at token `t0` of each head's rows (strides s), as stored.
void ScatterRows(const float* from, size_t batch, size_t n, size_t heads, size_t d_pad,
                 const KVStrides& s, size_t t0, KVRows& rows) {
  for (size_t b = 0; b < batch; ++b) {
    for (size_t t = 0; t < n; ++t) {
      for (size_t h = 0; h < heads; ++h) {
        rows.Store(b * s.batch + h * s.head + (t0 + t) * s.row,
                   from + ((b * n + t) * heads + h) * d_pad, d_pad);
      }
    }
  }
}

}  // namespace

KVRows::KVRows(WeightType type, size_t elements, size_t row) : type_(type), row_(row) {
  if (type == WeightType::kF32) {
    f32_.assign(elements, 0.0f);
  } else {
    narrow_.resize(elements * WeightBytes(type));
  }
  // Scale 1: a row never stored reads as zeros, as the other types' do.
  if (HeldType(type) == WeightType::kInt8) scales_.assign(elements / row, 1.0f);
}

const void* KVRows::at(size_t element) const {
  return type_ == WeightType::kF32 ? static_cast<const void*>(f32_.data() + element)
                                   : narrow_.data() + element * WeightBytes(type_);
}

void KVRows::Store(size_t at, const float* values, size_t count) {
  if (type_ == WeightType::kF32) {
    std::copy_n(values, count, f32_.data() + at);
  } else if (HeldType(type_) == WeightType::kInt8) {
    auto* q = reinterpret_cast<int8_t*>(narrow_.data()) + at;
    for (size_t r = 0; r < count; r += row_) {
      QuantizeInt8Row(values + r, row_, q + r, scales_.data() + (at + r) / row_);
    }
  } else {
    NarrowPacked(values, count, type_, narrow_.data() + at * WeightBytes(type_));
  }
}

void KVRows::Load(size_t at, size_t count, float* out) const {
  if (type_ == WeightType::kF32) {
    std::copy_n(f32_.data() + at, count, out);
  } else if (HeldType(type_) == WeightType::kInt8) {
    DequantizeInt8Rows(reinterpret_cast<const int8_t*>(narrow_.data()) + at, scale_at(at), count,
                       row_, out);
  } else {
    const auto* bits = reinterpret_cast<const uint16_t*>(narrow_.data() + at * WeightBytes(type_));
    WidenBits(bits, count, type_, out);
  }
}

KVCache::KVCache(const KVLayout& layout, size_t batch, size_t max_length, WeightType type,
                 const ArgNames& names)
    : layout_(layout), names_(&names), batch_(batch), max_length_(max_length) {
  CheckPositive("batch", batch);
  CheckPositive(names.max_length, max_length);
  // Counted in the cache's own elements: a 16-bit cache holds twice the
  // tokens a float one does in the same memory; int8, with its float scale
  // per row, nearly four times.
  const size_t bytes = WeightBytes(type);
  const size_t keys = CheckedCount(
      "KV cache keys",
      {{"batch", batch}, {names.max_length, max_length}, {"padded key row", layout.key_row()}},
      bytes);
  const size_t values = CheckedCount("KV cache values",
                                     {{"batch", batch},
                                      {names.max_length, max_length},
                                      {"padded value row", layout.value_row()}},
                                     bytes);
  if (type == WeightType::kInt8) {
    // Two scales (key and value) per head and token.
    CheckedCount("KV cache scales", {{"batch", batch},
                                     {names.max_length, max_length},
                                     {"2 * heads", 2 * layout.heads}});
  }
  k_ = KVRows(type, keys, layout.dk_pad);
  v_ = KVRows(type, values, layout.dv_pad);
}

PrecomputedKV::PrecomputedKV(const KVLayout& layout, size_t batch, size_t tokens,
                             WeightType type)
    : layout_(layout), batch_(batch), tokens_(tokens) {
  if (type == WeightType::kInt8) {
    CheckedCount("precomputed key and value scales",
                 {{"memory.batch * memory.tokens", batch * tokens},
                  {"2 * heads", 2 * layout.heads}});
  }
  k_ = KVRows(type,
              CheckedCount("precomputed keys",
                           {{"memory.batch * memory.tokens", batch * tokens},
                            {"padded key row", layout.key_row()}},
                           WeightBytes(type)),
              layout.dk_pad);
  v_ = KVRows(type,
              CheckedCount("precomputed values",
                           {{"memory.batch * memory.tokens", batch * tokens},
                            {"padded value row", layout.value_row()}},
                           WeightBytes(type)),
              layout.dv_pad);
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
  const std::string config_name = ConfigName(names_->cache_type);
  CheckStorable("keys", keys, type(), config_name);
  CheckStorable("values", values, type(), config_name);
  CheckRoom(n);
  // Padded rows, then stored in the cache's type.
  std::vector<float> padded_keys(batch_ * n * l.key_row(), 0.0f),
      padded_values(batch_ * n * l.value_row(), 0.0f);
  PadRows(keys.data(), batch_ * n, l.heads, l.dk, l.dk_pad, padded_keys.data());
  PadRows(values.data(), batch_ * n, l.heads, l.dv, l.dv_pad, padded_values.data());
  StoreRows(padded_keys.data(), padded_values.data(), n);
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

void KVCache::StoreRows(const float* keys, const float* values, size_t n) {
  const KVLayout& l = layout_;
  ScatterRows(keys, batch_, n, l.heads, l.dk_pad, key_strides(), length_, k_);
  ScatterRows(values, batch_, n, l.heads, l.dv_pad, value_strides(), length_, v_);
}

namespace {

// Rows [0, length) of every head of every batch item of `rows` (strides s)
// as [B, length, heads * d] floats.
std::vector<float> Unpadded(const KVRows& rows, const KVStrides& s, size_t batch, size_t length,
                            size_t heads, size_t d) {
  std::vector<float> out(batch * length * heads * d);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t t = 0; t < length; ++t) {
      for (size_t h = 0; h < heads; ++h) {
        rows.Load(b * s.batch + h * s.head + t * s.row, d,
                  out.data() + ((b * length + t) * heads + h) * d);
      }
    }
  }
  return out;
}

}  // namespace

std::vector<float> KVCache::Keys() const {
  return Unpadded(k_, key_strides(), batch_, length_, layout_.heads, layout_.dk);
}

std::vector<float> KVCache::Values() const {
  return Unpadded(v_, value_strides(), batch_, length_, layout_.heads, layout_.dv);
}

void KVCache::Truncate(size_t n) {
  if (n > length_) {
    throw std::invalid_argument("n: expected at most the cache's length (" +
                                std::to_string(length_) + "), got " + std::to_string(n));
  }
  length_ = n;
}

}  // namespace simd_attention
