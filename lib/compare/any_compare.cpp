#include "lib/compare/any_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "lib/core/error.h"

namespace nvdet {
namespace {

// Distance between two values of type t, given as raw bits, in units of the type.
uint64_t unit_distance(ElemType t, uint64_t a, uint64_t b, double av, double bv) {
  if (t == ElemType::kF64) {
    if (std::isnan(av) || std::isnan(bv)) return std::numeric_limits<uint64_t>::max();
    // Map the sign-magnitude bits onto a line where adjacent doubles are adjacent integers.
    constexpr uint64_t kMag = 0x7fffffffffffffffull;
    const auto key = [](uint64_t x) {
      const int64_t m = static_cast<int64_t>(x & kMag);
      return (x >> 63) ? -m : m;
    };
    const int64_t ka = key(a), kb = key(b);
    return ka >= kb ? static_cast<uint64_t>(ka) - static_cast<uint64_t>(kb)
                    : static_cast<uint64_t>(kb) - static_cast<uint64_t>(ka);
  }
  if (is_signed_int(t)) {
    const unsigned shift = 64 - 8 * static_cast<unsigned>(elem_size(t));
    // Sign-extend the low bits; the unsigned difference of two's-complement values is exact.
    const int64_t sa = static_cast<int64_t>(a << shift) >> shift;
    const int64_t sb = static_cast<int64_t>(b << shift) >> shift;
    return sa >= sb ? static_cast<uint64_t>(sa) - static_cast<uint64_t>(sb)
                    : static_cast<uint64_t>(sb) - static_cast<uint64_t>(sa);
  }
  if (t == ElemType::kBool) return (a != 0) != (b != 0) ? 1 : 0;
  return a >= b ? a - b : b - a;  // unsigned
}

std::string describe(const AnyTensor& t) {
  return std::string(elem_type_name(t.type)) + " " + t.shape_string();
}

}  // namespace

std::string any_bits_hex(uint64_t bits, ElemType t) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%0*llx", static_cast<int>(2 * elem_size(t)),
                static_cast<unsigned long long>(bits));
  return buf;
}

TensorComparison compare_any(const AnyTensor& a, const AnyTensor& b, const std::string& a_name,
                             const std::string& b_name) {
  if (a.type != b.type || a.shape != b.shape) {
    throw_input_error(a_name + " holds " + describe(a) + " but " + b_name + " holds " +
                      describe(b) +
                      (a.type != b.type ? "; element types differ" : "; shapes differ"));
  }
  if (to_dtype(a.type)) return compare_tensors(to_host(a, a_name), to_host(b, b_name));

  TensorComparison r;
  if (a.bytes == b.bytes) return r;
  r.identical = false;
  const int64_t n = a.numel();
  int64_t row = 1;
  for (size_t i = 1; i < a.shape.size(); ++i) row *= a.shape[i];
  row = std::max<int64_t>(1, row);
  int64_t last_row = -1;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t ab = a.bits(i), bb = b.bits(i);
    if (ab == bb) continue;
    ++r.mismatch_count;
    const double av = a.value(i), bv = b.value(i);
    const int64_t this_row = a.shape.size() >= 2 ? i / row : 0;
    if (this_row != last_row) {
      ++r.mismatched_rows;
      last_row = this_row;
    }
    if (!r.first) {
      FirstMismatch f;
      f.flat_index = i;
      f.coords = coords_of(a.shape, i);
      f.a = av;
      f.b = bv;
      f.a_bits = any_bits_hex(ab, a.type);
      f.b_bits = any_bits_hex(bb, a.type);
      f.ulp = unit_distance(a.type, ab, bb, av, bv);
      r.first = f;
      r.first_mismatch_row = this_row;
    }
    add_difference(r, av, bv);
  }
  return r;
}

}  // namespace nvdet
