// The GEMM micro-kernel of every kernel table against a double-precision
// product, at the shapes its blocking is derived from: K across and beyond
// one K block (256 rows on 32-register targets, 512 on 16-register ones),
// row counts around every tile height (the near-equal split of 5 + 5 on
// AVX-512, remainders of one to three rows with split-K chains), column
// counts around the panel width, a slice of packed rows (k_begin, as the
// per-head output uses), row strides wider than the matrices, and a bias.
// The attention tests reach these paths only with small d_model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "dispatch/dispatch.h"
#include "random_mha.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

struct GemmCase {
  size_t m, k, n;
  size_t k_begin = 0;  // rows of the packed matrix skipped
  size_t extra_rows = 0;  // packed rows beyond k_begin + k
  bool bias = false;
  size_t lda_pad = 0, ldc_pad = 0;
};

std::string CaseName(const GemmCase& c) {
  std::string s = std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n);
  if (c.k_begin != 0 || c.extra_rows != 0) {
    s += "_rows" + std::to_string(c.k_begin) + "_" + std::to_string(c.extra_rows);
  }
  if (c.bias) s += "_bias";
  if (c.lda_pad != 0 || c.ldc_pad != 0) s += "_strided";
  return s;
}

void PrintTo(const GemmCase& c, std::ostream* os) { *os << CaseName(c); }

class Gemm : public ::testing::TestWithParam<GemmCase> {};

TEST_P(Gemm, EveryTableMatchesADoubleProduct) {
  const GemmCase& c = GetParam();
  std::mt19937 rng(static_cast<unsigned>(c.m * 1000003 + c.k * 1009 + c.n));
  const size_t rows = c.k_begin + c.k + c.extra_rows;  // of the packed matrix
  const size_t lda = c.k + c.lda_pad, ldc = c.n + c.ldc_pad;
  const std::vector<float> a = RandomVector(c.m * lda, 1.0f, rng);
  const std::vector<float> w = RandomVector(rows * c.n, 1.0f, rng);
  const std::vector<float> bias = RandomVector(c.n, 1.0f, rng);

  std::vector<double> expected(c.m * c.n);
  double scale = 0;  // sum of |products|: the size of the rounding to expect
  for (size_t i = 0; i < c.m; ++i) {
    for (size_t j = 0; j < c.n; ++j) {
      double sum = c.bias ? bias[j] : 0.0, magnitude = 0;
      for (size_t kk = 0; kk < c.k; ++kk) {
        const double p = double(a[i * lda + kk]) * w[(c.k_begin + kk) * c.n + j];
        sum += p;
        magnitude += std::fabs(p);
      }
      expected[i * c.n + j] = sum;
      scale = std::max(scale, magnitude);
    }
  }
  // float accumulation over k terms: a few ulps of the largest partial sums.
  const double tol = 8 * scale * std::numeric_limits<float>::epsilon();

  for (const KernelTable* table : AllKernelTables()) {
    SCOPED_TRACE(table->name);
    std::vector<float> packed(PackedFloats(*table, rows, c.n));
    table->pack_b(w.data(), rows, c.n, packed.data());
    std::vector<float> packed_bias;
    if (c.bias) {
      packed_bias.resize(PackedFloats(*table, 1, c.n));
      table->pack_b(bias.data(), 1, c.n, packed_bias.data());
    }
    // Sentinels in C's padding columns must survive: the kernel writes only
    // the n columns of each row.
    std::vector<float> out(c.m * ldc, 12345.0f);
    table->gemm({a.data(), lda, c.m, c.k, packed.data(), rows, c.k_begin, c.n,
                 c.bias ? packed_bias.data() : nullptr, out.data(), ldc});
    double worst = 0;
    size_t worst_at = 0;
    for (size_t i = 0; i < c.m; ++i) {
      for (size_t j = 0; j < ldc; ++j) {
        const float got = out[i * ldc + j];
        if (j >= c.n) {
          ASSERT_EQ(got, 12345.0f) << "row " << i << " padding column " << j << " overwritten";
          continue;
        }
        const double err = std::fabs(got - expected[i * c.n + j]);
        if (!(err <= worst)) {
          worst = err;
          worst_at = i * c.n + j;
        }
      }
    }
    EXPECT_LE(worst, tol) << "at row " << worst_at / c.n << ", column " << worst_at % c.n
                          << ": " << out[(worst_at / c.n) * ldc + worst_at % c.n] << " vs "
                          << expected[worst_at];
  }
}

std::vector<GemmCase> Cases() {
  std::vector<GemmCase> cases;
  // Rows around the tile heights and their split (1-3: split-K chains;
  // 10: 5 + 5 on AVX-512; 17: a remainder after two full tiles), K within,
  // at and across the K blocks, columns within, at and across a panel.
  for (size_t m : {1, 2, 3, 4, 5, 7, 8, 10, 12, 17}) {
    for (size_t k : {1, 7, 64, 255, 256, 257, 513, 600}) {
      cases.push_back({m, k, m % 2 == 0 ? 48u : 37u});
    }
  }
  for (size_t n : {1, 3, 4, 15, 16, 17, 31, 32, 33, 100}) cases.push_back({9, 300, n});
  // A slice of the packed rows (one head's rows of W_O) with a bias,
  // strided A and C: as the per-head output and the projections use them.
  cases.push_back({6, 64, 40, /*k_begin=*/128, /*extra_rows=*/64, /*bias=*/true, 5, 3});
  cases.push_back({33, 300, 70, /*k_begin=*/260, /*extra_rows=*/0, /*bias=*/true, 1, 9});
  cases.push_back({128, 768, 96, 0, 0, /*bias=*/true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Gemm, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return CaseName(info.param); });

}  // namespace
}  // namespace simd_attention::testing
