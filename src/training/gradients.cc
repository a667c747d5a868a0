#include "training/gradients.h"

#include <algorithm>
#include <stdexcept>

#include "checks/checked_size.h"
#include "threading/parallel.h"
#include "storage/zero_filled.h"

namespace simd_attention {
namespace {

// Column c of a packed [rows, *] matrix (kernels/gemm-inl.h's PackB: panels
// of panel_width columns, each rows x panel_width row-major); its row r at
// [r * panel_width].
const float* PackedColumn(const KernelTable& k, const float* packed, size_t rows, size_t c) {
  const size_t w = k.panel_width;
  return packed + c / w * w * rows + c % w;
}

}  // namespace

void ThrowNoTrainingForward() {
  throw std::logic_error(
      "expected the last forward to be a training one (options.training true) with the weights "
      "unchanged since, got none");
}

void ThrowNoGradients() {
  throw std::logic_error("expected a backward since the weights last changed, got none");
}

const char kGradientTooLarge[] =
    "the output's gradient, the inputs or the weights are too large in magnitude";

PackedMatrix PackTransposed(const KernelTable& k, const PackedMatrix& p) {
  // Straight from panels to panels: W's element (r, c) sits at panel c / w,
  // row r; W^T's panel r / w holds, per row c, W's w rows r0 .. r0 + w - 1.
  // One W^T panel reads a w x w tile of each W panel in turn, which stays in
  // L1 while its w columns are read (a transposed copy in between, then
  // packed, walked each W panel's full height per column: 17 ns an element).
  const size_t w = k.panel_width, rows = p.rows, cols = p.cols;
  PackedMatrix out;
  out.rows = cols;
  out.cols = rows;
  out.w.assign(PackedFloats(k, cols, rows), 0.0f);  // padding rows of W^T's last panel: 0
  for (size_t r0 = 0; r0 < rows; r0 += w) {
    const size_t nr = std::min(w, rows - r0);
    float* panel = out.w.data() + r0 * cols;
    for (size_t c = 0; c < cols; ++c) {
      const float* column = PackedColumn(k, p.w.data(), rows, c) + r0 * w;
      for (size_t i = 0; i < nr; ++i) panel[c * w + i] = column[i * w];
    }
  }
  return out;
}

const float* WeightGradients(ThreadPool& pool, const KernelTable& k,
                             std::vector<float>& workspace, const float* x, size_t rows,
                             size_t in, bool bias, const float* d_out, size_t n) {
  const size_t m = in + (bias ? 1 : 0);
  const size_t xt_floats = CheckedCount("transposed input", {{"features + 1", m}, {"rows", rows}});
  const size_t packed_floats = PackedFloats(k, rows, n);
  const size_t need = xt_floats + packed_floats +
                      CheckedCount("weight gradients", {{"rows", m}, {"columns", n}});
  if (workspace.size() < need) workspace.resize(need);
  float* xt = workspace.data();
  float* packed = xt + xt_floats;
  float* gradients = packed + packed_floats;
  // x^T in 16 x 16 tiles: both a tile's 16 source rows and its 16 target
  // rows stay in L1 (a row at a time, the writes strode `rows` floats apart).
  constexpr size_t kTile = 16;
  for (size_t r0 = 0; r0 < rows; r0 += kTile) {
    const size_t r1 = std::min(rows, r0 + kTile);
    for (size_t f0 = 0; f0 < in; f0 += kTile) {
      const size_t f1 = std::min(in, f0 + kTile);
      for (size_t f = f0; f < f1; ++f) {
        for (size_t r = r0; r < r1; ++r) xt[f * rows + r] = x[r * in + f];
      }
    }
  }
  std::fill_n(xt + in * rows, (m - in) * rows, 1.0f);
  k.pack_b(d_out, rows, n, packed);
  ParallelGemm(pool, k,
               {.a = xt, .lda = rows, .m = m, .k = rows, .packed_b = packed, .packed_rows = rows,
                .k_begin = 0, .n = n, .packed_bias = nullptr, .c = gradients, .ldc = n});
  return gradients;
}

void ColumnSums(ThreadPool& pool, const KernelTable& k, const float* x, size_t rows, size_t d,
                size_t ld, float* out) {
  // Columns in blocks of kElementwiseBlock, so each takes the same vector or
  // scalar-tail path whatever the split; ~0.3 ns an element.
  const size_t blocks = (d + kElementwiseBlock - 1) / kElementwiseBlock;
  ParallelRanges(pool, blocks, SplitWork(pool, 0.3 * double(rows * d), blocks), [&](size_t b0, size_t b1) {
    const size_t c0 = b0 * kElementwiseBlock, c1 = std::min(d, b1 * kElementwiseBlock);
    std::fill(out + c0, out + c1, 0.0f);
    for (size_t r = 0; r < rows; ++r) k.add(out + c0, x + r * ld + c0, c1 - c0, out + c0);
  });
}

void Sized(std::vector<float>& v, size_t n) {
  if (v.size() != n) ZeroFilled(v, n);
}

void Unpad(const float* src, size_t ld, HeadDims rows, HeadDims cols, std::vector<float>& out) {
  Sized(out, CheckedCount("gradient", {{"rows", rows.heads * rows.d},
                                       {"columns", cols.heads * cols.d}}));
  float* dst = out.data();
  for (size_t rh = 0; rh < rows.heads; ++rh) {
    for (size_t r = 0; r < rows.d; ++r) {
      const float* row = src + (rh * rows.pad + r) * ld;
      for (size_t ch = 0; ch < cols.heads; ++ch, dst += cols.d) {
        std::copy_n(row + ch * cols.pad, cols.d, dst);
      }
    }
  }
}

void UnpackPadded(const KernelTable& k, const PackedMatrix& p, HeadDims rows, HeadDims cols,
                  std::vector<float>& w, std::vector<float>& b) {
  std::vector<float> full(CheckedCount("unpacked weights", {{"rows", p.rows}, {"columns", p.cols}}));
  for (size_t c = 0; c < p.cols; ++c) {
    const float* column = PackedColumn(k, p.w.data(), p.rows, c);
    for (size_t r = 0; r < p.rows; ++r) full[r * p.cols + c] = column[r * k.panel_width];
  }
  Unpad(full.data(), p.cols, rows, cols, w);
  b.clear();
  // A bias is packed as one row: its panels hold it in order.
  if (!p.bias.empty()) Unpad(p.bias.data(), p.cols, {1, 1, 1}, cols, b);
}

}  // namespace simd_attention
