// The integer GEMM for int8 weights (kernels/int8_gemm.h) against the float
// GEMM on float32 weights, per kernel table, at the projections' shapes of
// S2 (128 x 768 x 768), C1 (256 and 32 rows x 512 x 512) and a decoding
// step (1 x 768 x 768, the GEMV): interleaved rounds, the median ms of each
// (int8 through RunGemm, its activations' quantization included, as a
// forward runs it), their ratio and the int8 quantization alone; natively
// and in wasm. On a busy machine the least of each (`--least`) is the
// steadier figure.
//
//   build/native/bench/int8_gemm_bench [--rounds R] [--table SUBSTRING] [--least]
//   node build/wasm/bench/int8_gemm_bench.js [--rounds R] [--table SUBSTRING] [--least]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/flags.h"
#include "bench/random_fill.h"
#include "bench/timing.h"
#include "dispatch/dispatch.h"
#include "kernels/int8_gemm.h"
#include "kernels/weight_packing.h"

namespace simd_attention::bench {
namespace {

struct Shape {
  const char* name;
  size_t m, k, n;
};
constexpr Shape kShapes[] = {{"S2 proj", 128, 768, 768},
                             {"C1 K/V", 256, 512, 512},
                             {"C1 Q/O", 32, 512, 512},
                             {"D1 proj", 1, 768, 768}};

// One shape on one table: f32 and int8 weights packed as PackWeights packs them.
class Products {
 public:
  Products(const KernelTable& t, const Shape& s)
      : t_(t), s_(s), a_(RandomVector(s.m * s.k, 1.0f, 1)), c_(s.m * s.n) {
    const std::vector<float> w = RandomVector(s.k * s.n, 1.0f, 2);
    f32_.resize(PackedFloats(t, s.k, s.n));
    t.pack_b(w.data(), s.k, s.n, f32_.data());
    std::vector<float> scales(s.n), q(s.k * s.n);
    Int8ColumnScales(w.data(), s.k, s.n, scales.data());
    QuantizeColumns(w.data(), s.k, s.n, scales.data(), q.data());
    const size_t rows = PanelRows(WeightType::kInt8, s.k);
    q.resize(rows * s.n);
    std::vector<float> packed(PackedFloats(t, rows, s.n));
    t.pack_b(q.data(), rows, s.n, packed.data());
    InterleaveRowPairs(packed.data(), packed.size(), t.panel_width);
    int8_.resize(packed.size());
    NarrowPacked(packed.data(), packed.size(), WeightType::kInt8, int8_.data());
    scales_.resize(PackedFloats(t, 1, s.n));
    t.pack_b(scales.data(), 1, s.n, scales_.data());
    words_.resize(Int8Words(s.m, t.gemm_tile_rows, s.k, 0));
    steps_.resize(s.m);
  }

  GemmArgs Args(WeightType type) {
    return {.a = a_.data(), .lda = s_.k, .m = s_.m, .k = s_.k,
            .packed_b = type == WeightType::kInt8 ? static_cast<const void*>(int8_.data())
                                                  : f32_.data(),
            .packed_rows = s_.k, .k_begin = 0, .n = s_.n, .packed_bias = nullptr,
            .c = c_.data(), .ldc = s_.n, .weight_type = type,
            .packed_scales = type == WeightType::kInt8 ? scales_.data() : nullptr};
  }
  double F32() { return Ms([&] { RunGemm(t_, Args(WeightType::kF32)); }); }
  double Int8() { return Ms([&] { RunGemm(t_, Args(WeightType::kInt8)); }); }
  double Quantize() {
    return Ms([&] { t_.int8_quantize(Args(WeightType::kInt8), words_.data(), steps_.data()); });
  }

 private:
  const KernelTable& t_;
  Shape s_;
  std::vector<float> a_, c_, f32_, scales_, steps_;
  std::vector<int8_t> int8_;
  std::vector<int32_t> words_;
};

int Main(int argc, char** argv) {
  const Flags flags(argc, argv);
  const int rounds = int(flags.Number("--rounds", 15));
  const std::string only = flags.Text("--table");
  const bool least = flags.Has("--least");
  const auto figure = [&](std::vector<double> v) {
    return least ? *std::min_element(v.begin(), v.end()) : Median(std::move(v));
  };
  std::printf("int8 GEMM against float32, 1 thread, %d interleaved rounds, %s ms\n", rounds,
              least ? "least" : "median");
  std::printf("%-22s %-8s %9s %9s %7s %9s %8s\n", "table", "shape", "f32", "int8", "speed",
              "quantize", "int8 GOPS");
  for (const Backend backend : AvailableBackends()) {
    for (const KernelTable& table : KernelTables(backend)) {
      const KernelTable* t = &table;
      if (!only.empty() && std::string(t->name).find(only) == std::string::npos) continue;
      for (const Shape& s : kShapes) {
        Products p(*t, s);
        std::vector<double> f32, int8, quantize;
        for (int r = 0; r < 2; ++r) p.F32(), p.Int8();  // warm-up
        for (int r = 0; r < rounds; ++r) {
          f32.push_back(p.F32());
          int8.push_back(p.Int8());
          quantize.push_back(p.Quantize());
        }
        const double f = figure(f32), q = figure(int8);
        std::printf("%-22s %-8s %9.4f %9.4f %6.2fx %9.4f %8.1f\n", t->name, s.name, f, q, f / q,
                    figure(quantize), 2e-6 * double(s.m) * double(s.k) * double(s.n) / q);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) { return simd_attention::bench::Main(argc, argv); }
