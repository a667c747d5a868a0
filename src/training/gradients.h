// What every backward shares: a packed weight's transpose (for dX = dY W^T),
// the weight and bias gradients of a projection out = x W + b from one GEMM,
// the gradient in the packed layout of its weight (which the optimizers
// update in place), column sums (LayerNorm's d_gamma, d_beta), and the way
// back from the padded head layout and the packed panels to the caller's
// X @ W layout.
#pragma once

#include <cstddef>
#include <vector>

#include "dispatch/kernel_table.h"
#include "simd_attention/packed_matrix.h"
#include "simd_attention/thread_pool.h"

namespace simd_attention {

// A backward called with nothing to differentiate: std::logic_error (the
// caller, C++ or the JS method, names the call).
[[noreturn]] void ThrowNoTrainingForward();
// An optimizer step on (or the gradients of) an object without gradients:
// std::logic_error.
[[noreturn]] void ThrowNoGradients();
// Why a backward's gradients overflowed, for CheckComputed (validate.h).
extern const char kGradientTooLarge[];

// The transpose of a packed float32 [rows, cols] matrix, packed: [cols, rows],
// without a bias.
PackedMatrix PackTransposed(const KernelTable& k, const PackedMatrix& packed);

// [x^T; 1^T] d_out: dW [in, n] of out = x W + b (x: rows of `in` floats,
// d_out [rows, n]) and, with bias, db as row `in`. One GEMM, split by column
// panels, so the sums run in one order whatever the threads. The result
// lives in `workspace` (grown as needed) until the next call.
const float* WeightGradients(ThreadPool& pool, const KernelTable& k,
                             std::vector<float>& workspace, const float* x, size_t rows,
                             size_t in, bool bias, const float* d_out, size_t n);

// A gradient [in (+1 bias row), n] as WeightGradients returns it, packed as
// the weight it belongs to: w [in, n] into panels, the bias row padded to
// whole panels (bias false: b cleared).
// Floats: std::vector<float> or AlignedVector<float> (a PackedMatrix's w).
template <class WFloats, class BFloats>
void PackGradient(const KernelTable& k, const float* gradients, size_t in, size_t n, bool bias,
                  WFloats& w, BFloats& b) {
  w.resize(PackedFloats(k, in, n));
  k.pack_b(gradients, in, n, w.data());
  b.clear();
  if (bias) {
    b.resize(PackedFloats(k, 1, n));
    k.pack_b(gradients + in * n, 1, n, b.data());
  }
}

// out[c] = sum over rows r of x[r * ld + c] for c < d, each column summed
// down the rows in order; split by columns, so the result does not depend
// on the threads.
void ColumnSums(ThreadPool& pool, const KernelTable& k, const float* x, size_t rows, size_t d,
                size_t ld, float* out);

// RMSNorm's backward over `rows` rows of d features (row r of x, d_out and
// d_x at r * ld): d_x by the kernel, rows split across the pool, and d_gamma
// [d], the column sums of d_out * xhat (kept in dy_xhat, grown as needed):
// the result does not depend on the threads. BlockNorm's rows are tokens,
// QK-norm's every head of every token.
void RmsNormRowsBackward(ThreadPool& pool, const KernelTable& k, const float* x, size_t rows,
                         size_t d, size_t ld, const float* gamma, float eps, const float* d_out,
                         float* d_x, std::vector<float>& dy_xhat, float* d_gamma);

// v sized n; a vector of that size already (a training loop's, reused)
// keeps its storage and values: every element is written after this.
void Sized(std::vector<float>& v, size_t n);

// Picks the real rows and columns out of a matrix in the padded head layout
// (row stride ld): rows of rows.heads heads of rows.d (each padded to
// rows.pad), columns likewise.
struct HeadDims {
  size_t heads, d, pad;
};
void Unpad(const float* src, size_t ld, HeadDims rows, HeadDims cols, std::vector<float>& out);

// A packed float32 matrix (weights, or a gradient packed like them) and its
// bias back in the X @ W layout, the head padding dropped: p.rows =
// rows.heads * rows.pad, p.cols = cols.heads * cols.pad. b is cleared
// without a bias.
void UnpackPadded(const KernelTable& k, const PackedMatrix& p, HeadDims rows, HeadDims cols,
                  std::vector<float>& w, std::vector<float>& b);

}  // namespace simd_attention
