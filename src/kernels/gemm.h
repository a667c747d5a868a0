// GEMM policy: register tile, unrolling, cache blocking and prefetch of the
// micro-kernel in gemm-inl.h, derived from the target's vector registers and
// caches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/q4_layout.h"
#include "simd_attention/weight_type.h"

namespace simd_attention {

// The micro-kernel keeps a kRows x kVecs tile of C in registers. Each step
// over k loads kVecs vectors of B and broadcasts one A element per row, so it
// needs kRows * kVecs + kVecs + 1 registers, and at least 8 independent
// accumulators to cover 2 FMA ports x 4 cycles of FMA latency.
//  - 16 registers (SSE4, AVX2; wasm-simd128, which V8 maps onto x86's 16
//    xmm): 4 x 2 = 8 accumulators + 2 + 1 = 11, leaving V8 room for
//    addresses (XNNPACK's 4x8 wasmsimd tile).
//  - 32 registers of 16 floats (AVX-512): 12 x 2 = 24 accumulators + 2 + 1
//    = 27, the tile of MLAS's SgemmKernelAvx512F (12 rows x 32 columns) and
//    the accumulator count of oneDNN's AVX-512 sgemm: each B vector loaded
//    feeds 12 FMAs instead of 8, so the two FMA ports wait less on loads.
//  - 32 registers of fewer floats (64-bit Arm's NEON and SVE): 8 x 2 = 16
//    accumulators + 2 + 1 = 19.
//
// kUnroll: k steps per loop iteration.
//  - 32 registers: 4. The loop's counter, pointer adds and branch are
//    integer ops, which can issue on ports 0 and 5 next to the 512-bit FMAs;
//    3 adds per 16 FMAs cost 3-7% in an asm loop of an 8 x 2 tile, so they
//    are paid once per 4 steps (96 FMAs of the 12 x 2 tile).
//  - 16 registers: 1. Unrolled, GCC spilled the 4-row tile's row pointers
//    (AVX2: 5 stack accesses per iteration), and wasm addresses are a
//    register plus a constant, so a rolled loop walking a pointer per row
//    (see Gemm::Tile) costs wasm the fewest adds.
//
// kSliceBytes: K is blocked so that one panel's slice of B stays in L1 while
// every row tile of A passes over it.
//  - 16 registers: 16 KiB, half of the smallest L1d we target (32 KiB),
//    leaves the other half for the A rows and the C tile.
//  - 32 registers: 32 KiB (256 K rows of a 32-float panel), two thirds of
//    the 48 KiB L1d of Intel's AVX-512 cores since Ice Lake (tuned on
//    Sapphire Rapids); the rest holds a tile's A rows (12 x 256 floats, 12 KiB) and C.
//    Against 16 KiB, C is loaded and stored half as often. On a 32 KiB L1d
//    (Skylake-SP, Zen 4) part of the slice would come from L2.
template <size_t kRegisters, size_t kLanes>
struct GemmTile {
  static constexpr size_t kRows = kRegisters < 32 ? 4 : kLanes >= 16 ? 12 : 8;
  static constexpr size_t kVecs = 2;
  static constexpr size_t kUnroll = kRegisters >= 32 ? 4 : 1;
  static constexpr size_t kSliceBytes = (kRegisters >= 32 ? 32 : 16) * 1024;
};

// B is packed once (at setWeights) into column panels of kVecs vectors:
// panel p holds columns [p*W, (p+1)*W) of all K rows, row after row, zero
// padded to W. A micro-kernel then reads B with unit stride.
//
// A weight matrix of a forward (768 x 768: 2.36 MB, four of them) comes from
// L3, so before each row tile Multiply prefetches a share of the next panel
// slice into L2: 1/tiles of it, at most kGemmPrefetchLines 64-byte lines.
// 32 lines (2 KiB) cover a whole 32 KiB slice once a panel has 16 row tiles
// (128 rows of A); larger bursts were slower when rows are few (one row: the
// whole 32 KiB slice before a 256-step tile made 1x768x768 23% slower; 128
// lines made 32x512x512 10% slower).
constexpr size_t kGemmPrefetchLines = 32;

#if defined(__GNUC__) || defined(__clang__)
// Gemm::Step must inline: called out of line, its accumulators live in
// memory (GCC did that to the lambda it replaced, on highway AVX2).
#define SA_GEMM_INLINE inline __attribute__((always_inline))
#else
#define SA_GEMM_INLINE inline
#endif

#if (defined(__GNUC__) || defined(__clang__)) && !defined(__wasm__)
// Read, low temporal locality: x86 prefetcht2, into L2 but not L1, which
// holds the slice in use. wasm has no prefetch (the loop around it goes too).
#define SA_GEMM_PREFETCH_L2(p) __builtin_prefetch((p), 0, 1)
#else
#define SA_GEMM_PREFETCH_L2(p) static_cast<void>(p)
#endif

// Packed weights narrower than float32, by their bits (kernels widen them).
struct F16Bits {
  uint16_t bits;
};
struct BF16Bits {
  uint16_t bits;
};

// A 16-bit float widened by the vector layers' Widen(bits, form) in four
// operations: sign-extended to 32 bits, shifted left (times `shift_factor`,
// a power of 2: wasm's LLVM 14 splits a vector shift by a run-time count
// into one shift per lane, not a multiply), masked, times `scale`.
// bfloat16 is float32's top half: shifted by 16 (the mask and the scale
// change nothing). float16 without a conversion instruction (wasm, SSE4),
// for finite halves (packed weights and cache rows are checked finite when
// stored): the shift by 13 puts its exponent and mantissa where float32
// has them, and copies of the sign in bits 28-31; the mask keeps bit 31 of
// those; times 2^112 rebiases the exponent (15 -> 127), exactly for normal
// and subnormal halves alike. The form as data lets one kernel serve both
// types (Gemm::RowTimes16).
struct Bits16Form {
  int32_t shift_factor;
  int32_t mask;
  float scale;
};
inline constexpr Bits16Form kF16Form{1 << 13, static_cast<int32_t>(0x8fffe000u), 0x1p112f};
inline constexpr Bits16Form kBF16Form{1 << 16, -1, 1.0f};

// int8 panels hold K rounded up to whole pairs of rows (a zero row pads an
// odd K), and each pair of rows interleaved per column: element (k, c) of a
// panel is byte (k / 2) * 2 * W + 2 * c + k % 2. The integer kernel
// (int8_gemm.h) then loads a column's two weights of a K pair as the
// adjacent int16 lanes that a pairwise multiply-add (pmaddwd,
// i32x4.dot_i16x8_s) takes.
inline size_t PanelRows(WeightType type, size_t rows) {
  return type == WeightType::kInt8 ? rows + rows % 2 : rows;
}

// Bytes of one packed panel of `width` columns of a [rows, n] matrix.
inline size_t PanelBytes(WeightType type, size_t rows, size_t width) {
  if (type == WeightType::kQ4) return Q4PanelBytes(rows, width);
  return PanelRows(type, rows) * width * WeightBytes(type);
}

// The activations of an int8 (or q4) product quantized ahead of the kernel (for
// every task of a split product, int8_activations.h), in the layout of
// Int8Words (int8_gemm.h), and each row's step.
struct Int8Rows {
  const int32_t* words;
  const float* scales;
};

// C[m, n] = A[m, k] * B[k, n] (+ bias), B given as packed panels (see
// kernels/gemm.h) of weight_type elements, each panel PanelRows(weight_type,
// packed_rows) rows high. `k_begin` selects rows
// k_begin..k_begin+k of the packed B, so a head's slice of W_O is multiplied
// without repacking. int8 panels come with packed_scales: one float per
// column (padded to whole panels, as the bias), applied once per C tile;
// int8_rows, when given, holds A quantized, which the integer GEMM then
// reads instead of quantizing A itself.
struct GemmArgs {
  const float* a;
  size_t lda;
  size_t m;
  size_t k;
  const void* packed_b;
  size_t packed_rows;  // K of the whole packed matrix (panel height)
  size_t k_begin;
  size_t n;
  const float* packed_bias;  // padded to whole panels; nullptr = no bias
  float* c;
  size_t ldc;
  WeightType weight_type = WeightType::kF32;
  const float* packed_scales = nullptr;
  const Int8Rows* int8_rows = nullptr;
};

}  // namespace simd_attention
