// Measures, on one core, the fp32 throughput the README's derived peak
// (cores x GHz x FMA ports x lanes x 2) should match:
//   - FMA throughput at 512, 256 and 128 bits: 12 independent vfmadd231ps
//     per block, so only the FMA ports limit it;
//   - 128-bit mul + add as separate instructions (what wasm-simd128 code
//     runs: the wasm SIMD proposal has no fused multiply-add).
// No clock is measured: under KVM there are no cycle counters, and dependent
// add or FMA chains gave 1.8-3.4 "GHz" from run to run (rename-time add
// elimination, steal time); the nominal clock is the TSC's (lscpu BogoMIPS/2).
// Prints one JSON object. Built and run by scripts/bench.sh (x86-64 only).
#include <stdio.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define ITERS 2000000L

#define FMA12(R)                                                              \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "0\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "1\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "2\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "3\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "4\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "5\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "6\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "7\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "8\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "9\n\t"                            \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "10\n\t"                           \
  "vfmadd231ps %%" R "12, %%" R "13, %%" R "11\n\t"

#define MULADD12                                                              \
  "vmulps %%xmm12, %%xmm13, %%xmm0\n\t"                                       \
  "vaddps %%xmm12, %%xmm13, %%xmm1\n\t"                                       \
  "vmulps %%xmm12, %%xmm13, %%xmm2\n\t"                                       \
  "vaddps %%xmm12, %%xmm13, %%xmm3\n\t"                                       \
  "vmulps %%xmm12, %%xmm13, %%xmm4\n\t"                                       \
  "vaddps %%xmm12, %%xmm13, %%xmm5\n\t"                                       \
  "vmulps %%xmm12, %%xmm13, %%xmm6\n\t"                                       \
  "vaddps %%xmm12, %%xmm13, %%xmm7\n\t"                                       \
  "vmulps %%xmm12, %%xmm13, %%xmm8\n\t"                                       \
  "vaddps %%xmm12, %%xmm13, %%xmm9\n\t"                                       \
  "vmulps %%xmm12, %%xmm13, %%xmm10\n\t"                                      \
  "vaddps %%xmm12, %%xmm13, %%xmm11\n\t"

#define CLOBBER                                                               \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",     \
      "xmm9", "xmm10", "xmm11", "xmm12", "xmm13"

// Returns GFLOP/s of `flops_per_block` per asm block.
#define MEASURE(BLOCK, flops_per_block)                                       \
  ({                                                                          \
    double best = 1e30;                                                       \
    for (int trial = 0; trial < 5; trial++) {                                 \
      __asm__ volatile("vzeroall" ::: CLOBBER);                               \
      double t0 = now();                                                      \
      for (long i = 0; i < ITERS; i++) {                                      \
        __asm__ volatile(BLOCK BLOCK BLOCK BLOCK ::: CLOBBER);                \
      }                                                                       \
      double t = now() - t0;                                                  \
      if (t < best) best = t;                                                 \
    }                                                                         \
    ITERS * 4.0 * (flops_per_block) / best / 1e9;                             \
  })

int main(void) {
  __builtin_cpu_init();
  const int avx512 = __builtin_cpu_supports("avx512f");
  const int fma = __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
  double z = 0, y = 0, x = 0, m = 0;
  if (avx512) z = MEASURE(FMA12("zmm"), 12 * 16 * 2);
  if (fma) {
    y = MEASURE(FMA12("ymm"), 12 * 8 * 2);
    x = MEASURE(FMA12("xmm"), 12 * 4 * 2);
  }
  m = MEASURE(MULADD12, 12 * 4);
  printf("{\"fma512_gflops\": %.1f, \"fma256_gflops\": %.1f, "
         "\"fma128_gflops\": %.1f, \"muladd128_gflops\": %.1f}\n",
         z, y, x, m);
  return 0;
}
