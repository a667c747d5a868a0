// Reads the PyTorch reference cases of ../shared/golden (see its README) at
// run time: case.json plus one raw little-endian file per tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "simd_attention/multi_head_attention.h"

namespace simd_attention::testing {

struct GoldenTensor {
  std::vector<size_t> shape;
  std::vector<float> f32;   // dtype f32
  std::vector<uint8_t> u8;  // dtype u8
};

struct GoldenCase {
  std::string name;
  std::string kind;  // mha, encoder_layer, decoder_layer, positional_encoding
  double tolerance = 0;
  std::map<std::string, double> config;  // numbers and booleans (0/1)
  std::map<std::string, std::string> config_text;  // string-valued entries
  std::map<std::string, std::vector<double>> config_list;  // arrays of numbers
  // Objects' entries appear as "<key>.<entry>" in config and config_text.
  std::map<std::string, GoldenTensor> tensors;

  bool Has(const std::string& tensor) const { return tensors.count(tensor) != 0; }
  const GoldenTensor& Tensor(const std::string& tensor) const;
  size_t Config(const std::string& key) const;
};

// Folder of the cases: $SA_GOLDEN_DIR, else the path CMake baked in.
std::string GoldenDir();
std::vector<std::string> GoldenCaseNames(const std::string& kind);
GoldenCase LoadGoldenCase(const std::string& name);

// An `mha` or `mha_variant` case's configuration, and its weights as views
// into `c` (the biases empty where the case has none).
MhaConfig GoldenMhaConfig(const GoldenCase& c);
MhaWeights GoldenMhaWeights(const GoldenCase& c);

// An `mha` case as API arguments; the views point into `c`.
struct MhaCaseInputs {
  MhaConfig config;
  MhaWeights weights;
  Tensor3 query, key, value;
  MhaOptions options;
};
MhaCaseInputs MhaInputs(const GoldenCase& c);

}  // namespace simd_attention::testing
