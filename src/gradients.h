// What every backward shares: a packed weight's transpose (for dX = dY W^T),
// the weight and bias gradients of a projection out = x W + b from one GEMM,
// the gradient in the packed layout of its weight (which the optimizers
// update in place), and column sums (LayerNorm's d_gamma, d_beta).
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
// An optimizer step on an object without gradients: std::logic_error.
[[noreturn]] void ThrowNoGradients();

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
void PackGradient(const KernelTable& k, const float* gradients, size_t in, size_t n, bool bias,
                  std::vector<float>& w, std::vector<float>& b);

// out[c] = sum over rows r of x[r * d + c], each column summed down the rows
// in order; split by columns, so the result does not depend on the threads.
void ColumnSums(ThreadPool& pool, const KernelTable& k, const float* x, size_t rows, size_t d,
                float* out);

}  // namespace simd_attention
