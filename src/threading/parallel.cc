#include "threading/parallel.h"

#include "kernels/int8_activations.h"

namespace simd_attention {

void ParallelGemm(ThreadPool& pool, const KernelTable& kernels, const GemmArgs& given,
                  const GemmEpilogue* then) {
  const Int8Activations quantized(kernels, given);
  const GemmArgs& g = quantized.args();
  const bool by_unit = then != nullptr && then->unit != 0;
  const size_t unit = by_unit ? then->unit : kernels.panel_width;
  const size_t units = (g.n + unit - 1) / unit;
  const size_t panels = (g.n + kernels.panel_width - 1) / kernels.panel_width;
  const double work_ns = 2.0 * double(g.m) * double(g.k) * double(g.n) / 50.0 +
                         double(g.k) * double(panels * kernels.panel_width) * 4.0 / 20.0;
  const size_t panel_bytes = PanelBytes(g.weight_type, g.packed_rows, kernels.panel_width);
  auto columns = [&](size_t col0, size_t col1) {
    GemmArgs part = g;
    part.packed_b =
        static_cast<const char*>(g.packed_b) + col0 / kernels.panel_width * panel_bytes;
    part.packed_scales = g.packed_scales == nullptr ? nullptr : g.packed_scales + col0;
    part.n = col1 - col0;
    part.packed_bias = g.packed_bias == nullptr ? nullptr : g.packed_bias + col0;
    part.c = g.c + col0;
    RunGemm(kernels, part);
    if (then != nullptr) then->run(then->context, col0, col1);
  };
  ParallelRanges(pool, units, SplitWork(pool, work_ns, units, units), [&](size_t u0, size_t u1) {
    if (!by_unit) {
      columns(u0 * unit, std::min(g.n, u1 * unit));
      return;
    }
    for (size_t u = u0; u < u1; ++u) columns(u * unit, std::min(g.n, (u + 1) * unit));
  });
}

void ParallelMultiplyPacked(ThreadPool& pool, const KernelTable& kernels, const float* a,
                            size_t m, const PackedMatrix& b, float* c, size_t ldc,
                            const GemmEpilogue* then) {
  ParallelGemm(pool, kernels,
               {.a = a,
                .lda = b.rows,
                .m = m,
                .k = b.rows,
                .packed_b = b.data(),
                .packed_rows = b.rows,
                .k_begin = 0,
                .n = b.cols,
                .packed_bias = b.packed_bias(),
                .c = c,
                .ldc = ldc,
                .weight_type = b.type,
                .packed_scales = b.packed_scales()},
               then);
}

}  // namespace simd_attention
