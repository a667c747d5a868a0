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
  const size_t tile_rows = kernels.gemm_tile_rows;
  auto columns = [&](size_t row0, size_t row1, size_t col0, size_t col1) {
    GemmArgs part = g;
    part.a = g.a + row0 * g.lda;
    part.m = row1 - row0;
    part.packed_b =
        static_cast<const char*>(g.packed_b) + col0 / kernels.panel_width * panel_bytes;
    part.packed_scales = g.packed_scales == nullptr ? nullptr : g.packed_scales + col0;
    part.n = col1 - col0;
    part.packed_bias = g.packed_bias == nullptr ? nullptr : g.packed_bias + col0;
    part.c = g.c + row0 * g.ldc + col0;
    const Int8Rows rows = g.int8_rows == nullptr ? Int8Rows{} : quantized.RowsFrom(row0);
    if (g.int8_rows != nullptr) part.int8_rows = &rows;
    RunGemm(kernels, part);
    if (then != nullptr) then->run(then->context, row0, row1, col0, col1);
  };
  const bool whole_rows = then != nullptr && then->whole_rows;
  const size_t row_tiles = whole_rows ? 0 : g.m / tile_rows;
  const size_t most = units * std::max<size_t>(1, row_tiles);
  const Split split = SplitWork(pool, work_ns, most, most);
  const size_t parts = GemmRowParts(row_tiles, units, split.threads, split.tasks);
  if (parts == 1) {
    ParallelRanges(pool, units, {std::min(split.tasks, units), split.threads},
                   [&](size_t u0, size_t u1) {
      if (!by_unit) {
        columns(0, g.m, u0 * unit, std::min(g.n, u1 * unit));
        return;
      }
      for (size_t u = u0; u < u1; ++u) columns(0, g.m, u * unit, std::min(g.n, (u + 1) * unit));
    });
    return;
  }
  // A task per unit and row part, the units of one part after another.
  pool.Run(units * parts, split.threads, [&](size_t item, size_t) {
    const size_t u = item % units, p = item / units;
    const size_t row0 = row_tiles * p / parts * tile_rows;
    const size_t row1 = p + 1 == parts ? g.m : row_tiles * (p + 1) / parts * tile_rows;
    columns(row0, row1, u * unit, std::min(g.n, (u + 1) * unit));
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
