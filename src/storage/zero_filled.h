// std::vector<float>::resize from empty, out of the -Os files.
#pragma once

#include <cstddef>
#include <vector>

namespace simd_attention {

// v.assign(n, 0.0f): n zeros. In wasm, the files compiled at -Os (src/CMakeLists.txt)
// are compiled without inlining (emcc adds -fno-inline-functions at -Os),
// where libc++ zero-fills a vector<float> through one out-of-line call per
// float (0.2-0.4 ms of an S2 forward's output); this file keeps -O3, where
// the fill is a memset.
void ZeroFilled(std::vector<float>& v, size_t n);

}  // namespace simd_attention
