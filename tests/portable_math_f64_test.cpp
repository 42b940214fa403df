// kernels/portable_math_f64.cuh on the host: exp_f64 against the C library's long-double expl
// within its stated ulp, its bounds and special values; and MoE routing through it
// (kernels/moe_route.cuh) against a softmax written with std::exp, to within one fp32 ulp.
#include "kernels/portable_math_f64.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "lib/ops/moe_routing.h"

namespace nvdet::testing {
namespace {

namespace pt = nvdet::kernels::portable;

// Distance in units of the last place of the double nearest to `want`.
double ulp_error(double got, long double want) {
  const double w = static_cast<double>(want);
  const double ulp = std::abs(std::nextafter(w, INFINITY) - w);
  return static_cast<double>(std::abs(static_cast<long double>(got) - want) / ulp);
}

TEST(PortableMathF64, ExpWithinTwoUlp) {
  double worst = 0.0, worst_x = 0.0;
  const auto check = [&](double x) {
    const long double want = expl(static_cast<long double>(x));
    if (want < 2.2250738585072014e-308L) return;  // subnormal results: below
    const double e = ulp_error(pt::exp_f64(x), want);
    if (e > worst) {
      worst = e;
      worst_x = x;
    }
  };
  std::mt19937_64 rng(20261205);
  std::uniform_real_distribution<double> wide(-708.0, 709.0), unit(-1.0, 1.0), softmax(-60.0, 0.0);
  for (int i = 0; i < 1000000; ++i) {
    check(wide(rng));
    check(unit(rng));
    check(softmax(rng));
  }
  for (double x = 1e-300; x < 1e-3; x *= 1.01) {
    check(x);
    check(-x);
  }
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
  std::printf("portable exp_f64: worst error %.3f ulp (x = %.17g)\n", worst, worst_x);
}

TEST(PortableMathF64, ExpBoundsAndSpecialValues) {
  EXPECT_EQ(pt::exp_f64(0.0), 1.0);
  EXPECT_EQ(pt::exp_f64(-0.0), 1.0);
  EXPECT_EQ(pt::exp_f64(710.0), INFINITY);
  EXPECT_LT(pt::exp_f64(709.78), INFINITY);
  EXPECT_EQ(pt::exp_f64(-746.0), 0.0);
  EXPECT_EQ(pt::exp_f64(-1e300), 0.0);
  // Subnormal results: within one ulp of the smallest subnormal's scale.
  for (double x : {-709.0, -720.0, -740.0, -745.0}) {
    const long double want = expl(static_cast<long double>(x));
    EXPECT_LE(std::abs(static_cast<long double>(pt::exp_f64(x)) - want), 4.9406564584124654e-324L)
        << x;
  }
}

TEST(PortableMathF64, RoutingWeightsAreTheCLibrarySoftmaxsToOneUlp) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 3.0f);
  const int rows = 500, experts = 128, k = 8;
  std::vector<float> logits(static_cast<size_t>(rows * experts));
  for (float& l : logits) l = n(rng);
  for (bool norm : {false, true}) {
    const MoeRoute r = route_tokens(logits, rows, experts, k, norm);
    for (int row = 0; row < rows; ++row) {
      const float* l = logits.data() + static_cast<size_t>(row) * experts;
      double max = l[0], denom = 0.0, kept = 0.0;
      for (int e = 1; e < experts; ++e) max = std::fmax(max, double{l[e]});
      for (int e = 0; e < experts; ++e) denom += std::exp(double{l[e]} - max);
      for (int j = 0; j < k; ++j) kept += std::exp(double{l[r.expert[row * k + j]]} - max) / denom;
      for (int j = 0; j < k; ++j) {
        const double s = std::exp(double{l[r.expert[row * k + j]]} - max) / denom;
        const float want = static_cast<float>(norm ? s / kept : s);
        const float got = r.weight[static_cast<size_t>(row * k + j)];
        EXPECT_LE(std::abs(got - want), std::abs(std::nextafter(want, INFINITY) - want))
            << "row " << row << " rank " << j;
      }
    }
  }
}

}  // namespace
}  // namespace nvdet::testing
