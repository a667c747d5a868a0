// Header-only helpers for the KV-cache and layer tests: slicing token ranges
// out of [B, T, F] tensors and attention weights, so an incremental run can
// be compared with the matching part of a full one, and an exception matcher
// that checks the message names what went wrong.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"

namespace simd_attention::testing {

// Tokens begin..begin+n-1 of every batch item of a [batch, tokens, features]
// row-major array, as [batch, n, features].
inline std::vector<float> TokenRows(std::span<const float> data, size_t batch,
                                    size_t tokens, size_t features,
                                    size_t begin, size_t n) {
  std::vector<float> out;
  out.reserve(batch * n * features);
  for (size_t b = 0; b < batch; ++b) {
    const auto first = data.begin() + (b * tokens + begin) * features;
    out.insert(out.end(), first, first + n * features);
  }
  return out;
}

// The same slice of a Tensor3, owning its data so it can be fed to the API.
inline OwnedTensor Tokens(const Tensor3& t, size_t begin, size_t n) {
  return {t.batch, n, t.features,
          TokenRows(t.data, t.batch, t.tokens, t.features, begin, n)};
}

// Columns begin..begin+n-1 of a [batch, tokens] key padding mask: what a
// cache holding `begin + n` tokens needs is the mask's first begin+n columns.
inline std::vector<uint8_t> MaskPrefix(std::span<const uint8_t> mask,
                                       size_t batch, size_t tokens,
                                       size_t n) {
  std::vector<uint8_t> out;
  for (size_t b = 0; b < batch; ++b) {
    out.insert(out.end(), mask.begin() + b * tokens,
               mask.begin() + b * tokens + n);
  }
  return out;
}

// Query rows begin..begin+n-1 of full causal attention weights
// [batch, heads, T, T], keeping keys 0..begin+n-1 only: what an incremental
// step over those queries reports as [batch, heads, n, begin+n]. Under the
// causal mask the dropped keys have probability 0.
inline std::vector<float> CausalWeightRows(const MhaResult& full, size_t heads,
                                           size_t begin, size_t n) {
  const size_t t = full.tq, keys = begin + n;
  std::vector<float> out;
  out.reserve(full.batch * heads * n * keys);
  for (size_t bh = 0; bh < full.batch * heads; ++bh) {
    for (size_t i = begin; i < begin + n; ++i) {
      const auto row = full.attn_weights.begin() + (bh * t + i) * t;
      out.insert(out.end(), row, row + keys);
    }
  }
  return out;
}

}  // namespace simd_attention::testing
