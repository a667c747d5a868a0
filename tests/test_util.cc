#include "test_util.h"

#include <cmath>

#include "dispatch/dispatch.h"

namespace simd_attention::testing {

std::vector<const KernelTable*> AllKernelTables() {
  std::vector<const KernelTable*> tables;
  for (Backend backend : AvailableBackends()) {
    for (const KernelTable& t : KernelTables(backend)) tables.push_back(&t);
  }
  return tables;
}

std::string TableTestName(const KernelTable& table) {
  std::string name = table.name;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

std::string TableParamName(const ::testing::TestParamInfo<const KernelTable*>& info) {
  return TableTestName(*info.param);
}

std::vector<TableAndCase> OnEveryTable(const std::vector<std::string>& names) {
  std::vector<TableAndCase> params;
  for (const KernelTable* table : AllKernelTables()) {
    for (const std::string& name : names) params.emplace_back(table, name);
  }
  return params;
}

std::string TableCaseParamName(const ::testing::TestParamInfo<TableAndCase>& info) {
  return TableTestName(*std::get<0>(info.param)) + "_" + std::get<1>(info.param);
}

std::string CaseParamName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

AttentionArgs DenseAttentionArgs(const float* q, const float* k, const float* v, float* z,
                                 size_t tq, size_t tk, size_t dk, size_t dv) {
  return {.q = q, .ldq = dk, .k = k, .ldk = dk, .v = v, .ldv = dv, .tq = tq, .tk = tk, .dk = dk,
          .dv = dv, .z = z, .ldz = dv};
}

namespace {

template <class T>
::testing::AssertionResult NearEverywhere(std::span<const float> actual,
                                       std::span<const T> expected, double tolerance) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected " << expected.size();
  }
  double worst = 0;
  size_t worst_index = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double diff = std::fabs(double(actual[i]) - double(expected[i]));
    if (!(diff <= worst) || std::isnan(diff)) {  // NaN counts as worst
      worst = std::isnan(diff) ? INFINITY : diff;
      worst_index = i;
    }
  }
  if (worst <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "max |diff| " << worst << " > " << tolerance << " at element "
         << worst_index << " (got " << actual[worst_index] << ", expected "
         << expected[worst_index] << ")";
}

}  // namespace

::testing::AssertionResult AllNear(std::span<const float> actual,
                                   std::span<const float> expected, double tolerance) {
  return NearEverywhere(actual, expected, tolerance);
}

::testing::AssertionResult AllNear(std::span<const float> actual,
                                   std::span<const double> expected, double tolerance) {
  return NearEverywhere(actual, expected, tolerance);
}

}  // namespace simd_attention::testing
