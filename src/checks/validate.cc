#include "checks/validate.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "checks/checked_size.h"

namespace simd_attention {

std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s += p;
  return s;
}

void ThrowInvalidArgument(std::initializer_list<std::string_view> parts) {
  throw std::invalid_argument(Cat(parts));
}

std::string ShapeString(std::initializer_list<size_t> dims) {
  std::string s = "[";
  for (size_t d : dims) {
    if (s.size() > 1) s += ", ";
    s += std::to_string(d);
  }
  return s + "]";
}

void CheckLength(std::string_view what, size_t given,
                 std::initializer_list<size_t> shape) {
  const Product expected = ProductOf(shape);
  if (expected.overflow || given != expected.value) {
    ThrowInvalidArgument({what, ": expected ", ProductString(expected), " values for shape ",
                          ShapeString(shape), ", got ", std::to_string(given)});
  }
}

void CheckEqual(std::string_view what, size_t given, size_t expected,
                std::string_view detail) {
  if (given != expected) {
    ThrowInvalidArgument({what, ": expected ", std::to_string(expected), " (", detail, "), got ",
                          std::to_string(given)});
  }
}

std::string ConfigName(std::string_view field) {
  return "config." + std::string(field);
}

void CheckPositive(std::string_view what, size_t value) {
  if (value == 0) {
    throw std::invalid_argument(std::string(what) + ": must be > 0, got 0");
  }
}

void CheckTensor(std::string_view what, const Tensor3& t, size_t features,
                 std::string_view feature_name, bool values_checked) {
  const std::string name(what);
  CheckPositive(name + ".batch", t.batch);
  CheckPositive(name + ".tokens", t.tokens);
  CheckEqual(name + ".features", t.features, features, feature_name);
  CheckLength(name, t.data.size(), {t.batch, t.tokens, t.features});
  if (!values_checked) CheckFinite(name, t.data);
}

void CheckOutputGradient(std::string_view what, const Tensor3& d, size_t batch, size_t tokens,
                         size_t features) {
  if (d.batch != batch || d.tokens != tokens || d.features != features) {
    ThrowInvalidArgument({what, ": expected shape ", ShapeString({batch, tokens, features}),
                          " (the training forward's output's), got ",
                          ShapeString({d.batch, d.tokens, d.features})});
  }
  CheckLength(what, d.data.size(), {batch, tokens, features});
  CheckFinite(what, d.data);
}

void CheckEps(std::string_view what, double eps) {
  // Compared in double first: a double beyond float32's range has no float
  // to convert to. Then as the kernels hold it: 1e-60 is 0 in float32.
  if (!(eps <= double(std::numeric_limits<float>::max())) || !(static_cast<float>(eps) > 0)) {
    throw std::invalid_argument(std::string(what) +
                                ": expected a finite number > 0 that float32 can hold "
                                "(1.4e-45 to 3.4e38), got " + NumberString(eps));
  }
}

float LargestStorable(WeightType type) { return Traits(type).largest; }

const char* StorageTypeName(WeightType type) { return Traits(type).message_name; }

std::string StorableRange(WeightType type) {
  return Cat({StorageTypeName(type), "'s range (magnitudes up to ",
              NumberString(LargestStorable(type)), ")"});
}

// Compiled for size with its message: the scan is MaxAbs's (vectorized in
// validate_values.cc), which clamps non-finite values to float32's largest,
// beyond either 16-bit type's.
void CheckStorable(std::string_view what, std::span<const float> values, WeightType type,
                   std::string_view config_name) {
  const float largest = LargestStorable(type);
  if (largest == std::numeric_limits<float>::max()) return;  // holds every finite float
  if (MaxAbs(values) <= largest) return;
  size_t i = 0;
  while (std::fabs(values[i]) <= largest) ++i;  // there is one: the max says so
  throw std::range_error(Cat({what, ": element ", std::to_string(i), " is ",
                              NumberString(values[i]), ", beyond ", StorableRange(type),
                              ", which ", config_name, " asks for"}));
}

void CheckStorableMax(std::string_view what, double max_abs, WeightType type,
                      std::string_view config_name) {
  if (max_abs <= LargestStorable(type)) return;
  throw std::range_error(Cat({what, ": values up to ", NumberString(max_abs), " are beyond ",
                              StorableRange(type), ", which ", config_name, " asks for"}));
}

void RefuseTrainingInThisBuild() {
  throw std::invalid_argument(
      "options.training: expected false in a build without training, got true (in JavaScript: "
      "createAttentionModule({ training: true }))");
}

namespace {
constexpr char kWithoutTraining[] = " (in JavaScript: createAttentionModule() without training has ";
}  // namespace

void RefuseInTrainingModule(std::string_view name, std::string_view expected,
                            std::string_view given, std::string_view what) {
  ThrowInvalidArgument({name, ": expected ", expected, " in the training build, got ", given,
                        kWithoutTraining, what, ")"});
}

void RefuseInTrainingModule(std::string_view what) {
  throw std::logic_error(
      Cat({what, " are not in the training build", kWithoutTraining, "them)"}));
}

std::vector<float> BiasOrZeros(std::string_view what, std::span<const float> b, size_t n) {
  if (b.empty()) return std::vector<float>(n, 0.0f);
  CheckLength(what, b.size(), {n});
  CheckFinite(what, b);
  return {b.begin(), b.end()};
}

}  // namespace simd_attention
