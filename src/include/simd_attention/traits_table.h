// What the traits tables share (kWeightTypes in weight_type.h, kActivations,
// kBackends, kCausalAlignments): one constexpr row per value of an enum,
// each row naming its value in a member `value` and JavaScript's name for
// it in `name`. Code asks a row what differs between the values instead of
// comparing or counting enumerators, so a new value is a new row.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string_view>
#include <type_traits>

namespace simd_attention {

// The row of a table whose values differ in their JavaScript name only.
template <class Enum>
struct NamedValue {
  Enum value;
  const char* name;
};

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

// `rows` is the table of exactly `values`, every enumerator of its enum
// listed where the table is declared: a row for each (one missing is not a
// constant expression), no other row, each name in one row only.
template <class Row, size_t N>
constexpr bool RowsAreExactly(const Row (&rows)[N],
                              std::initializer_list<decltype(Row::value)> values) {
  for (const auto value : values) {
    if (RowFor(rows, value).value != value) return false;
  }
  return values.size() == N && RowsDistinct(rows);
}

// The choices a message lists ("'a', 'b' or 'c'"), built at compile time
// from a table's rows, so that no message code runs to list them.
class ChoiceList {
 public:
  constexpr std::string_view view() const { return {text_, size_}; }
  constexpr void Add(const char* s) {
    while (*s != 0) text_[size_++] = *s++;  // past the end: not a constant
  }

 private:
  char text_[120] = {};
  size_t size_ = 0;
};

template <class Row>
constexpr bool EveryRow(const Row&) {
  return true;
}

// The rows of `rows` that `keep` keeps, each named by its `field`, in quotes
// for JavaScript's names, followed by " (or 'x')" where its `alias` field (if
// given) is not null. `keep` is never compared with nullptr: GCC's
// -fsanitize=undefined makes that comparison not a constant expression.
template <class Row, size_t N>
constexpr ChoiceList ChoicesOf(const Row (&rows)[N], const char* const Row::*field, bool quoted,
                               std::type_identity_t<bool (*)(const Row&)> keep = &EveryRow<Row>,
                               std::type_identity_t<const char* const Row::*> alias = nullptr) {
  size_t kept = 0;
  for (const Row& row : rows) kept += keep(row);
  ChoiceList list;
  size_t i = 0;
  for (const Row& row : rows) {
    if (!keep(row)) continue;
    if (i != 0) list.Add(i + 1 == kept ? " or " : ", ");
    ++i;
    if (quoted) list.Add("'");
    list.Add(row.*field);
    if (quoted) list.Add("'");
    if (alias != nullptr && row.*alias != nullptr) {
      list.Add(" (or '");
      list.Add(row.*alias);
      list.Add("')");
    }
  }
  return list;
}

}  // namespace simd_attention
