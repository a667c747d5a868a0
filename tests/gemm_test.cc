// The GEMM micro-kernel of every kernel table against a double-precision
// product, at shapes derived from that table's own blocking (kernels/gemm.h),
// so a change of tile, K block or panel moves the shapes with it: rows
// around the register tile (1-3: split-K chains; tile-1, tile, tile+1;
// tile+2, which 8-row tiles split 5 + 5; two tiles + 1), K around one and two
// K blocks, columns around one and two panels, a slice of packed rows
// (k_begin, as the per-head output uses) starting past a K block, row strides
// wider than the matrices, and a bias. The attention tests reach these paths
// only with small d_model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <tuple>
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

// One shape on one table: "<table>_<shape>".
class Gemm : public ::testing::TestWithParam<std::tuple<const KernelTable*, GemmCase>> {};

TEST_P(Gemm, MatchesADoubleProduct) {
  const auto& [table, c] = GetParam();
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

// The shapes of one table, from its tile height, K block and panel width.
std::vector<GemmCase> Cases(const KernelTable& table) {
  const size_t tile = table.gemm_tile_rows, kb = table.gemm_k_block, panel = table.panel_width;
  // Whole panels, or two and a half: a right edge of one of a panel's two
  // vectors.
  const size_t whole = 3 * panel, edge = 2 * panel + (panel + 1) / 2;
  std::vector<GemmCase> cases;
  for (size_t m : std::set<size_t>{1, 2, 3, tile - 1, tile, tile + 1, tile + 2, 2 * tile + 1}) {
    for (size_t k : std::set<size_t>{1, 7, kb - 1, kb, kb + 1, 2 * kb + 1}) {
      cases.push_back({m, k, m % 2 == 0 ? whole : edge});
    }
  }
  // Columns within, at and across one and two panels, and many panels; K
  // across one K block.
  const size_t k = kb + kb / 2;
  for (size_t n : std::set<size_t>{1, panel - 1, panel, panel + 1, 2 * panel - 1, 2 * panel,
                                   2 * panel + 1, 6 * panel + 3}) {
    cases.push_back({tile + 1, k, n});
  }
  // A slice of the packed rows (one head's rows of W_O) with a bias,
  // strided A and C: as the per-head output and the projections use them;
  // the second slice starts past a K block.
  cases.push_back({tile + 2, 64, edge, /*k_begin=*/128, /*extra_rows=*/64, /*bias=*/true, 5, 3});
  cases.push_back({4 * tile + 1, k, 4 * panel + 6, /*k_begin=*/kb + 4, /*extra_rows=*/0,
                   /*bias=*/true, 1, 9});
  cases.push_back({128, 3 * kb, whole, 0, 0, /*bias=*/true});
  return cases;
}

std::vector<std::tuple<const KernelTable*, GemmCase>> TableCases() {
  std::vector<std::tuple<const KernelTable*, GemmCase>> params;
  for (const KernelTable* table : AllKernelTables()) {
    for (const GemmCase& c : Cases(*table)) params.emplace_back(table, c);
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Shapes, Gemm, ::testing::ValuesIn(TableCases()), [](const auto& info) {
  return TableTestName(*std::get<0>(info.param)) + "_" + CaseName(std::get<1>(info.param));
});

}  // namespace
}  // namespace simd_attention::testing
