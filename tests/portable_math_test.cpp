// kernels/portable_math.cuh on the host: exp and log against double within their stated ulp,
// special values, subnormals kept, and the bf16 / fp16 conversions equal to lib/core's (an
// independent implementation) for every 16-bit pattern and a sweep of floats.
#include "kernels/portable_math.cuh"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "lib/core/dtype.h"

namespace nvdet::testing {
namespace {

namespace pt = nvdet::kernels::portable;

// Distance in units of the last place of `want` (rounded to float), in float's spacing there.
double ulp_error(float got, double want) {
  const float w = static_cast<float>(want);
  const double ulp = std::abs(static_cast<double>(std::nextafter(w, INFINITY)) - w);
  return std::abs(static_cast<double>(got) - want) / ulp;
}

// Two million seeded uniform inputs in [lo, hi].
template <class F>
void for_inputs(float lo, float hi, F f) {
  std::mt19937 rng(20261201);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int i = 0; i < 2000000; ++i) f(u(rng));
}

TEST(PortableMath, ExpWithinTwoUlpOfDouble) {
  double worst = 0.0;
  float worst_x = 0.0f;
  auto check = [&](float x) {
    const double want = std::exp(static_cast<double>(x));
    if (want < std::numeric_limits<float>::min()) return;  // subnormal results: checked below
    const double e = ulp_error(pt::exp(x), want);
    if (e > worst) {
      worst = e;
      worst_x = x;
    }
  };
  for_inputs(-87.0f, 88.7f, check);
  for_inputs(-1.0f, 1.0f, check);
  // Every float in [-2^-10, 2^-10] has exp within an ulp of 1: probe the tiny ones densely.
  for (float x = 1e-10f; x < 1e-3f; x *= 1.001f) {
    check(x);
    check(-x);
  }
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
  std::printf("portable exp: worst error %.3f ulp (x = %.9g)\n", worst, worst_x);
}

TEST(PortableMath, ExpSpecialValuesAndSubnormals) {
  EXPECT_EQ(pt::exp(0.0f), 1.0f);
  EXPECT_EQ(pt::exp(-0.0f), 1.0f);
  EXPECT_EQ(pt::exp(-INFINITY), 0.0f);
  EXPECT_EQ(pt::exp(INFINITY), INFINITY);
  EXPECT_EQ(pt::exp(88.72283935546875f), INFINITY);  // just above log(FLT_MAX)
  EXPECT_LT(pt::exp(88.72283172607422f), INFINITY);  // the float below it
  EXPECT_EQ(std::bit_cast<uint32_t>(pt::exp(NAN)), pt::kCanonicalNanBits);
  EXPECT_EQ(pt::exp(-104.0f), 0.0f);
  // Subnormal results are kept (no flush to zero) and within 1 unit of the subnormal spacing.
  const float denorm_min = std::numeric_limits<float>::denorm_min();
  for (float x = -103.0f; x < -87.5f; x += 0.37f) {
    const double want = std::exp(static_cast<double>(x));
    const float got = pt::exp(x);
    EXPECT_GT(got, 0.0f) << x;
    EXPECT_LE(std::abs(got - want), std::max(denorm_min * 1.0, want * 3e-7)) << x;
  }
}

TEST(PortableMath, LogWithinTwoUlpOfDouble) {
  double worst = 0.0;
  float worst_x = 0.0f;
  auto check = [&](float x) {
    const double want = std::log(static_cast<double>(x));
    if (want == 0.0) {
      EXPECT_EQ(pt::log(x), 0.0f);
      return;
    }
    const double e = ulp_error(pt::log(x), want);
    if (e > worst) {
      worst = e;
      worst_x = x;
    }
  };
  for_inputs(1e-30f, 1e30f, check);
  for_inputs(0.5f, 2.0f, check);
  for_inputs(1.0f, 200000.0f, check);  // log-softmax's sums of exp: >= 1
  for (uint32_t u = 0x00000001u; u < 0x7f800000u; u += 0x00012345u) check(std::bit_cast<float>(u));
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
  std::printf("portable log: worst error %.3f ulp (x = %.9g)\n", worst, worst_x);
}

TEST(PortableMath, LogSpecialValues) {
  EXPECT_EQ(pt::log(1.0f), 0.0f);
  EXPECT_EQ(pt::log(0.0f), -INFINITY);
  EXPECT_EQ(pt::log(-0.0f), -INFINITY);
  EXPECT_EQ(pt::log(INFINITY), INFINITY);
  EXPECT_EQ(std::bit_cast<uint32_t>(pt::log(-1.0f)), pt::kCanonicalNanBits);
  EXPECT_EQ(std::bit_cast<uint32_t>(pt::log(NAN)), pt::kCanonicalNanBits);
  EXPECT_NEAR(pt::log(std::numeric_limits<float>::denorm_min()), std::log(1.4012984643e-45), 1e-4);
}

TEST(PortableMath, SubnormalArithmeticIsNotFlushed) {
  // The CPU side must not run with FTZ/DAZ: a subnormal product stays subnormal.
  const float tiny = std::numeric_limits<float>::min();
  const float half = pt::mul(tiny, 0.5f);
  EXPECT_GT(half, 0.0f);
  EXPECT_EQ(pt::add(half, half), tiny);
}

TEST(PortableMath, SixteenBitConversionsMatchTheIndependentOnes) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const auto h = static_cast<uint16_t>(b);
    const float from_half = pt::to_float(pt::Fp16{h});
    const float want_half = fp16_bits_to_float(h);
    if (std::isnan(want_half)) {
      EXPECT_TRUE(std::isnan(from_half)) << b;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(from_half), std::bit_cast<uint32_t>(want_half)) << b;
    }
    const float from_bf16 = pt::to_float(pt::Bf16{h});
    EXPECT_EQ(std::bit_cast<uint32_t>(from_bf16), b << 16);
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  auto check = [](float f) {
    if (std::isnan(f)) {
      EXPECT_EQ(pt::from_float<pt::Bf16>(f).bits, 0x7fc0u);
      EXPECT_EQ(pt::from_float<pt::Fp16>(f).bits, 0x7e00u);
      return;
    }
    EXPECT_EQ(pt::from_float<pt::Bf16>(f).bits, float_to_bf16_bits(f)) << f;
    EXPECT_EQ(pt::from_float<pt::Fp16>(f).bits, float_to_fp16_bits(f)) << f;
  };
  for (int i = 0; i < 2000000; ++i) check(std::bit_cast<float>(bits(rng)));
  // Ties and the fp16 subnormal / overflow edges.
  for (uint32_t u = 0x33000000u - 64; u < 0x38800000u + 64; u += 997)
    check(std::bit_cast<float>(u));
  for (float f : {65504.0f, 65519.99f, 65520.0f, 5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f,
                  1.0f + 0x1p-8f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, -0.0f}) {
    check(f);
  }
}

}  // namespace
}  // namespace nvdet::testing
