#include "layers/residual.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "threading/parallel.h"
#include "checks/validate.h"

namespace simd_attention {

void AddResidual(const char* sublayer, ThreadPool& pool, const KernelTable& k,
                 std::span<float> x, std::span<const float> y) {
  ParallelElementwise(pool, x.size(), 0.1, [&](size_t begin, size_t end) {
    k.add(x.data() + begin, y.data() + begin, end - begin, x.data() + begin);
  });
  CheckComputed(sublayer, x, kTooLarge);
}

// LayerNorm sums d squares of x - mean, each up to (2 max|x|)^2: beyond
// sqrt(FLT_MAX / 4d) the variance could be +inf and every output would be
// beta, so such rows are refused instead.
void CheckNormRange(const char* what, std::span<const float> x, size_t d) {
  const double limit = std::sqrt(double(std::numeric_limits<float>::max()) / (4.0 * double(d)));
  const double max_abs = MaxAbs(x);
  if (max_abs > limit) {
    throw std::range_error(std::string(what) + ": values up to " + NumberString(max_abs) +
                           " would overflow LayerNorm's float32 variance (the limit for " +
                           std::to_string(d) + " features is " + NumberString(limit) +
                           "); " + kTooLarge);
  }
}

}  // namespace simd_attention
