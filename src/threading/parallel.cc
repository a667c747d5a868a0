#include "threading/parallel.h"

namespace simd_attention {

void ParallelGemm(ThreadPool& pool, const KernelTable& kernels, const GemmArgs& g) {
  const size_t panels = (g.n + kernels.panel_width - 1) / kernels.panel_width;
  const double work_ns = 2.0 * double(g.m) * double(g.k) * double(g.n) / 50.0 +
                         double(g.k) * double(panels * kernels.panel_width) * 4.0 / 20.0;
  const size_t tasks = TaskCount(pool, work_ns, panels);
  if (tasks == 1) {
    kernels.gemm(g);
    return;
  }
  const size_t panel_floats = kernels.panel_width * g.packed_rows;
  pool.Run(tasks, [&](size_t t, size_t) {
    const size_t p0 = panels * t / tasks, p1 = panels * (t + 1) / tasks;
    const size_t col0 = p0 * kernels.panel_width;
    GemmArgs part = g;
    part.packed_b = g.packed_b + p0 * panel_floats;
    part.n = std::min(g.n, p1 * kernels.panel_width) - col0;
    part.packed_bias = g.packed_bias == nullptr ? nullptr : g.packed_bias + col0;
    part.c = g.c + col0;
    kernels.gemm(part);
  });
}

void ParallelMultiplyPacked(ThreadPool& pool, const KernelTable& kernels, const float* a,
                            size_t m, size_t k, const float* packed, const float* packed_bias,
                            size_t n, float* c, size_t ldc) {
  ParallelGemm(pool, kernels,
               {.a = a,
                .lda = k,
                .m = m,
                .k = k,
                .packed_b = packed,
                .packed_rows = k,
                .k_begin = 0,
                .n = n,
                .packed_bias = packed_bias,
                .c = c,
                .ldc = ldc});
}

}  // namespace simd_attention
