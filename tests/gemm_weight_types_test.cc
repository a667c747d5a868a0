// The GEMM of every kernel table on packed weights held as float16,
// bfloat16 and int8 (per-column scales): against a double product of the
// weights as the storage type holds them (each rounded to 11 or 8
// significant bits, or q * scale), so only float32 accumulation error is
// allowed; at a decode row, a short tile and a bottom edge, over more than a
// K block, with right edges, a slice of packed rows and a bias.
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

// to_pack [rows, n] packed as the table's panels in `type` (int8: whole K
// pairs, interleaved, as PackWeights does).
std::vector<char> PackNarrow(const KernelTable& t, std::vector<float> to_pack, size_t rows,
                             size_t n, WeightType type) {
  const size_t panel_rows = PanelRows(type, rows);
  to_pack.resize(panel_rows * n);
  std::vector<float> packed(PackedFloats(t, panel_rows, n));
  t.pack_b(to_pack.data(), panel_rows, n, packed.data());
  if (type == WeightType::kInt8) InterleaveRowPairs(packed.data(), packed.size(), t.panel_width);
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
  for (const WeightType type : {WeightType::kF16, WeightType::kBF16, WeightType::kInt8}) {
    for (const size_t m : {size_t{1}, size_t{3}, tile + 1}) {
      for (const size_t n : {2 * panel + (panel + 1) / 2, 3 * panel}) {
        const size_t k = kb + 5, k_begin = m == 3 ? 7 : 0, rows = k_begin + k;
        SCOPED_TRACE("type " + std::to_string(int(type)) + ", " + std::to_string(m) + "x" +
                     std::to_string(k) + "x" + std::to_string(n));
        const std::vector<float> a = RandomVector(m * k, 1.0f, rng);
        const std::vector<float> w = RandomVector(rows * n, 1.0f, rng);
        const std::vector<float> bias = RandomVector(n, 1.0f, rng);
        // The weights as stored, in double.
        std::vector<float> scales(n, 1.0f), to_pack = w;
        std::vector<double> stored(rows * n);
        if (type == WeightType::kInt8) {
          Int8ColumnScales(w.data(), rows, n, scales.data());
          QuantizeColumns(w.data(), rows, n, scales.data(), to_pack.data());
        }
        for (size_t i = 0; i < rows * n; ++i) {
          stored[i] = type == WeightType::kF16    ? RoundSignificant(w[i], 11)
                      : type == WeightType::kBF16 ? RoundSignificant(w[i], 8)
                                                  : double(to_pack[i]) * scales[i % n];
        }
        const std::vector<char> narrow = PackNarrow(t, to_pack, rows, n, type);
        const std::vector<float> packed_bias = Packed(t, bias), packed_scales = Packed(t, scales);
        std::vector<float> out(m * n);
        t.gemm({.a = a.data(), .lda = k, .m = m, .k = k, .packed_b = narrow.data(),
                .packed_rows = rows, .k_begin = k_begin, .n = n,
                .packed_bias = packed_bias.data(), .c = out.data(), .ldc = n,
                .weight_type = type,
                .packed_scales = type == WeightType::kInt8 ? packed_scales.data() : nullptr});
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

// The integer kernel for int8 weights and few rows (int8_gemv.h), as RunGemm
// picks it, against a double product of the original activations and the
// stored weights q * scale. Its int32 sums are exact; on top of the float32
// roundings (conversion, scales, bias: the bound above) it quantizes each
// activation to a multiple of its row's step max |a| / 32767, half a step
// off at most: max |a| * 2^-16 * 65536 / 65534, so a dot product of length
// K errs by at most that times sum_k |w_kj| more. m = 5 takes the float
// micro-kernel (RunGemm's switch) and meets the same bound. Cases: m = 1..5
// with a row of zeros, an odd K and an odd k_begin (A's first column in the
// second row of a K pair), right edges, and K over two int32 chunks
// (2 * kInt8ChunkPairs rows each) and, for m <= 4, over two groups of
// held activation words (kInt8WordPairs pairs), with columns of +127 and -128 (a given
// checkpoint may hold -128) against activations all at the row's maximum:
// each chunk's sum is then the largest an int32 lane must hold.
TEST_P(GemmWeightTypes, Int8GemvMatchesADoubleProductWithinItsActivationRounding) {
  const KernelTable& t = table();
  const size_t panel = t.panel_width;
  std::mt19937 rng(61);
  const size_t long_k = 4 * kInt8ChunkPairs + 3;
  // Two groups of held words: the integer kernel's rows only (the float
  // micro-kernel's float32 sums over that K outgrow the bound above).
  const size_t held_k = 2 * (kInt8WordPairs + kInt8ChunkPairs) + 3;
  for (const size_t k : {size_t{7}, long_k, held_k}) {
    for (const size_t m : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}}) {
      if (k == held_k && m > kInt8GemvMaxRows) continue;
      const size_t n = 2 * panel + (panel + 1) / 2, k_begin = m % 2 == 1 ? 3 : 0;
      const size_t rows = k_begin + k + 1;
      SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                   ", k_begin " + std::to_string(k_begin));
      std::vector<float> a = RandomVector(m * k, 1.0f, rng);
      if (m >= 2) std::fill(a.begin() + k, a.begin() + 2 * k, 0.0f);  // a row of zeros
      const std::vector<float> w = RandomVector(rows * n, 1.0f, rng);
      const std::vector<float> bias = RandomVector(n, 1.0f, rng);
      std::vector<float> scales(n), q(rows * n);
      Int8ColumnScales(w.data(), rows, n, scales.data());
      QuantizeColumns(w.data(), rows, n, scales.data(), q.data());
      if (k == long_k) {
        std::fill(a.begin(), a.begin() + k, 0.75f);
        for (size_t kk = 0; kk < rows; ++kk) {
          q[kk * n] = 127;
          q[kk * n + 1] = -128;
        }
      }
      const std::vector<char> narrow = PackNarrow(t, q, rows, n, WeightType::kInt8);
      const std::vector<float> packed_bias = Packed(t, bias), packed_scales = Packed(t, scales);
      const GemmArgs args{.a = a.data(), .lda = k, .m = m, .k = k, .packed_b = narrow.data(),
                          .packed_rows = rows, .k_begin = k_begin, .n = n,
                          .packed_bias = packed_bias.data(), .ldc = n,
                          .weight_type = WeightType::kInt8, .packed_scales = packed_scales.data()};
      std::vector<float> out(m * n), kernel(m * n);
      GemmArgs g = args;
      g.c = out.data();
      RunGemm(t, g);
      g.c = kernel.data();
      (m <= kInt8GemvMaxRows ? t.int8_gemv : t.gemm)(g);
      EXPECT_EQ(out, kernel) << "RunGemm took the other kernel";
      for (size_t i = 0; i < m; ++i) {
        double largest = 0;
        for (size_t kk = 0; kk < k; ++kk) largest = std::max(largest, double(std::fabs(a[i * k + kk])));
        for (size_t j = 0; j < n; ++j) {
          double sum = bias[j], magnitude = std::fabs(bias[j]), weights = 0;
          for (size_t kk = 0; kk < k; ++kk) {
            const double stored = double(q[(k_begin + kk) * n + j]) * scales[j];
            sum += double(a[i * k + kk]) * stored;
            magnitude += std::fabs(double(a[i * k + kk]) * stored);
            weights += std::fabs(stored);
          }
          const double bound = 8 * magnitude * std::numeric_limits<float>::epsilon() +
                               largest * 0x1p-16 * 65536.0 / 65534.0 * weights;
          ASSERT_NEAR(out[i * n + j], sum, bound) << "row " << i << ", column " << j;
        }
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(GemmWeightTypes);

}  // namespace
}  // namespace simd_attention::testing
