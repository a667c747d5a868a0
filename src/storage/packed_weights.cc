#include "storage/packed_weights.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/q4_layout.h"
#include "kernels/q4_packing.h"
#include "kernels/weight_packing.h"
#include "training/training_module.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

[[noreturn]] void ThrowWrongForm(const char* what, const char* given, WeightType type,
                                 std::string_view config_name) {
  ThrowInvalidArgument(
      {what, ": ", given, " given, but ", config_name, " is ", StorageTypeName(type)});
}

// GGUF q4_0 blocks of the transpose [cols, rows] (StoredMatrix::q4) as
// each weight's q - 8 [rows, cols] and the blocks' scales [rows / 32, cols].
WeightValues ReadQ4Blocks(const char* what, std::span<const uint8_t> q4, size_t rows,
                          size_t cols) {
  static_assert(kQ4BlockRows == 32, "the messages name GGUF q4_0's block");
  if (rows % kQ4BlockRows != 0) {
    ThrowInvalidArgument({what, ": q4 blocks run along its ", std::to_string(rows),
                          " rows, which must be a multiple of 32 (GGUF q4_0's block)"});
  }
  const size_t blocks = rows / kQ4BlockRows, block_bytes = Q4BlockBytes(1);
  CheckLength(Cat({what, ".q4 (18 bytes per block of 32 rows of a column)"}), q4.size(),
              {cols, blocks, block_bytes});
  // The scales in the blocks' order, checked as any weights are: element
  // i is block i, at byte 18 i.
  std::vector<float> scales(cols * blocks);
  WeightValues out;
  out.values.resize(rows * cols);
  out.scales.resize(blocks * cols);
  for (size_t c = 0; c < cols; ++c) {
    for (size_t b = 0; b < blocks; ++b) {
      const uint8_t* block = q4.data() + (c * blocks + b) * block_bytes;
      const uint16_t bits = static_cast<uint16_t>(block[0] | block[1] << 8);
      WidenBits(&bits, 1, WeightType::kF16, &scales[c * blocks + b]);
      out.scales[b * cols + c] = scales[c * blocks + b];
      for (size_t j = 0; j < kQ4BlockPairs; ++j) {
        const uint8_t byte = block[2 + j];
        const size_t row = b * kQ4BlockRows + j;
        out.values[row * cols + c] = static_cast<float>((byte & 15) - 8);
        out.values[(row + kQ4BlockPairs) * cols + c] = static_cast<float>((byte >> 4) - 8);
      }
    }
  }
  CheckFinite(Cat({what, ".q4 block scales"}), scales);
  return out;
}

}  // namespace

WeightValues ReadWeight(const char* what, std::span<const float> f32, const StoredMatrix& stored,
                        WeightType config_type, size_t rows, size_t cols,
                        std::string_view config_name) {
  const WeightType type = HeldType(config_type);
  WeightValues out;
  if (stored.empty()) {
    CheckLength(what, f32.size(), {rows, cols});
    CheckFinite(what, f32);
    CheckStorable(what, f32, type, config_name);
    out.values.assign(f32.begin(), f32.end());
    return out;
  }
  if (!f32.empty()) {
    ThrowInvalidArgument({what, ": given both as float32 and in its storage type; give one"});
  }
  // (The training module holds float32 alone: its other forms fold away.)
  const StorageForm form = kTrainingModule ? StorageForm::kFloat32 : Traits(type).form;
  const bool sixteen = form == StorageForm::kBits16;
  if (!stored.bits.empty() && !sixteen) ThrowWrongForm(what, "16-bit weights", type, config_name);
  if (!stored.values.empty() && form != StorageForm::kScaledInt8) {
    ThrowWrongForm(what, "int8 values", type, config_name);
  }
  if (!stored.q4.empty() && form != StorageForm::kQ4Blocks) {
    ThrowWrongForm(what, "q4 blocks", type, config_name);
  }
  if (form == StorageForm::kQ4Blocks) {
    if (stored.q4.empty()) ThrowWrongForm(what, "int8 scales", type, config_name);
    return ReadQ4Blocks(what, stored.q4, rows, cols);
  }
  out.values.resize(rows * cols);
  if (sixteen) {
    CheckLength(what, stored.bits.size(), {rows, cols});
    WidenBits(stored.bits.data(), stored.bits.size(), type, out.values.data());
    CheckFinite(what, out.values);
    return out;
  }
  CheckLength(what, stored.values.size(), {rows, cols});
  const std::string scales = Cat({what, ".scales"});
  CheckLength(scales, stored.scales.size(), {cols});
  CheckFinite(scales, stored.scales);
  for (size_t i = 0; i < out.values.size(); ++i) out.values[i] = stored.values[i];
  out.scales.assign(stored.scales.begin(), stored.scales.end());
  return out;
}

Int8Matrix QuantizeInt8(std::span<const float> matrix, size_t rows, size_t cols) {
  CheckPositive("rows", rows);
  CheckPositive("cols", cols);
  CheckLength("matrix", matrix.size(), {rows, cols});
  CheckFinite("matrix", matrix);
  Int8Matrix out{std::vector<int8_t>(matrix.size()), std::vector<float>(cols)};
  std::vector<float> quantized(matrix.size());
  Int8ColumnScales(matrix.data(), rows, cols, out.scales.data());
  QuantizeColumns(matrix.data(), rows, cols, out.scales.data(), quantized.data());
  NarrowPacked(quantized.data(), quantized.size(), WeightType::kInt8, out.values.data());
  return out;
}

PackedMatrix PackWeights(const KernelTable& kernels, std::span<const float> w,
                         std::span<const float> scales, std::span<const float> bias, size_t rows,
                         size_t cols, WeightType config_type) {
  const WeightType type = HeldType(config_type);
  const StorageForm form = kTrainingModule ? StorageForm::kFloat32 : Traits(type).form;
  const bool int8 = form == StorageForm::kScaledInt8;
  PackedMatrix p;
  p.type = type;
  p.rows = rows;
  p.cols = cols;
  if (!bias.empty()) {
    p.bias.resize(PackedFloats(kernels, 1, cols));
    kernels.pack_b(bias.data(), 1, cols, p.bias.data());
  }
  if (form == StorageForm::kQ4Blocks) {
    const size_t panels = (cols + kernels.panel_width - 1) / kernels.panel_width;
    p.narrow.resize(panels * PanelBytes(type, rows, kernels.panel_width));
    if (scales.empty()) {
      PackQ4(w.data(), rows, cols, kernels.panel_width, p.narrow.data());
    } else {
      PackQ4Blocks(w.data(), scales.data(), rows, cols, kernels.panel_width, p.narrow.data());
    }
    return p;
  }
  std::vector<float> column_scales(scales.begin(), scales.end()), quantized;
  if (int8 && scales.empty()) {
    column_scales.resize(cols);
    quantized.resize(w.size());
    Int8ColumnScales(w.data(), rows, cols, column_scales.data());
    QuantizeColumns(w.data(), rows, cols, column_scales.data(), quantized.data());
    w = quantized;
  }
  if (int8) {
    p.scales.resize(PackedFloats(kernels, 1, cols));
    kernels.pack_b(column_scales.data(), 1, cols, p.scales.data());
  }
  // int8 panels hold whole K pairs, interleaved (kernels/gemm.h).
  const size_t panel_rows = PanelRows(type, rows);
  std::vector<float> padded;
  if (panel_rows != rows) {
    padded.assign(w.begin(), w.end());
    padded.resize(panel_rows * cols);
    w = padded;
  }
  p.w.resize(PackedFloats(kernels, panel_rows, cols));
  kernels.pack_b(w.data(), panel_rows, cols, p.w.data());
  if (int8) InterleaveRowPairs(p.w.data(), p.w.size(), kernels.panel_width);
  if (form != StorageForm::kFloat32) {
    p.narrow.resize(p.w.size() * WeightBytes(type));
    NarrowPacked(p.w.data(), p.w.size(), type, p.narrow.data());
    p.w = {};
  }
  return p;
}

}  // namespace simd_attention
