// Argument checks shared by the public API: each throws
// std::invalid_argument whose message names the argument, what was expected
// and what was given (CheckComputed: std::range_error naming the
// computation). Expected lengths are products computed without wrapping.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "simd_attention/tensor.h"
#include "simd_attention/weight_type.h"

namespace simd_attention {

// The parts joined: one out-of-line call per message instead of a chain of
// operator+ at every throw (the messages are most of the glue's code).
std::string Cat(std::initializer_list<std::string_view> parts);
// throw std::invalid_argument(Cat(parts)), out of line: a throw expression
// allocates its exception before composing the message, so each inlined one
// also carries the cleanup that frees it (about 2 kB of the .wasm over the
// library's messages).
[[noreturn]] void ThrowInvalidArgument(std::initializer_list<std::string_view> parts);

// "[2, 10, 512]"
std::string ShapeString(std::initializer_list<size_t> dims);

// "what: expected N values for shape [..], got M"
void CheckLength(std::string_view what, size_t given,
                 std::initializer_list<size_t> shape);

// "config.<field>": a config field as messages name it.
std::string ConfigName(std::string_view field);

// "what: must be > 0, got 0"
void CheckPositive(std::string_view what, size_t value);

// A [batch, tokens, features] input: batch and tokens > 0, features as
// expected ("what.features: expected F (feature_name), got G"), the length,
// and its values unless `values_checked` (the same buffer already was).
void CheckTensor(std::string_view what, const Tensor3& t, size_t features,
                 std::string_view feature_name, bool values_checked = false);

// "what: expected D (detail), got G"
void CheckEqual(std::string_view what, size_t given, size_t expected,
                std::string_view detail);

// Rejects NaN and +-inf: "what: element i is NaN".
void CheckFinite(std::string_view what, std::span<const float> values);

// A bias as given (its length and values checked), or n zeros when absent:
// a checkpoint made without a bias (nn.Linear(bias=False)) means zeros.
std::vector<float> BiasOrZeros(std::string_view what, std::span<const float> b, size_t n);

// Rejects NaN and +inf; -inf is a valid additive mask entry.
void CheckMask(std::string_view what, std::span<const float> values);

// Weights to be held as `type` (config field `config_name`): every value
// within the type's range (float16: 65504; bfloat16: its largest finite
// value), so narrowing never makes an infinity.
void CheckStorable(std::string_view what, std::span<const float> values, WeightType type,
                   std::string_view config_name);
// The same for computed values of largest magnitude max_abs (a projection
// into a float16 KV cache).
void CheckStorableMax(std::string_view what, double max_abs, WeightType type,
                      std::string_view config_name);
// The largest magnitude `type` holds (float32's largest for float32 and int8).
float LargestStorable(WeightType type);
// "float32", "float16", "bfloat16" or "int8", as messages name the types.
const char* StorageTypeName(WeightType type);
// The storage types a KV cache holds, as messages list them:
// "float32, float16 or bfloat16", or JavaScript's names ("'f32', 'f16' or
// 'bf16'").
constexpr bool InCaches(const WeightTypeTraits& t) { return t.in_caches; }
inline constexpr ChoiceList kCacheTypeChoices =
    ChoicesOf(kWeightTypes, &WeightTypeTraits::message_name, false, &InCaches);
inline constexpr ChoiceList kJsCacheTypeChoices =
    ChoicesOf(kWeightTypes, &WeightTypeTraits::name, true, &InCaches);

// Throws std::invalid_argument: options.training given to a build without
// training (training_build.h).
[[noreturn]] void RefuseTrainingInThisBuild();
// What only inference uses, asked of the package's training module, which
// leaves it out (training_module.h). A config value: std::invalid_argument
// "<name>: expected <expected> in the training build, got <given> (in
// JavaScript: createAttentionModule() without training has <what>)". A call:
// std::logic_error "<what> are not in the training build (in JavaScript:
// createAttentionModule() without training has them)", `what` plural.
[[noreturn]] void RefuseInTrainingModule(std::string_view name, std::string_view expected,
                                         std::string_view given, std::string_view what);
[[noreturn]] void RefuseInTrainingModule(std::string_view what);
// "float16's range (magnitudes up to 65504)", for the messages.
std::string StorableRange(WeightType type);

// The gradient of a training forward's output [batch, tokens, features]:
// that shape ("what: expected shape [2, 3, 8] (the training forward's
// output's), got [3, 2, 8]"), its length, finite values.
void CheckOutputGradient(std::string_view what, const Tensor3& d_output, size_t batch,
                         size_t tokens, size_t features);

// Every epsilon (LayerNorm's, Adam's): a finite number > 0 as float32, the
// type the kernels add it in (1e40 is refused, not rounded to +inf; 1e-60,
// not rounded to 0, which would divide 0 by 0 for a constant row):
// "what: expected a finite number > 0 that float32 can hold (1.4e-45 to
// 3.4e38), got 1e-60".
void CheckEps(std::string_view what, double eps);

// Values computed from valid (finite) inputs that overflowed float32: throws
// std::range_error "what overflowed float32 (element i is +Infinity); hint".
// The caller's arguments were valid, so the message names the computation,
// never an argument, and says what is too large. Returns the largest |x|,
// found in the same pass.
double CheckComputed(std::string_view what, std::span<const float> values, const char* hint);

// The hint of CheckComputed's messages about values computed from inputs
// and weights.
inline constexpr char kTooLarge[] = "the inputs or weights are too large in magnitude";

// CheckComputed in parts, by the tasks that write the values: each scans the
// rows it wrote while they are in its cache (Scan: any order, any thread),
// then Judge returns what CheckComputed would for the whole, or throws its
// exception (finding the element in a second pass, on failure only).
class ComputedScan {
 public:
  // `count` rows of `width` floats, `ld` apart.
  void Scan(const float* rows, size_t count, size_t ld, size_t width);
  double Judge(std::string_view what, std::span<const float> all, const char* hint) const;

 private:
  std::atomic<uint32_t> max_bits_{0};  // as in MaxAbsBits: the max commutes
};

// The largest |x| of `values` (0 for none), in double: products of maxima
// are compared against float32's range without overflowing themselves.
double MaxAbs(std::span<const float> values);

}  // namespace simd_attention
