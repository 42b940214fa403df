#include "lib/ops/fp8_format.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace nvdet {
namespace {

struct Layout {
  int exponent_bias;
  int mantissa_bits;
  uint8_t max_code;  // the largest finite magnitude
};

Layout layout(Fp8Format f) {
  return f == Fp8Format::kE4M3 ? Layout{7, 3, 0x7e} : Layout{15, 2, 0x7b};
}

// The value of a magnitude code (sign bit clear) that is finite.
float finite_magnitude(uint8_t code, const Layout& l) {
  const int exponent = code >> l.mantissa_bits;
  const int mantissa = code & ((1 << l.mantissa_bits) - 1);
  if (exponent == 0)
    return std::ldexp(static_cast<float>(mantissa), 1 - l.exponent_bias - l.mantissa_bits);
  return std::ldexp(static_cast<float>(mantissa + (1 << l.mantissa_bits)),
                    exponent - l.exponent_bias - l.mantissa_bits);
}

std::array<float, 256> make_table(Fp8Format f) {
  const Layout l = layout(f);
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const uint8_t magnitude = static_cast<uint8_t>(c & 0x7f);
    float v;
    if (magnitude <= l.max_code) v = finite_magnitude(magnitude, l);
    else if (f == Fp8Format::kE5M2 && magnitude == 0x7c) v = std::numeric_limits<float>::infinity();
    else v = std::numeric_limits<float>::quiet_NaN();
    t[static_cast<size_t>(c)] = (c & 0x80) ? -v : v;
  }
  return t;
}

}  // namespace

std::string_view fp8_format_name(Fp8Format f) { return f == Fp8Format::kE4M3 ? "e4m3" : "e5m2"; }

std::optional<Fp8Format> parse_fp8_format(std::string_view name) {
  if (name == "e4m3") return Fp8Format::kE4M3;
  if (name == "e5m2") return Fp8Format::kE5M2;
  return std::nullopt;
}

const std::vector<std::string>& fp8_format_words() {
  static const std::vector<std::string> words = {"e4m3", "e5m2"};
  return words;
}

float fp8_max(Fp8Format f) { return f == Fp8Format::kE4M3 ? 448.0f : 57344.0f; }

float fp8_to_float(uint8_t code, Fp8Format f) {
  static const std::array<float, 256> e4m3 = make_table(Fp8Format::kE4M3);
  static const std::array<float, 256> e5m2 = make_table(Fp8Format::kE5M2);
  return (f == Fp8Format::kE4M3 ? e4m3 : e5m2)[code];
}

// The codes of one sign are contiguous on the value line: code ((e + bias) << m) + r - 2^m is r
// quanta of 2^(e - m) (m mantissa bits), for r in [2^m, 2^(m+1)] in the binade of exponent e
// (r = 2^(m+1) is the next binade's first code) and for r in [0, 2^m) at the smallest normal
// exponent, where it is the subnormal code r. So rounding |v| / quantum to the nearest integer
// (ties to even: the default rounding mode of nearbyint) and re-encoding is round-to-nearest-even
// on the format. |v| / quantum is exact: the quantum is a power of two and the quotient has at most
// 24 bits.
uint8_t float_to_fp8(float v, Fp8Format f) {
  const Layout l = layout(f);
  const uint8_t sign = std::signbit(v) ? 0x80 : 0x00;
  if (std::isnan(v)) return sign | 0x7f;
  const float a = std::fabs(v);
  if (a >= fp8_max(f)) return sign | l.max_code;  // saturate (infinities too)
  const int min_normal_exponent = 1 - l.exponent_bias;
  const int e = a == 0.0f ? min_normal_exponent : std::max(std::ilogb(a), min_normal_exponent);
  const float quanta = std::nearbyint(std::ldexp(a, l.mantissa_bits - e));
  const int r = static_cast<int>(quanta);
  return sign | static_cast<uint8_t>(((e + l.exponent_bias) << l.mantissa_bits) + r -
                                     (1 << l.mantissa_bits));
}

}  // namespace nvdet
