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

}  // namespace simd_attention
