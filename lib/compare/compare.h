#pragma once
// Bitwise comparison of two tensors of the same dtype and shape: is every bit equal, and if not,
// where is the first difference and how large are the differences. Used by the audit (context vs
// baseline), by `nvdet diff` and by manifest verification of dumps.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/core/tensor.h"

namespace nvdet {

struct FirstMismatch {
  int64_t flat_index = 0;
  std::vector<int64_t> coords;
  double a = 0.0, b = 0.0;
  std::string a_bits, b_bits;  // "0x3f800000"
  uint64_t ulp = 0;            // UINT64_MAX when a NaN is involved
};

struct TensorComparison {
  bool identical = true;
  std::optional<FirstMismatch> first;
  double max_abs_diff = 0.0;
  double max_rel_diff = 0.0;  // |a-b| / max(|a|,|b|) over mismatching finite elements
  int64_t mismatch_count = 0;
  int64_t first_mismatch_row = -1;  // along the first dimension (the token)
  int64_t mismatched_rows = 0;
};

// Throws Error(kBadInput) when dtypes or shapes differ (the caller says which files).
TensorComparison compare_tensors(const HostTensor& a, const HostTensor& b);

std::string bits_hex(uint64_t bits, DType dtype);

// Folds one mismatching pair of values into max_abs_diff / max_rel_diff (a non-finite value on
// one side only makes max_abs_diff infinite). Shared by every comparison of element types.
void add_difference(TensorComparison& r, double a, double b);  // zero-padded to the dtype's width

}  // namespace nvdet
