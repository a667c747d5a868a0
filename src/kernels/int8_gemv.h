// Integer GEMV policy for int8 weights and few rows of A (a decoding step):
// the kernel in int8_gemv-inl.h, chosen by RunGemm (dispatch/kernel_table.h).
//
// Widening int8 weights to float costs more operations per weight than the
// multiply-add it feeds (in wasm a one-row GEMM on int8 weights ran 3x slower
// than on float32), and with few rows there is no row tile to amortise it
// over. Instead each row of A is quantized to int16 with one float scale
// (symmetric: max |a| / 32767), and two K rows at a time are multiplied in
// int16 and summed in int32 by one instruction (x86 pmaddwd, wasm
// i32x4.dot_i16x8_s): a load, a sign extension and one multiply-add per
// 2 x lanes weights. out = sum * row scale * column scale + bias, in float.
#pragma once

#include <cstddef>
#include <cstdint>

namespace simd_attention {

// Rows of A up to which RunGemm takes the integer kernel; more rows keep the
// float micro-kernel, whose widening of a panel slice is shared by all of
// them and whose register tile reuses each weight kRows times.
constexpr size_t kInt8GemvMaxRows = 4;

// K pairs summed in one int32 lane before it goes to float. |activation| <=
// 32767 and |weight| <= 128 (a given int8 checkpoint may hold -128), so one
// pairwise multiply-add adds at most 2 * 32767 * 128 = 8,388,352 to a lane,
// and 256 of them at most 2,147,418,112 <= 2^31 - 1 = 2,147,483,647. Longer
// K is split into chunks of 512 rows, each converted to float (relative
// error 2^-24) and added to the output.
constexpr size_t kInt8ChunkPairs = 256;

// K pairs whose activation words the kernel holds at once: 4 chunks, 16 KiB
// for kInt8GemvMaxRows rows (Gemm's widened slice takes as much of the
// stack), so a decoding step's projections (K up to 2048) walk each panel
// whole, chunk after chunk, and read a matrix as one sequential stream.
constexpr size_t kInt8WordPairs = 4 * kInt8ChunkPairs;

// The kernel's scalar parts, compiled once for every target
// (int8_gemv_scalar_parts.cc): a small share of the work, whose inlined,
// vectorized copies cost every target's kernel several kB of .wasm.

// The int16 step of a row of k activations: max |a| / 32767 (0 for a row of
// zeros), and its inverse (0 for a row of zeros) in `inverse`.
float Int8RowScale(const float* a, size_t k, float* inverse);
// The same from the row's max |a| (the integer GEMM finds it with vectors).
float Int8Step(float largest, float* inverse);

// `pairs` words of two int16 activations each, round(a * inverse) (|q| <=
// 32767: the product's roundings stay below half a step), the first in the
// low half: pair i holds a[j - first] for j = 2 * (p0 + i) and j + 1, and 0
// where j - first falls outside [0, k) (an odd k_begin puts A's first column
// in the second row of a K pair; the last pair may run past k).
void QuantizePairs(const float* a, size_t k, size_t first, size_t p0, size_t pairs,
                   float inverse, int32_t* words);

}  // namespace simd_attention
