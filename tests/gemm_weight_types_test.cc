// The GEMM of every kernel table on packed weights held as float16 and
// bfloat16: against a double product of the weights as the storage type
// holds them (each rounded to 11 or 8 significant bits), so only float32
// accumulation error is allowed; at a decode row, a short tile and a bottom
// edge, over more than a K block, with right edges, a slice of packed rows
// and a bias. int8 weights, which the kernels multiply in integers, are
// int8_gemm_test.cc's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "dispatch/dispatch.h"
#include "dispatch/kernel_table.h"
#include "kernels/weight_packing.h"
#include "random_mha.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// x rounded to `bits` significant bits, to nearest even.
double RoundSignificant(double x, int bits) {
  if (x == 0) return 0;
  int e;
  std::frexp(x, &e);
  return std::ldexp(std::nearbyint(std::ldexp(x, bits - e)), e - bits);
}

// to_pack [rows, n] packed as the table's panels in `type`.
std::vector<char> PackNarrow(const KernelTable& t, const std::vector<float>& to_pack, size_t rows,
                             size_t n, WeightType type) {
  std::vector<float> packed(PackedFloats(t, rows, n));
  t.pack_b(to_pack.data(), rows, n, packed.data());
  std::vector<char> narrow(packed.size() * WeightBytes(type));
  NarrowPacked(packed.data(), packed.size(), type, narrow.data());
  return narrow;
}

std::vector<float> Packed(const KernelTable& t, const std::vector<float>& row) {
  std::vector<float> packed(PackedFloats(t, 1, row.size()));
  t.pack_b(row.data(), 1, row.size(), packed.data());
  return packed;
}

class GemmWeightTypes : public TableTest {};

TEST_P(GemmWeightTypes, MatchesADoubleProductOfTheStoredWeights) {
  const KernelTable& t = table();
  const size_t tile = t.gemm_tile_rows, kb = t.gemm_k_block, panel = t.panel_width;
  std::mt19937 rng(59);
  for (const WeightType type : {WeightType::kF16, WeightType::kBF16}) {
    for (const size_t m : {size_t{1}, size_t{3}, tile + 1}) {
      for (const size_t n : {2 * panel + (panel + 1) / 2, 3 * panel}) {
        const size_t k = kb + 5, k_begin = m == 3 ? 7 : 0, rows = k_begin + k;
        SCOPED_TRACE("type " + std::to_string(int(type)) + ", " + std::to_string(m) + "x" +
                     std::to_string(k) + "x" + std::to_string(n));
        const std::vector<float> a = RandomVector(m * k, 1.0f, rng);
        const std::vector<float> w = RandomVector(rows * n, 1.0f, rng);
        const std::vector<float> bias = RandomVector(n, 1.0f, rng);
        // The weights as stored, in double.
        std::vector<double> stored(rows * n);
        for (size_t i = 0; i < rows * n; ++i) {
          stored[i] = RoundSignificant(w[i], type == WeightType::kF16 ? 11 : 8);
        }
        const std::vector<char> narrow = PackNarrow(t, w, rows, n, type);
        const std::vector<float> packed_bias = Packed(t, bias);
        std::vector<float> out(m * n);
        t.gemm({.a = a.data(), .lda = k, .m = m, .k = k, .packed_b = narrow.data(),
                .packed_rows = rows, .k_begin = k_begin, .n = n,
                .packed_bias = packed_bias.data(), .c = out.data(), .ldc = n,
                .weight_type = type});
        for (size_t i = 0; i < m; ++i) {
          for (size_t j = 0; j < n; ++j) {
            double sum = bias[j], magnitude = std::fabs(bias[j]);
            for (size_t kk = 0; kk < k; ++kk) {
              const double p = double(a[i * k + kk]) * stored[(k_begin + kk) * n + j];
              sum += p;
              magnitude += std::fabs(p);
            }
            ASSERT_NEAR(out[i * n + j], sum, 8 * magnitude * std::numeric_limits<float>::epsilon())
                << "row " << i << ", column " << j;
          }
        }
      }
    }
  }
}

// Every finite value of a 16-bit type as its float (infinities and NaN are
// never stored): float16's both zeros, subnormals and normals up to 65504;
// bfloat16's, float32's top halves.
std::vector<float> EveryFinite16BitValue(WeightType type) {
  std::vector<float> values;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if (type == WeightType::kBF16) {
      if (((bits >> 7) & 0xff) == 0xff) continue;
      const uint32_t wide = bits << 16;
      float f;
      std::memcpy(&f, &wide, 4);
      values.push_back(f);
      continue;
    }
    const uint32_t exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
    if (exponent == 0x1f) continue;
    const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24)
                                           : std::ldexp(1024 + mantissa, int(exponent) - 25);
    values.push_back(static_cast<float>(bits & 0x8000 ? -magnitude : magnitude));
  }
  return values;
}

// Every finite float16 and bfloat16 as a weight row times 1: each output is
// the widened value itself, which must be exact (wasm and SSE4 widen
// float16 with integer operations, kF16Form in gemm.h; AVX2 and AVX-512
// with vcvtph2ps; bfloat16 as float32's top half). One row, the decode
// shape, and 3 rows, the widening slice.
TEST_P(GemmWeightTypes, F16AndBF16WeightsWidenEveryFiniteValueExactly) {
  const KernelTable& t = table();
  for (const WeightType type : {WeightType::kF16, WeightType::kBF16}) {
    const std::vector<float> values = EveryFinite16BitValue(type);
    const size_t n = values.size();
    const std::vector<char> narrow = PackNarrow(t, values, 1, n, type);
    for (const size_t m : {size_t{1}, size_t{3}}) {
      const std::vector<float> a(m, 1.0f);
      std::vector<float> out(m * n);
      t.gemm({.a = a.data(), .lda = 1, .m = m, .k = 1, .packed_b = narrow.data(),
              .packed_rows = 1, .k_begin = 0, .n = n, .packed_bias = nullptr, .c = out.data(),
              .ldc = n, .weight_type = type, .packed_scales = nullptr});
      for (size_t i = 0; i < m * n; ++i) {
        ASSERT_EQ(out[i], values[i % n])
            << (type == WeightType::kF16 ? "f16" : "bf16") << " value " << i % n << " of " << m
            << " rows";
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(GemmWeightTypes);

}  // namespace
}  // namespace simd_attention::testing
