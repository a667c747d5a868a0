// How packed weights are held in memory, and weights a caller already holds
// in such a type. float16 and bfloat16 weights are widened to float32 as the
// GEMM loads them; int8 weights multiply activations quantized per row to
// int16, in integers (src/kernels/int8_gemm.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "simd_attention/traits_table.h"

namespace simd_attention {

enum class WeightType {
  kF32,
  kF16,   // IEEE binary16, rounded to nearest even at packing
  kBF16,  // the high half of a float32, rounded to nearest even at packing
  kInt8,  // symmetric per output column: w = q * scale[column], |q| <= 127
  kQ4,    // GGUF q4_0: per 32 rows of a column, w = (q - 8) * f16 scale, 0 <= q <= 15
};

// How a type's elements are held, and which StoredMatrix field brings them.
enum class StorageForm {
  kFloat32,     // as they are
  kBits16,      // 16-bit patterns the kernels widen in registers (bits)
  kScaledInt8,  // int8 values times a float scale per column (values, scales);
                // in a KV cache, per row (kv_cache.h)
  kQ4Blocks,    // 4-bit values and a float16 scale per block of K (kernels/q4_gemm.h),
                // quantized from float32 at packing or given as GGUF q4_0 blocks (q4)
};

// Everything that tells the types apart outside the kernels, one row per
// type: a new type is a new row of kWeightTypes (and its kernels), and the
// glue's names, the messages, the byte counts and memoryStats() follow.
struct WeightTypeTraits {
  WeightType value;
  const char* name;          // config.weights / config.cacheType in JavaScript
  const char* message_name;  // how messages name the type
  size_t bits;               // per element as held (int8's and q4's scales apart)
  float largest;             // largest finite magnitude held; float32's where
                             // nothing narrows (int8's scales carry the range;
                             // q4's float16 block scales, max |w| / 8, do not)
  bool in_caches;            // a KV cache may hold it (else weights only)
  StorageForm form;
};

// In the order messages list them.
inline constexpr WeightTypeTraits kWeightTypes[] = {
    {WeightType::kF32, "f32", "float32", 32, 0x1.fffffep127f, true, StorageForm::kFloat32},
    {WeightType::kF16, "f16", "float16", 16, 65504.0f, true, StorageForm::kBits16},
    {WeightType::kBF16, "bf16", "bfloat16", 16, 0x1.fep127f, true, StorageForm::kBits16},
    {WeightType::kInt8, "int8", "int8", 8, 0x1.fffffep127f, true, StorageForm::kScaledInt8},
    {WeightType::kQ4, "q4", "q4", 4, 8 * 65504.0f, false, StorageForm::kQ4Blocks},
};

constexpr const WeightTypeTraits& Traits(WeightType type) { return RowFor(kWeightTypes, type); }

namespace weight_type_checks {
constexpr size_t FormBits(StorageForm form) {
  switch (form) {  // no default: -Werror=switch names a form left out
    case StorageForm::kFloat32:
      return 32;
    case StorageForm::kBits16:
      return 16;
    case StorageForm::kScaledInt8:
      return 8;
    case StorageForm::kQ4Blocks:
      return 4;
  }
  return 0;
}
// What a form implies of a row: its width, and where narrowing can overflow.
constexpr bool FormsConsistent() {
  for (const WeightTypeTraits& t : kWeightTypes) {
    if (t.bits != FormBits(t.form)) return false;
    const bool narrows = t.form == StorageForm::kBits16 || t.form == StorageForm::kQ4Blocks;
    if (!narrows && t.largest != 0x1.fffffep127f) return false;
    // No cache kernels for q4's blocks.
    if (t.form == StorageForm::kQ4Blocks && t.in_caches) {
      return false;
    }
  }
  return true;
}
}  // namespace weight_type_checks
static_assert(RowsDistinct(kWeightTypes), "kWeightTypes: one row per WeightType and name");
static_assert(weight_type_checks::FormsConsistent(), "kWeightTypes: a row contradicts its form");
static_assert(Traits(WeightType::kF32).form == StorageForm::kFloat32 &&
                  Traits(WeightType::kF16).form == StorageForm::kBits16 &&
                  Traits(WeightType::kBF16).form == StorageForm::kBits16 &&
                  Traits(WeightType::kInt8).form == StorageForm::kScaledInt8 &&
                  Traits(WeightType::kQ4).form == StorageForm::kQ4Blocks,
              "every WeightType has its row");

// Bytes per element of the types held a whole number of bytes per element
// (not q4: its panels' size is PanelBytes, kernels/gemm.h).
constexpr size_t WeightBytes(WeightType t) { return Traits(t).bits / 8; }

// A weight matrix [rows, cols] (X @ W layout) given in the object's storage
// type instead of as float32: a float16 or bfloat16 checkpoint's bits, an
// int8 checkpoint's values with one float scale per column (w = value *
// scale), or q4 blocks as GGUF q4_0 holds them. Taken as it is: nothing is
// rounded again.
//
// q4 holds the GGUF q4_0 tensor of the transpose [cols, rows] (a Linear's
// [out, in], blocks of 32 along in = our rows): column c's blocks b = 0 ..
// rows / 32 - 1 at byte (c * rows / 32 + b) * 18, each a little-endian
// float16 scale d, then 16 bytes whose byte j holds row 32b + j's q in its
// low nibble and row 32b + j + 16's in its high one (w = (q - 8) * d). rows
// is a multiple of 32, as GGUF's are.
struct StoredMatrix {
  std::span<const uint16_t> bits;  // kF16, kBF16: rows * cols
  std::span<const int8_t> values;  // kInt8: rows * cols
  std::span<const float> scales;   // kInt8: cols
  std::span<const uint8_t> q4;     // kQ4: cols * rows / 32 * 18 bytes
  bool empty() const { return bits.empty() && values.empty() && scales.empty() && q4.empty(); }
};

// int8 weights [rows, cols] with their column scales, as StoredMatrix views them.
struct Int8Matrix {
  std::vector<int8_t> values;  // rows * cols
  std::vector<float> scales;   // cols
};

// `matrix` [rows, cols] (row-major, X @ W layout) quantized exactly as
// SetWeights quantizes float32 weights for WeightType::kInt8: scale[c] =
// max |w[:, c]| / 127 (1 for an all-zero column), value = w / scale rounded
// to nearest even. Given to SetWeights as a StoredMatrix, the same weights.
// Lets a caller that splits a matrix by rows (the JS worker pool) quantize
// it whole once. Throws std::invalid_argument naming `rows` or `cols` (0)
// or `matrix` (a length other than rows * cols, a value that is not finite).
Int8Matrix QuantizeInt8(std::span<const float> matrix, size_t rows, size_t cols);

}  // namespace simd_attention
