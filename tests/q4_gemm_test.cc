// 4-bit weights (q4_layout.h, q4_gemm.h) on every kernel table:
//  - packing rounds as GGUF q4_0 (ggml's quantize_row_q4_0_ref): a block's
//    largest-magnitude weight is -8 times its scale, each weight within half
//    a scale (a whole one beyond 7.5 scales, where q = 15 clamps; plus the
//    scale's float16 rounding) of its value;
//  - the kernel against a float64 product of the quantized operands (A as
//    int8_quantize rounds it, the weights as UnpackQ4 reads them back) and
//    of the float32 activations, within q4_gemm.h's bounds;
//  - a row's bits do not depend on the rows multiplied with it, on whether A
//    was quantized ahead (ParallelGemm) or on the thread count.
// Shapes: rows from 1 (a decoding step) to two tiles and one; K within a
// block, on block edges and across many; k_begin inside a block (a head's
// slice of W_O), right edges, strided A and C, with and without bias.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dispatch/kernel_table.h"
#include "kernels/q4_gemm.h"
#include "kernels/q4_packing.h"
#include "kernels/weight_packing.h"
#include "random_mha.h"
#include "simd_attention/thread_pool.h"
#include "test_util.h"
#include "threading/parallel.h"

namespace simd_attention::testing {
namespace {

float F16(float x) {
  uint16_t bits;
  NarrowPacked(&x, 1, WeightType::kF16, &bits);
  float out;
  WidenBits(&bits, 1, WeightType::kF16, &out);
  return out;
}

TEST(Q4Packing, RoundsABlockAsGgufQ4_0) {
  // One column of 40 rows: a block of k - 10 (largest magnitude 21, at
  // k = 31), then a block of 8 rows and 24 of padding.
  std::vector<float> w(40);
  for (size_t k = 0; k < 32; ++k) w[k] = float(k) - 10;
  for (size_t k = 32; k < 40; ++k) w[k] = 0.5f * float(k - 32);
  for (const size_t width : {size_t{1}, size_t{8}}) {
    std::vector<uint8_t> packed(PanelBytes(WeightType::kQ4, 40, width));
    PackQ4(w.data(), 40, 1, width, packed.data());
    std::vector<float> back(40);
    UnpackQ4(packed.data(), 40, 1, width, back.data());
    const float d = -21.0f / 8;  // exact in float16
    EXPECT_EQ(back[31], 21.0f);           // q = 0
    EXPECT_EQ(back[10], 0.0f);            // q = 8
    EXPECT_EQ(back[0], (12 - 8) * d);     // floor(-10 / d + 8.5) = 12
    EXPECT_EQ(back[13], (7 - 8) * d);     // 3 / d + 8.5 = 7.357...
    const float d2 = -3.5f / 8;           // the second block's largest is 3.5
    EXPECT_EQ(back[39], 3.5f);
    EXPECT_EQ(back[32], 0.0f);
    EXPECT_EQ(back[33], (int(0.5f / d2 + 8.5f) - 8) * F16(d2));
  }
}

TEST(Q4Packing, KeepsEachWeightWithinHalfItsBlockScale) {
  std::mt19937 rng(5);
  const size_t rows = 75, cols = 11, width = 8;
  const std::vector<float> w = RandomVector(rows * cols, 3.0f, rng);
  std::vector<uint8_t> packed(2 * PanelBytes(WeightType::kQ4, rows, width));
  PackQ4(w.data(), rows, cols, width, packed.data());
  std::vector<float> back(rows * cols);
  UnpackQ4(packed.data(), rows, cols, width, back.data());
  for (size_t c = 0; c < cols; ++c) {
    for (size_t b = 0; b < Q4Blocks(rows); ++b) {
      float largest = 0, signed_largest = 0;
      for (size_t k = b * 32; k < std::min(rows, b * 32 + 32); ++k) {
        if (std::fabs(w[k * cols + c]) > largest) {
          largest = std::fabs(w[k * cols + c]);
          signed_largest = w[k * cols + c];
        }
      }
      const float d = signed_largest / -8, d16 = F16(d);
      for (size_t k = b * 32; k < std::min(rows, b * 32 + 32); ++k) {
        const float x = w[k * cols + c], y = back[k * cols + c];
        const double q = double(y) / d16 + 8;
        ASSERT_EQ(q, std::round(q)) << "row " << k << ", column " << c;
        ASSERT_GE(q, 0);
        ASSERT_LE(q, 15);
        // q's range [0, 15] reaches -8 d but only 7 d: beyond 7.5 d, q = 15 clamps.
        const float rounding = x / d > 7.5f ? std::fabs(d) : std::fabs(d) / 2;
        ASSERT_LE(std::fabs(x - y), rounding + 8 * std::fabs(d - d16) + 1e-6)
            << "row " << k << ", column " << c;
      }
    }
  }
}

// A q4 product's operands: A [m, lda], the weights [rows, n] packed for
// one table and as they read back.
struct Q4Problem {
  size_t m, k, n, k_begin, rows, lda, ldc;
  std::vector<float> a, w, bias, packed_bias;
  std::vector<uint8_t> packed;

  GemmArgs Args(float* c, bool with_bias) const {
    return {.a = a.data(), .lda = lda, .m = m, .k = k, .packed_b = packed.data(),
            .packed_rows = rows, .k_begin = k_begin, .n = n,
            .packed_bias = with_bias ? packed_bias.data() : nullptr, .c = c, .ldc = ldc,
            .weight_type = WeightType::kQ4};
  }
};

Q4Problem MakeProblem(const KernelTable& t, size_t m, size_t k, size_t n, size_t k_begin,
                      size_t lda_pad, size_t ldc_pad, std::mt19937& rng) {
  Q4Problem p{m, k, n, k_begin, k_begin + k + 3, k + lda_pad, n + ldc_pad};
  p.a = RandomVector(m * p.lda, 1.0f, rng);
  if (m >= 2) std::fill(p.a.begin() + p.lda, p.a.begin() + 2 * p.lda, 0.0f);  // a row of zeros
  const std::vector<float> w = RandomVector(p.rows * n, 1.0f, rng);
  const size_t panels = (n + t.panel_width - 1) / t.panel_width;
  p.packed.resize(panels * PanelBytes(WeightType::kQ4, p.rows, t.panel_width));
  PackQ4(w.data(), p.rows, n, t.panel_width, p.packed.data());
  p.w.resize(w.size());
  UnpackQ4(p.packed.data(), p.rows, n, t.panel_width, p.w.data());
  p.bias = RandomVector(n, 1.0f, rng);
  p.packed_bias.resize(PackedFloats(t, 1, n));
  t.pack_b(p.bias.data(), 1, n, p.packed_bias.data());
  return p;
}

// A as int8_quantize gives it for q4: values[i * k + j] the int16 of A's
// (i, j), steps[i] row i's step.
struct QuantizedA {
  std::vector<int32_t> values;
  std::vector<float> steps;
};

QuantizedA Quantized(const KernelTable& t, const Q4Problem& p) {
  std::unique_ptr<float[]> padded;
  const GemmArgs a = Q4ActivationArgs(p.Args(nullptr, false), &padded);
  const size_t tile = t.gemm_tile_rows, pairs = a.k / 2, lead = Q4Lead(p.k_begin);
  std::vector<int32_t> words(Int8Words(p.m, tile, a.k, 0));
  QuantizedA out{std::vector<int32_t>(p.m * p.k), std::vector<float>(p.m)};
  t.int8_quantize(a, words.data(), out.steps.data());
  for (size_t i = 0; i < p.m; ++i) {
    for (size_t pair = 0; pair < pairs; ++pair) {
      const int32_t word = words[(i / tile * pairs + pair) * tile + i % tile];
      const int32_t halves[2] = {static_cast<int16_t>(word & 0xffff),
                                 static_cast<int16_t>(word >> 16)};
      for (size_t h = 0; h < 2; ++h) {
        const size_t column = 2 * pair + h;
        if (column < lead || column - lead >= p.k) {
          EXPECT_EQ(halves[h], 0) << "row " << i << ": padding of pair " << pair;
          continue;
        }
        out.values[i * p.k + column - lead] = halves[h];
      }
    }
  }
  return out;
}

class Q4Kernels : public TableTest {};

struct Shape {
  size_t m, k, k_begin, lda_pad, ldc_pad;
  bool bias;
};

std::vector<Shape> Shapes(const KernelTable& t) {
  const size_t tile = t.gemm_tile_rows;
  std::vector<Shape> shapes;
  size_t i = 0;
  for (const size_t m : std::set<size_t>{1, 2, 3, 4, 5, tile - 1, tile, tile + 1, 2 * tile + 1}) {
    for (const size_t k : {size_t{7}, size_t{32}, size_t{64}, size_t{100}, size_t{1000}}) {
      const size_t k_begin = std::vector<size_t>{0, 5, 32, 40, 17}[i++ % 5];
      shapes.push_back({m, k, k_begin, m % 3, m % 2 * 5, m % 4 != 1});
    }
  }
  shapes.push_back({3, 4096, 8, 0, 0, true});
  return shapes;
}

TEST_P(Q4Kernels, MatchADoubleProductOfTheQuantizedOperandsAndOfTheActivations) {
  const KernelTable& t = table();
  const size_t panel = t.panel_width;
  std::mt19937 rng(79);
  double worst_quantized = 0, worst_activations = 0;
  for (const Shape& s : Shapes(t)) {
    const size_t n = s.m % 2 == 0 ? 3 * panel : 2 * panel + (panel + 1) / 2;
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(n) +
                 ", k_begin " + std::to_string(s.k_begin) + (s.bias ? ", bias" : ""));
    const Q4Problem p = MakeProblem(t, s.m, s.k, n, s.k_begin, s.lda_pad, s.ldc_pad, rng);
    const QuantizedA q = Quantized(t, p);
    std::vector<float> out(s.m * p.ldc, 12345.0f);
    RunGemm(t, p.Args(out.data(), s.bias));
    const size_t blocks = Q4Blocks(Q4Lead(s.k_begin) + s.k);
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
          const double w = p.w[(s.k_begin + kk) * n + j];
          const double a = p.a[i * p.lda + kk];
          const double qa = double(q.values[i * s.k + kk]) * q.steps[i];
          quantized += qa * w;
          activations += a * w;
          magnitude += std::fabs(qa * w);
          weights += std::fabs(w);
          largest = std::max(largest, std::fabs(a));
        }
        const double float_bound = (blocks + 4) * 0x1p-24 * magnitude;
        const double rounding_bound = float_bound + largest * 0x1p-16 * 65536.0 / 65534.0 * weights;
        ASSERT_NEAR(got, quantized, float_bound) << "row " << i << ", column " << j;
        ASSERT_NEAR(got, activations, rounding_bound) << "row " << i << ", column " << j;
        if (float_bound > 0) {
          worst_quantized = std::max(worst_quantized, std::fabs(got - quantized) / float_bound);
          worst_activations =
              std::max(worst_activations, std::fabs(got - activations) / rounding_bound);
        }
      }
    }
  }
  std::printf("%s: largest error %.2f of the bound against the quantized operands, %.2f against "
              "the activations\n", t.name, worst_quantized, worst_activations);
}

TEST_P(Q4Kernels, ARowComputesTheSameBitsWithAnyRowsQuantizedAheadOrThreads) {
  const KernelTable& t = table();
  std::mt19937 rng(83);
  const size_t tile = t.gemm_tile_rows;
  for (const size_t k : {size_t{64}, size_t{300}}) {
    const size_t m = 2 * tile + 3, n = 3 * t.panel_width + 1;
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    const Q4Problem p = MakeProblem(t, m, k, n, 5, 0, 0, rng);
    std::vector<float> all(m * n);
    RunGemm(t, p.Args(all.data(), true));
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
    // Quantized ahead and split by columns, as ParallelGemm does.
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

INSTANTIATE_ON_EVERY_TABLE(Q4Kernels);

}  // namespace
}  // namespace simd_attention::testing
