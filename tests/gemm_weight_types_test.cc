// The GEMM of every kernel table on packed weights held as float16,
// bfloat16 and int8 (per-column scales): against a double product of the
// weights as the storage type holds them (each rounded to 11 or 8
// significant bits, or q * scale), so only float32 accumulation error is
// allowed; at a decode row, a short tile and a bottom edge, over more than a
// K block, with right edges, a slice of packed rows and a bias.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "dispatch/dispatch.h"
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
        std::vector<float> packed(PackedFloats(t, rows, n));
        t.pack_b(to_pack.data(), rows, n, packed.data());
        std::vector<char> narrow(packed.size() * WeightBytes(type));
        NarrowPacked(packed.data(), packed.size(), type, narrow.data());
        std::vector<float> packed_bias(PackedFloats(t, 1, n)), packed_scales(PackedFloats(t, 1, n));
        t.pack_b(bias.data(), 1, n, packed_bias.data());
        t.pack_b(scales.data(), 1, n, packed_scales.data());
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

INSTANTIATE_ON_EVERY_TABLE(GemmWeightTypes);

}  // namespace
}  // namespace simd_attention::testing
