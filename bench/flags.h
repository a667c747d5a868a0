// The benchmark programs' command lines: `--name value` pairs and bare
// `--name` switches, in any order; what a program does not know it ignores.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace simd_attention::bench {

class Flags {
 public:
  Flags(int argc, char** argv) : args_(argv + 1, argv + argc) {}

  // The value after `name`, or nullptr where it is not given.
  const char* Value(std::string_view name) const {
    for (size_t i = 0; i + 1 < args_.size(); ++i) {
      if (args_[i] == name) return args_[i + 1];
    }
    return nullptr;
  }
  size_t Number(std::string_view name, size_t fallback) const {
    const char* v = Value(name);
    return v == nullptr ? fallback : std::strtoul(v, nullptr, 10);
  }
  std::string Text(std::string_view name, std::string fallback = "") const {
    const char* v = Value(name);
    return v == nullptr ? fallback : v;
  }
  bool Has(std::string_view name) const {
    return std::find(args_.begin(), args_.end(), name) != args_.end();
  }

 private:
  std::vector<const char*> args_;
};

}  // namespace simd_attention::bench
