// The q4 kernel's block sums of a row of quantized activations, compiled
// for size (src/CMakeLists.txt): a loop over the few rows past the kernel's
// whole tiles, which -O3 unrolled and vectorized into 2.5 kB per table.
#pragma once

#include <cstddef>
#include <cstdint>

namespace simd_attention {

// For each of `blocks` blocks of kQ4BlockPairs words (two int16 each, as
// Int8Gemm::Quantize writes them) of one row at `words`, word p at
// words[p * stride]: 8 times the sum of its int16 halves, into
// out[b * stride]. With it the kernel sums q a of nibbles q and takes 8 a
// once per block: sum (q - 8) a exactly.
void Q4BlockEights(const int32_t* words, size_t stride, size_t blocks, int32_t* out);

}  // namespace simd_attention
