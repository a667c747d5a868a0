// BlockNorm's backward: the kernels' layer_norm_backward or
// rms_norm_backward per row (rows split across the pool), d_gamma and
// d_beta as column sums of d_y * xhat and d_y (split by columns), so that
// the result does not depend on the threads; the RMSNorm rows' part shared
// with QK-norm's backward (RmsNormRowsBackward).
#include "checks/validate.h"
#include "dispatch/dispatch.h"
#include "layers/norms.h"
#include "threading/parallel.h"
#include "training/gradients.h"

namespace simd_attention {

void RmsNormRowsBackward(ThreadPool& pool, const KernelTable& k, const float* x, size_t rows,
                         size_t d, size_t ld, const float* gamma, float eps, const float* d_out,
                         float* d_x, std::vector<float>& dy_xhat, float* d_gamma) {
  if (dy_xhat.size() < rows * ld) dy_xhat.resize(rows * ld);
  const TrainingKernels& training = TrainingKernelsFor(k);
  // Rows are independent; ~1.5 ns an element over the three passes.
  const Split split = SplitWork(pool, 1.5 * double(rows * d), rows);
  ParallelRanges(pool, rows, split, [&](size_t begin, size_t end) {
    const size_t at = begin * ld;
    training.rms_norm_backward(x + at, end - begin, d, ld, gamma, eps, d_out + at, d_x + at,
                               dy_xhat.data() + at);
  });
  ColumnSums(pool, k, dy_xhat.data(), rows, d, ld, d_gamma);
}

void BlockNorm::Backward(const float* x, size_t rows, const float* d_out, float* d_x,
                         NormGradients& g) {
  const size_t n = rows * d_;
  if (training_ == nullptr) training_ = MakeTrainingOnly<Training>();
  Training& t = *training_;
  t.d_gamma.resize(d_);
  t.d_beta.clear();
  g.d_beta.clear();
  if (Traits(kind_).has_beta) {
    if (t.dy_xhat.size() < n) t.dy_xhat.resize(n);
    const TrainingKernels& training = TrainingKernelsFor(*kernels_);
    const Split split = SplitWork(*pool_, 1.5 * double(n), rows);
    ParallelRanges(*pool_, rows, split, [&](size_t begin, size_t end) {
      const size_t at = begin * d_;
      training.layer_norm_backward(x + at, end - begin, d_, gamma_.data(), eps_, d_out + at,
                                   d_x + at, t.dy_xhat.data() + at);
    });
    ColumnSums(*pool_, *kernels_, t.dy_xhat.data(), rows, d_, d_, t.d_gamma.data());
    t.d_beta.resize(d_);
    ColumnSums(*pool_, *kernels_, d_out, rows, d_, d_, t.d_beta.data());
    g.d_beta.assign(t.d_beta.begin(), t.d_beta.end());
  } else {
    RmsNormRowsBackward(*pool_, *kernels_, x, rows, d_, d_, gamma_.data(), eps_, d_out, d_x,
                        t.dy_xhat, t.d_gamma.data());
  }
  g.d_gamma.assign(t.d_gamma.begin(), t.d_gamma.end());
}

void BlockNorm::TrainableParameters(std::vector<Parameter>& out, std::string_view prefix) {
  if (training_ == nullptr || training_->d_gamma.empty()) ThrowNoGradients();
  std::vector<float>& gamma = Traits(kind_).plus_one ? stored_gamma_ : gamma_;
  out.push_back({gamma.data(), training_->d_gamma.data(), d_, Cat({prefix, "gamma"})});
  if (Traits(kind_).has_beta) {
    out.push_back({beta_.data(), training_->d_beta.data(), d_, Cat({prefix, "beta"})});
  }
}

void BlockNorm::ParametersUpdated() {
  if (Traits(kind_).plus_one) {
    for (size_t i = 0; i < d_; ++i) gamma_[i] = stored_gamma_[i] + 1.0f;
  }
}

}  // namespace simd_attention
