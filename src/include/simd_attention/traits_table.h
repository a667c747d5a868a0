// What the traits tables share (kWeightTypes in weight_type.h, kActivations,
// kBackends, kCausalAlignments): one constexpr row per value of an enum,
// each row naming its value in a member `value` and JavaScript's name for
// it in `name`. Code asks a row what differs between the values instead of
// comparing or counting enumerators, so a new value is a new row.
#pragma once

#include <cstddef>
#include <string_view>

namespace simd_attention {

// The row of `value`. A value without one fails to compile where it is
// looked up in a constant expression, and traps at run time (each table's
// static_asserts look every enumerator up).
template <class Row, size_t N>
constexpr const Row& RowFor(const Row (&rows)[N], decltype(Row::value) value) {
  for (const Row& row : rows) {
    if (row.value == value) return row;
  }
  __builtin_trap();
}

// The row JavaScript names `name`; nullptr for none.
template <class Row, size_t N>
constexpr const Row* RowNamed(const Row (&rows)[N], std::string_view name) {
  for (const Row& row : rows) {
    if (name == row.name) return &row;
  }
  return nullptr;
}

// Each value in one row only, each name in one row only.
template <class Row, size_t N>
constexpr bool RowsDistinct(const Row (&rows)[N]) {
  for (size_t i = 0; i < N; ++i) {
    for (size_t j = i + 1; j < N; ++j) {
      if (rows[i].value == rows[j].value || std::string_view(rows[i].name) == rows[j].name) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace simd_attention
