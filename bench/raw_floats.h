// Raw little-endian float32 files: how the JS side of the benchmark
// (bench/js) hands its weights and inputs to the native tools and takes
// their outputs back.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace simd_attention::bench {

// n floats from `path`; exits naming the file if it holds fewer.
inline std::vector<float> ReadFloats(const std::string& path, size_t n) {
  std::vector<float> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * sizeof(float)));
  if (!f) {
    std::fprintf(stderr, "cannot read %zu floats from %s\n", n, path.c_str());
    std::exit(1);
  }
  return v;
}

inline void WriteFloats(const std::string& path, const std::vector<float>& v) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(float)));
}

}  // namespace simd_attention::bench
