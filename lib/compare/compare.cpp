#include "lib/compare/compare.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "lib/core/error.h"

namespace nvdet {

std::string bits_hex(uint64_t bits, DType dtype) {
  char buf[24];
  if (dtype_size(dtype) == 4) {
    std::snprintf(buf, sizeof buf, "0x%08llx", static_cast<unsigned long long>(bits));
  } else {
    std::snprintf(buf, sizeof buf, "0x%04llx", static_cast<unsigned long long>(bits));
  }
  return buf;
}

void add_difference(TensorComparison& r, double a, double b) {
  if (std::isfinite(a) && std::isfinite(b)) {
    const double d = std::fabs(a - b);
    r.max_abs_diff = std::max(r.max_abs_diff, d);
    const double scale = std::max(std::fabs(a), std::fabs(b));
    if (scale > 0) r.max_rel_diff = std::max(r.max_rel_diff, d / scale);
  } else if (std::isnan(a) != std::isnan(b) || std::isinf(a) != std::isinf(b)) {
    r.max_abs_diff = INFINITY;
  }
}

TensorComparison compare_tensors(const HostTensor& a, const HostTensor& b) {
  if (a.dtype() != b.dtype()) {
    throw_input_error("cannot compare a " + std::string(dtype_name(a.dtype())) + " tensor with a " +
                      std::string(dtype_name(b.dtype())) + " tensor");
  }
  if (a.shape() != b.shape()) {
    throw_input_error("cannot compare tensors of shapes " + a.shape_string() + " and " +
                      b.shape_string());
  }
  TensorComparison r;
  if (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0) return r;
  r.identical = false;
  const int64_t n = a.numel();
  const int64_t row = std::max<int64_t>(1, a.row_elems());
  int64_t last_row_counted = -1;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t ab = a.bits(i), bb = b.bits(i);
    if (ab == bb) continue;
    ++r.mismatch_count;
    const double av = a.get(i), bv = b.get(i);
    const int64_t this_row = a.rank() >= 2 ? i / row : 0;
    if (this_row != last_row_counted) {
      ++r.mismatched_rows;
      last_row_counted = this_row;
    }
    if (!r.first) {
      FirstMismatch f;
      f.flat_index = i;
      f.coords = a.coords_of(i);
      f.a = av;
      f.b = bv;
      f.a_bits = bits_hex(ab, a.dtype());
      f.b_bits = bits_hex(bb, a.dtype());
      f.ulp = ulp_distance(a.dtype(), ab, bb);
      r.first = f;
      r.first_mismatch_row = this_row;
    }
    add_difference(r, av, bv);
  }
  return r;
}

}  // namespace nvdet
