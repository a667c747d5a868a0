// Optimizer kernels' arguments: one fused pass over a parameter updates its
// value (packed weights, in place) and its state from its gradient
// (optimizer-inl.h). The value, gradient and state share one layout, so the
// padding of packed panels, whose gradient is zero, stays zero.
//
// With check_only the same pass computes the same numbers and writes none:
// it returns which of them would not be finite (kNewWeight | kNewSlot0 |
// kNewSlot1), so that a step is refused before it changes anything.
#pragma once

#include <cstddef>

#if defined(__GNUC__) || defined(__clang__)
// optimizer-inl.h's per-vector helpers must inline: out of line (GCC made
// AdamMoments a call), each vector of a step costs a call, the step twice
// its time.
#define SA_OPTIMIZER_INLINE inline __attribute__((always_inline))
#else
#define SA_OPTIMIZER_INLINE inline
#endif

namespace simd_attention {

enum OptimizerResult : unsigned {
  kNewWeight = 1,  // the updated value
  kNewSlot0 = 2,   // SGD's momentum buffer, Adam's first moment m
  kNewSlot1 = 4,   // Adam's second moment v
};

// SGD with momentum, as torch.optim.SGD with dampening 0:
//   g += weight_decay * w
//   buf = first ? g : momentum * buf + g      (momentum > 0; else buf unused)
//   w -= lr * (nesterov ? g + momentum * buf : buf)
struct SgdArgs {
  float* w;
  const float* g;
  float* buf;  // momentum buffer; nullptr when momentum == 0
  size_t n;
  float lr, momentum, weight_decay;
  bool nesterov, first;
  bool check_only = false;
};

// Adam, as torch.optim.Adam, or AdamW (decoupled weight decay):
//   Adam:  g += weight_decay * w            AdamW: w *= 1 - lr * weight_decay
//   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2
//   w -= step_size * m / (sqrt(v) * inv_sqrt_bc2 + eps)
// with step_size = lr / (1 - beta1^t), inv_sqrt_bc2 = 1 / sqrt(1 - beta2^t).
struct AdamArgs {
  float* w;
  const float* g;
  float* m;
  float* v;
  size_t n;
  float beta1, beta2, eps;
  float l2;     // weight_decay added to the gradient (Adam), else 0
  float decay;  // 1 - lr * weight_decay (AdamW), else 1
  float step_size, inv_sqrt_bc2;
  bool check_only = false;
};

}  // namespace simd_attention
