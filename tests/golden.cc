#include "golden.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace simd_attention::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(ReadFile(path));
}

}  // namespace

std::string GoldenDir() {
  if (const char* dir = std::getenv("SA_GOLDEN_DIR")) return dir;
  return SA_GOLDEN_DIR;
}

std::vector<std::string> GoldenCaseNames(const std::string& kind) {
  std::vector<std::string> names;
  const nlohmann::json index = ReadJson(GoldenDir() + "/index.json");
  for (const auto& name : index["cases"]) {
    const auto c = ReadJson(GoldenDir() + "/" + name.get<std::string>() + "/case.json");
    if (c["kind"] == kind) names.push_back(name);
  }
  if (names.empty()) throw std::runtime_error("no golden cases of kind " + kind);
  return names;
}

const GoldenTensor& GoldenCase::Tensor(const std::string& tensor) const {
  const auto it = tensors.find(tensor);
  if (it == tensors.end()) throw std::runtime_error(name + ": no tensor " + tensor);
  return it->second;
}

size_t GoldenCase::Config(const std::string& key) const {
  const auto it = config.find(key);
  if (it == config.end()) throw std::runtime_error(name + ": no config " + key);
  return static_cast<size_t>(it->second);
}

GoldenCase LoadGoldenCase(const std::string& name) {
  const std::string dir = GoldenDir() + "/" + name;
  const auto j = ReadJson(dir + "/case.json");
  GoldenCase c;
  c.name = name;
  c.kind = j["kind"];
  c.tolerance = j["tolerance"]["abs"];
  for (const auto& [key, value] : j["config"].items()) {
    if (value.is_number()) c.config[key] = value.get<double>();
    if (value.is_boolean()) c.config[key] = value.get<bool>() ? 1 : 0;
    if (value.is_string()) c.config_text[key] = value.get<std::string>();
    if (value.is_array()) c.config_list[key] = value.get<std::vector<double>>();
    // An object ("rope": {"style": ...}) as "rope.style" and so on.
    if (value.is_object()) {
      for (const auto& [sub, v] : value.items()) {
        if (v.is_number()) c.config[key + "." + sub] = v.get<double>();
        if (v.is_string()) c.config_text[key + "." + sub] = v.get<std::string>();
      }
    }
  }
  for (const auto& [key, t] : j["tensors"].items()) {
    GoldenTensor g;
    size_t count = 1;
    for (const auto& d : t["shape"]) {
      g.shape.push_back(d);
      count *= g.shape.back();
    }
    const std::string bytes = ReadFile(dir + "/" + t["file"].get<std::string>());
    const std::string dtype = t["dtype"];
    const size_t width = dtype == "f32" ? 4 : 1;
    if (bytes.size() != count * width) {
      throw std::runtime_error(dir + "/" + key + ": size does not match shape");
    }
    if (dtype == "f32") {
      g.f32.resize(count);
      std::memcpy(g.f32.data(), bytes.data(), bytes.size());  // little-endian host
    } else {
      g.u8.assign(bytes.begin(), bytes.end());
    }
    c.tensors[key] = std::move(g);
  }
  return c;
}

MhaConfig GoldenMhaConfig(const GoldenCase& c) {
  MhaConfig config;
  config.d_model = c.Config("d_model");
  config.num_heads = c.Config("num_heads");
  config.head_dim = c.Config("head_dim");
  config.head_dim_v = c.Config("head_dim_v");
  config.bias = c.Config("bias") != 0;
  // `mha` cases name the key and value widths, `mha_variant` cases the
  // key/value heads and rotary positions; what a case leaves out is default.
  auto optional = [&](const char* key) { return c.config.count(key) ? c.Config(key) : 0; };
  config.kdim = optional("kdim");
  config.vdim = optional("vdim");
  config.num_kv_heads = optional("num_kv_heads");
  if (c.config_text.count("rope.style")) {
    config.rope.style =
        c.config_text.at("rope.style") == "half" ? RopeStyle::kHalf : RopeStyle::kInterleaved;
    config.rope.base = c.config.at("rope.base");
    config.rope.rotary_dim = c.Config("rope.rotary_dim");
  }
  return config;
}

MhaWeights GoldenMhaWeights(const GoldenCase& c) {
  auto f = [&](const char* name) -> std::span<const float> {
    return c.Has(name) ? std::span<const float>(c.Tensor(name).f32)
                       : std::span<const float>();
  };
  return {f("w_q"), f("w_k"), f("w_v"), f("w_o"), f("b_q"), f("b_k"), f("b_v"), f("b_o")};
}

MhaCaseInputs MhaInputs(const GoldenCase& c) {
  MhaCaseInputs in;
  in.config = GoldenMhaConfig(c);
  in.weights = GoldenMhaWeights(c);
  auto tensor = [&](const char* name) {
    const GoldenTensor& t = c.Tensor(name);
    return Tensor3{t.f32, t.shape[0], t.shape[1], t.shape[2]};
  };
  in.query = tensor("query");
  in.key = c.Has("key") ? tensor("key") : in.query;
  in.value = c.Has("value") ? tensor("value") : in.query;
  in.options.causal = c.Config("causal") != 0;
  if (c.Has("key_padding_mask")) in.options.key_padding_mask = c.Tensor("key_padding_mask").u8;
  in.options.need_weights = true;
  in.options.need_per_head_output = true;
  return in;
}

}  // namespace simd_attention::testing
