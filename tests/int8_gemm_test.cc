// The integer GEMM for int8 weights (int8_gemm.h) on every kernel table,
// held to its accuracy contract:
//  - the activations' quantization (int8_quantize): each row's step is
//    max |a| / 32767 and each value within half a step of the activation;
//  - the product against a float64 product of the quantized operands (the
//    activations as int8_quantize rounds them, the weights q * scale): only
//    float32 conversion, scaling and the chunks' additions;
//  - against a float64 product of the float32 activations and the stored
//    weights: that plus half an activation step times sum_k |w_kj|.
// Shapes around each table's tile, panel and the int32 chunks: rows from 1
// (a decoding step) to two tiles and one, K within one chunk and over four
// and ten, odd K and odd k_begin (A's first column in the second row of a K
// pair), right edges, strided A and C, with and without bias, a row of
// zeros, and columns of +127 and -128 against rows all at their maximum,
// where each chunk's int32 sum is the largest a lane holds. A row's result
// does not depend on how many rows are multiplied with it, on whether A was
// quantized ahead (int8_rows), or on the thread count of ParallelGemm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dispatch/kernel_table.h"
#include "kernels/int8_gemm.h"
#include "kernels/weight_packing.h"
#include "random_mha.h"
#include "simd_attention/thread_pool.h"
#include "test_util.h"
#include "threading/parallel.h"

namespace simd_attention::testing {
namespace {

// An int8 product's operands: A [m, lda], the weights' int8 values q
// [rows, n] and column scales, packed for one table.
struct Int8Problem {
  size_t m, k, n, k_begin, rows, lda, ldc;
  std::vector<float> a, q, scales, bias;
  std::vector<int8_t> packed;
  std::vector<float> packed_scales, packed_bias;

  GemmArgs Args(float* c, bool with_bias) const {
    return {.a = a.data(), .lda = lda, .m = m, .k = k, .packed_b = packed.data(),
            .packed_rows = rows, .k_begin = k_begin, .n = n,
            .packed_bias = with_bias ? packed_bias.data() : nullptr, .c = c, .ldc = ldc,
            .weight_type = WeightType::kInt8, .packed_scales = packed_scales.data()};
  }
};

std::vector<float> Packed(const KernelTable& t, const std::vector<float>& row) {
  std::vector<float> packed(PackedFloats(t, 1, row.size()));
  t.pack_b(row.data(), 1, row.size(), packed.data());
  return packed;
}

// As PackWeights packs int8: whole K pairs, interleaved, narrowed.
Int8Problem MakeProblem(const KernelTable& t, size_t m, size_t k, size_t n, size_t k_begin,
                        size_t lda_pad, size_t ldc_pad, std::mt19937& rng) {
  Int8Problem p{m, k, n, k_begin, k_begin + k + 1, k + lda_pad, n + ldc_pad};
  p.a = RandomVector(m * p.lda, 1.0f, rng);
  if (m >= 2) std::fill(p.a.begin() + p.lda, p.a.begin() + 2 * p.lda, 0.0f);  // a row of zeros
  const std::vector<float> w = RandomVector(p.rows * n, 1.0f, rng);
  p.bias = RandomVector(n, 1.0f, rng);
  p.scales.resize(n);
  p.q.resize(p.rows * n);
  Int8ColumnScales(w.data(), p.rows, n, p.scales.data());
  QuantizeColumns(w.data(), p.rows, n, p.scales.data(), p.q.data());
  if (k > 2 * kInt8ChunkPairs) {
    // The largest sums: row 0 all at its maximum against +127 and -128.
    std::fill(p.a.begin(), p.a.begin() + k, 0.75f);
    for (size_t kk = 0; kk < p.rows; ++kk) {
      p.q[kk * n] = 127;
      p.q[kk * n + 1] = -128;
    }
  }
  std::vector<float> to_pack = p.q;
  const size_t panel_rows = PanelRows(WeightType::kInt8, p.rows);
  to_pack.resize(panel_rows * n);
  std::vector<float> packed(PackedFloats(t, panel_rows, n));
  t.pack_b(to_pack.data(), panel_rows, n, packed.data());
  InterleaveRowPairs(packed.data(), packed.size(), t.panel_width);
  p.packed.resize(packed.size());
  NarrowPacked(packed.data(), packed.size(), WeightType::kInt8, p.packed.data());
  p.packed_scales = Packed(t, p.scales);
  p.packed_bias = Packed(t, p.bias);
  return p;
}

// A as int8_quantize gives it: values[i * k + j] = the int16 of A's (i, j),
// steps[i] row i's step.
struct QuantizedA {
  std::vector<int32_t> values;
  std::vector<float> steps;
};

QuantizedA Quantized(const KernelTable& t, const Int8Problem& p) {
  const size_t tile = t.gemm_tile_rows, pairs = Int8Pairs(p.k, p.k_begin);
  const size_t first = p.k_begin % 2;
  std::vector<int32_t> words(Int8Words(p.m, tile, p.k, p.k_begin));
  QuantizedA out{std::vector<int32_t>(p.m * p.k), std::vector<float>(p.m)};
  t.int8_quantize(p.Args(nullptr, false), words.data(), out.steps.data());
  for (size_t i = 0; i < p.m; ++i) {
    for (size_t pair = 0; pair < pairs; ++pair) {
      const int32_t word = words[(i / tile * pairs + pair) * tile + i % tile];
      const int32_t halves[2] = {static_cast<int16_t>(word & 0xffff),
                                 static_cast<int16_t>(word >> 16)};
      for (size_t h = 0; h < 2; ++h) {
        const size_t column = 2 * pair + h;  // of the pairs, from packed row k_begin - first
        if (column < first || column - first >= p.k) {
          EXPECT_EQ(halves[h], 0) << "row " << i << ": padding of pair " << pair;
          continue;
        }
        out.values[i * p.k + column - first] = halves[h];
      }
    }
  }
  return out;
}

class Int8Kernels : public TableTest {};

TEST_P(Int8Kernels, QuantizeEachRowToHalfAStepOfItsLargestOver32767) {
  const KernelTable& t = table();
  std::mt19937 rng(67);
  for (const size_t m : {size_t{1}, t.gemm_tile_rows + 3}) {
    for (const size_t k : {size_t{1}, size_t{7}, 2 * kInt8ChunkPairs + 5}) {
      for (const size_t k_begin : {size_t{0}, size_t{3}}) {
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + ", k_begin " +
                     std::to_string(k_begin));
        const Int8Problem p = MakeProblem(t, m, k, 3, k_begin, 2, 0, rng);
        const QuantizedA q = Quantized(t, p);
        for (size_t i = 0; i < m; ++i) {
          float largest = 0;
          for (size_t j = 0; j < k; ++j) largest = std::max(largest, std::fabs(p.a[i * p.lda + j]));
          ASSERT_EQ(q.steps[i], largest / 32767.0f) << "row " << i;
          for (size_t j = 0; j < k; ++j) {
            const int32_t v = q.values[i * k + j];
            ASSERT_LE(std::abs(v), 32767) << "row " << i << ", column " << j;
            const double exact = largest == 0 ? 0.0 : double(p.a[i * p.lda + j]) / q.steps[i];
            ASSERT_LE(std::fabs(exact - v), 0.5 + 0x1p-8) << "row " << i << ", column " << j;
          }
        }
      }
    }
  }
}

// The shapes of one table.
struct Shape {
  size_t m, k, k_begin, lda_pad, ldc_pad;
  bool bias;
};

std::vector<Shape> Shapes(const KernelTable& t) {
  const size_t tile = t.gemm_tile_rows;
  const size_t long_k = 4 * kInt8ChunkPairs + 3;
  const size_t longer_k = 20 * kInt8ChunkPairs + 3;
  std::vector<Shape> shapes;
  for (const size_t m : std::set<size_t>{1, 2, 3, 4, 5, tile - 1, tile, tile + 1, 2 * tile + 1}) {
    for (const size_t k : {size_t{7}, size_t{64}, long_k}) {
      shapes.push_back({m, k, m % 2 == 1 ? size_t{3} : size_t{0}, m % 3, m % 2 * 5, m % 4 != 1});
    }
  }
  for (const size_t m : {size_t{3}, tile + 1}) shapes.push_back({m, longer_k, 1, 0, 0, true});
  return shapes;
}

TEST_P(Int8Kernels, MatchADoubleProductOfTheQuantizedOperandsAndOfTheActivations) {
  const KernelTable& t = table();
  const size_t panel = t.panel_width;
  std::mt19937 rng(71);
  // The largest error seen against each float64 product, as a share of its
  // bound (printed: how much of each bound the kernels use).
  double worst_quantized = 0, worst_activations = 0;
  for (const Shape& s : Shapes(t)) {
    const size_t n = s.m % 2 == 0 ? 3 * panel : 2 * panel + (panel + 1) / 2;
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(n) +
                 ", k_begin " + std::to_string(s.k_begin) + (s.bias ? ", bias" : ""));
    const Int8Problem p = MakeProblem(t, s.m, s.k, n, s.k_begin, s.lda_pad, s.ldc_pad, rng);
    const QuantizedA q = Quantized(t, p);
    std::vector<float> out(s.m * p.ldc, 12345.0f);
    RunGemm(t, p.Args(out.data(), s.bias));
    const size_t chunks = (Int8Pairs(s.k, s.k_begin) + kInt8ChunkPairs - 1) / kInt8ChunkPairs;
    for (size_t i = 0; i < s.m; ++i) {
      for (size_t j = 0; j < p.ldc; ++j) {
        const float got = out[i * p.ldc + j];
        if (j >= n) {
          ASSERT_EQ(got, 12345.0f) << "row " << i << " padding column " << j << " overwritten";
          continue;
        }
        const double bias = s.bias ? p.bias[j] : 0.0;
        double quantized = bias, activations = bias, magnitude = std::fabs(bias), weights = 0,
               largest = 0;
        for (size_t kk = 0; kk < s.k; ++kk) {
          const double w = double(p.q[(s.k_begin + kk) * n + j]) * p.scales[j];
          const double a = p.a[i * p.lda + kk];
          quantized += double(q.values[i * s.k + kk]) * q.steps[i] * w;
          activations += a * w;
          magnitude += std::fabs(double(q.values[i * s.k + kk]) * q.steps[i] * w);
          weights += std::fabs(w);
          largest = std::max(largest, std::fabs(a));
        }
        const double float_bound = (3 + chunks) * 0x1p-24 * magnitude;
        const double rounding_bound = float_bound + largest * 0x1p-16 * 65536.0 / 65534.0 * weights;
        ASSERT_NEAR(got, quantized, float_bound) << "row " << i << ", column " << j;
        ASSERT_NEAR(got, activations, rounding_bound) << "row " << i << ", column " << j;
        worst_quantized = std::max(worst_quantized, std::fabs(got - quantized) / float_bound);
        worst_activations = std::max(worst_activations, std::fabs(got - activations) / rounding_bound);
      }
    }
  }
  std::printf("%s: largest error %.2f of the bound against the quantized operands, %.2f against "
              "the activations\n", t.name, worst_quantized, worst_activations);
}

TEST_P(Int8Kernels, ARowComputesTheSameBitsWithAnyRowsQuantizedAheadOrNot) {
  const KernelTable& t = table();
  std::mt19937 rng(73);
  const size_t tile = t.gemm_tile_rows;
  for (const size_t k : {size_t{64}, 2 * kInt8ChunkPairs + 5}) {
    const size_t m = 2 * tile + 3, n = 3 * t.panel_width + 1;
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    const Int8Problem p = MakeProblem(t, m, k, n, 1, 0, 0, rng);
    std::vector<float> all(m * n), ahead(m * n);
    RunGemm(t, p.Args(all.data(), true));
    // Each row alone (a decoding step) and in groups of up to a tile.
    for (size_t rows = 1; rows <= tile; ++rows) {
      for (size_t i = 0; i + rows <= m; i += rows) {
        std::vector<float> part(rows * n);
        GemmArgs g = p.Args(part.data(), true);
        g.a += i * p.lda;
        g.m = rows;
        RunGemm(t, g);
        ASSERT_TRUE(std::equal(part.begin(), part.end(), all.begin() + i * n))
            << rows << " rows from row " << i;
      }
    }
    // Quantized ahead, as ParallelGemm does.
    std::vector<int32_t> words(Int8Words(m, tile, k, p.k_begin));
    std::vector<float> steps(m);
    t.int8_quantize(p.Args(nullptr, true), words.data(), steps.data());
    const Int8Rows rows{words.data(), steps.data()};
    GemmArgs g = p.Args(ahead.data(), true);
    g.int8_rows = &rows;
    t.gemm(g);
    EXPECT_EQ(ahead, all);
    // Split by columns on 1 to 3 threads.
#if SA_HAVE_THREADS
    constexpr size_t kThreads[] = {1, 2, 3};
#else
    constexpr size_t kThreads[] = {1};
#endif
    for (const size_t threads : kThreads) {
      ThreadPool pool(threads, 0.0, 0.0);
      std::vector<float> split(m * n);
      ParallelGemm(pool, t, p.Args(split.data(), true));
      EXPECT_EQ(split, all) << threads << " threads";
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(Int8Kernels);

}  // namespace
}  // namespace simd_attention::testing
