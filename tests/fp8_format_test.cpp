// The FP8 element formats (lib/ops/fp8_format.h) against independent definitions: every code's
// value from the OCP formulas, every float's code from a brute-force search for the nearest code
// (ties to the even code) over the table of finite values, the saturation and NaN rules, and the
// bits PyTorch 2.11 gives for the same values after vLLM's clamp (torch's cast, recorded here:
// `torch.tensor([...]).clamp(-448, 448).to(torch.float8_e4m3fn).view(torch.uint8)`).
#include "lib/ops/fp8_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace nvdet {
namespace {

// The OCP definitions, written from the format's fields (not from nvdet's table).
double e4m3_value(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude =
      e == 0 ? std::pow(2.0, -6) * (m / 8.0) : std::pow(2.0, e - 7) * (1.0 + m / 8.0);
  return s ? -magnitude : magnitude;
}
double e5m2_value(int code) {
  const int s = code >> 7, e = (code >> 2) & 31, m = code & 3;
  double magnitude;
  if (e == 31)
    magnitude =
        m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else if (e == 0) magnitude = std::pow(2.0, -14) * (m / 4.0);
  else magnitude = std::pow(2.0, e - 15) * (1.0 + m / 4.0);
  return s ? -magnitude : magnitude;
}
double value_of(int code, Fp8Format f) {
  return f == Fp8Format::kE4M3 ? e4m3_value(code) : e5m2_value(code);
}

// The nearest finite code to v by search: the smallest |v - value|, ties to the code with an even
// mantissa (its lowest bit clear); beyond the largest finite value, that value (saturation).
uint8_t nearest_code(float v, Fp8Format f) {
  const double x = v;
  int best = -1;
  double best_d = std::numeric_limits<double>::infinity();
  for (int c = 0; c < 256; ++c) {
    const double y = value_of(c, f);
    if (!std::isfinite(y) || std::signbit(y) != std::signbit(x)) continue;
    const double d = std::fabs(x - y);
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best = c;
      best_d = d;
    }
  }
  return static_cast<uint8_t>(best);
}

const Fp8Format kFormats[] = {Fp8Format::kE4M3, Fp8Format::kE5M2};

TEST(Fp8Format, EveryCodeHasItsOcpValue) {
  for (const Fp8Format f : kFormats) {
    for (int c = 0; c < 256; ++c) {
      const double want = value_of(c, f);
      const float got = fp8_to_float(static_cast<uint8_t>(c), f);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << fp8_format_name(f) << " code " << c;
      } else {
        EXPECT_EQ(static_cast<double>(got), want) << fp8_format_name(f) << " code " << c;
        EXPECT_EQ(std::signbit(got), (c & 0x80) != 0) << fp8_format_name(f) << " code " << c;
      }
    }
  }
  EXPECT_EQ(fp8_to_float(0x7e, Fp8Format::kE4M3), 448.0f);
  EXPECT_EQ(fp8_to_float(0x01, Fp8Format::kE4M3), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8_max(Fp8Format::kE4M3), 448.0f);
  EXPECT_EQ(fp8_to_float(0x7b, Fp8Format::kE5M2), 57344.0f);
  EXPECT_EQ(fp8_max(Fp8Format::kE5M2), 57344.0f);
}

TEST(Fp8Format, EveryFiniteCodeConvertsBackToItself) {
  for (const Fp8Format f : kFormats) {
    for (int c = 0; c < 256; ++c) {
      const float v = fp8_to_float(static_cast<uint8_t>(c), f);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(float_to_fp8(v, f), c) << fp8_format_name(f) << " code " << c;
    }
  }
}

TEST(Fp8Format, RoundsToTheNearestCodeTiesToEven) {
  for (const Fp8Format f : kFormats) {
    std::vector<float> probes;
    // Every tie (the midpoint of two neighbouring codes) and the floats on either side of it.
    for (int c = 0; c < 0x7f; ++c) {
      const float lo = fp8_to_float(static_cast<uint8_t>(c), f);
      const float hi = fp8_to_float(static_cast<uint8_t>(c + 1), f);
      if (!std::isfinite(lo) || !std::isfinite(hi)) continue;
      const float mid = lo + (hi - lo) / 2;  // exact: a few significant bits
      for (const float p : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
        probes.push_back(p);
        probes.push_back(-p);
      }
    }
    // Seeded floats over the whole range: subnormal codes to past the largest.
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> exponent(-20.0f, 18.0f), mantissa(1.0f, 2.0f);
    for (int i = 0; i < 20000; ++i) {
      const float v = std::ldexp(mantissa(rng), static_cast<int>(exponent(rng)));
      probes.push_back(i % 2 ? v : -v);
    }
    for (const float p : probes) {
      ASSERT_EQ(float_to_fp8(p, f), nearest_code(p, f))
          << fp8_format_name(f) << " " << p << " (" << std::hexfloat << p << ")";
    }
  }
}

TEST(Fp8Format, SaturatesAndKeepsNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const float v : {448.0f, 449.0f, 464.0f, 480.0f, 1e9f, inf}) {
    EXPECT_EQ(float_to_fp8(v, Fp8Format::kE4M3), 0x7e) << v;
    EXPECT_EQ(float_to_fp8(-v, Fp8Format::kE4M3), 0xfe) << v;
  }
  for (const float v : {57344.0f, 61440.0f, 1e9f, inf}) {
    EXPECT_EQ(float_to_fp8(v, Fp8Format::kE5M2), 0x7b) << v;
    EXPECT_EQ(float_to_fp8(-v, Fp8Format::kE5M2), 0xfb) << v;
  }
  EXPECT_EQ(float_to_fp8(nan, Fp8Format::kE4M3), 0x7f);
  EXPECT_EQ(float_to_fp8(-nan, Fp8Format::kE4M3), 0xff);
  EXPECT_EQ(float_to_fp8(nan, Fp8Format::kE5M2), 0x7f);
  EXPECT_EQ(float_to_fp8(-0.0f, Fp8Format::kE4M3), 0x80);
}

TEST(Fp8Format, MatchesTorchsCastOfClampedValues) {
  // torch 2.11: tensor([448, 460, 464, 2**-10, 0.75 * 2**-9, 1.5 * 2**-10, 1.0625, 1.1875, -500])
  // .clamp(-448, 448).to(float8_e4m3fn) -> 0x7e 0x7e 0x7e 0x00 0x01 0x01 0x38 0x3a 0xfe.
  const std::vector<std::pair<float, uint8_t>> e4m3 = {{448.0f, 0x7e},
                                                       {460.0f, 0x7e},
                                                       {464.0f, 0x7e},
                                                       {std::ldexp(1.0f, -10), 0x00},
                                                       {0.75f * std::ldexp(1.0f, -9), 0x01},
                                                       {1.5f * std::ldexp(1.0f, -10), 0x01},
                                                       {1.0625f, 0x38},
                                                       {1.1875f, 0x3a},
                                                       {-500.0f, 0xfe}};
  for (const auto& [v, code] : e4m3) EXPECT_EQ(float_to_fp8(v, Fp8Format::kE4M3), code) << v;
  // tensor([448, 1.0, 1.25, 2**-10, 1.5 * 2**-10, 57344]).clamp(-57344, 57344)
  // .to(float8_e5m2) -> 0x5f 0x3c 0x3d 0x14 0x16 0x7b.
  const std::vector<std::pair<float, uint8_t>> e5m2 = {{448.0f, 0x5f},
                                                       {1.0f, 0x3c},
                                                       {1.25f, 0x3d},
                                                       {std::ldexp(1.0f, -10), 0x14},
                                                       {1.5f * std::ldexp(1.0f, -10), 0x16},
                                                       {57344.0f, 0x7b}};
  for (const auto& [v, code] : e5m2) EXPECT_EQ(float_to_fp8(v, Fp8Format::kE5M2), code) << v;
}

TEST(Fp8Format, NamesParseBack) {
  for (const Fp8Format f : kFormats) EXPECT_EQ(parse_fp8_format(fp8_format_name(f)), f);
  EXPECT_EQ(parse_fp8_format("e4m3fn"), std::nullopt);
}

}  // namespace
}  // namespace nvdet
