// Helpers shared by the tests: every kernel table this machine can run, and
// element-wise comparison with a useful failure message.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "dispatch/kernel_table.h"

namespace simd_attention::testing {

// Every target of every backend compiled in and supported by this CPU.
std::vector<const KernelTable*> AllKernelTables();

// gtest parameter name for a table: "highway_AVX3" etc.
std::string TableTestName(const KernelTable& table);

// Base of the tests that run once per kernel table, each target a test of its
// own that --gtest_filter=*AVX2* or ctest -R AVX2 selects:
//   class Suite : public TableTest {};
//   TEST_P(Suite, Name) { ... table() ... }
//   INSTANTIATE_ON_EVERY_TABLE(Suite);
class TableTest : public ::testing::TestWithParam<const KernelTable*> {
 protected:
  const KernelTable& table() const { return *GetParam(); }
};

// Name generator of INSTANTIATE_TEST_SUITE_P for a table parameter.
std::string TableParamName(const ::testing::TestParamInfo<const KernelTable*>& info);

// Instantiates a TableTest suite once per table, "AllTables/<Suite>.<Test>/<table>".
#define INSTANTIATE_ON_EVERY_TABLE(Suite)                                                  \
  INSTANTIATE_TEST_SUITE_P(AllTables, Suite,                                               \
                           ::testing::ValuesIn(::simd_attention::testing::AllKernelTables()), \
                           ::simd_attention::testing::TableParamName)

// Tests run for every named case (a golden case, a shape) on every table.
using TableAndCase = std::tuple<const KernelTable*, std::string>;
class TableCaseTest : public ::testing::TestWithParam<TableAndCase> {
 protected:
  const KernelTable& table() const { return *std::get<0>(GetParam()); }
  const std::string& case_name() const { return std::get<1>(GetParam()); }
};

// Every table paired with every name, tables outermost.
std::vector<TableAndCase> OnEveryTable(const std::vector<std::string>& names);

// Name generators: "<table>_<case>" for a TableCaseTest, the case itself for
// a test parameterized by case name alone.
std::string TableCaseParamName(const ::testing::TestParamInfo<TableAndCase>& info);
std::string CaseParamName(const ::testing::TestParamInfo<std::string>& info);

// The kernel's arguments for one head of dense rows: q [tq][dk], k [tk][dk],
// v [tk][dv] and z [tq][dv], each row right after the last; no masks.
AttentionArgs DenseAttentionArgs(const float* q, const float* k, const float* v, float* z,
                                 size_t tq, size_t tk, size_t dk, size_t dv);

// Asserts |actual - expected| <= tolerance everywhere, and no NaN; reports
// the worst. The expected values in float, or in double from a float64
// reference.
::testing::AssertionResult AllNear(std::span<const float> actual,
                                   std::span<const float> expected,
                                   double tolerance);
::testing::AssertionResult AllNear(std::span<const float> actual,
                                   std::span<const double> expected,
                                   double tolerance);

// Succeeds if `f` throws an E whose what() contains every fragment.
template <class E, class F>
::testing::AssertionResult ThrowsWith(
    F&& f, std::initializer_list<std::string_view> fragments) {
  try {
    f();
  } catch (const E& e) {
    const std::string message = e.what();
    for (std::string_view fragment : fragments) {
      if (message.find(fragment) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message \"" << message << "\" lacks \"" << fragment << "\"";
      }
    }
    return ::testing::AssertionSuccess() << message;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << "threw the wrong type, message \"" << e.what() << "\"";
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace simd_attention::testing
