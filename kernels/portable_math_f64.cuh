#pragma once
// exp in double, written once and compiled for the host and the device with the same bits
// (kernels/portable_math.cuh states the rules: only correctly rounded IEEE operations, written as
// __dadd_rn / __dmul_rn on the device so nvcc never contracts them into an FMA, and no math
// library). MoE routing (kernels/moe_route.cuh) takes its softmax in double through it, so a
// router's weights are the same bits whether the host or the device routes.
//
// exp(x) = 2^k * exp(r), k = floor(x * log2(e) + 0.5), r = (x - k * ln2_hi) - k * ln2_lo, |r| <=
// 0.35 (ln2_hi has 32 significant bits, so k * ln2_hi is exact for |k| <= 2^11). exp(r) is the
// degree-13 Taylor polynomial in Horner form (truncation below 5e-18 relative at |r| = 0.35;
// coefficients 1/n! as the nearest doubles, written as decimal literals). 2^k is applied as two
// exact powers of two, so a subnormal result is rounded once. tests/portable_math_test.cpp
// measures the error against the C library over a sweep.
#include "kernels/portable_math.cuh"

namespace nvdet::kernels::portable {

NVDET_PORTABLE_FN double add_f64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
NVDET_PORTABLE_FN double sub_f64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
NVDET_PORTABLE_FN double mul_f64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
NVDET_PORTABLE_FN double div_f64(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

// 2^n for -1022 <= n <= 1023, exactly.
NVDET_PORTABLE_FN double pow2_f64(int n) {
  const uint64_t bits = static_cast<uint64_t>(n + 1023) << 52;
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
#endif
}

inline constexpr double kLog2eF64 = 1.4426950408889634;
inline constexpr double kLn2HiF64 = 0.6931471803691238;     // 0x3fe62e42fee00000
inline constexpr double kLn2LoF64 = 1.9082149292705877e-10;  // ln 2 - kLn2HiF64
inline constexpr double kExpOverflowF64 = 709.782712893384;   // above: exp > DBL_MAX
inline constexpr double kExpUnderflowF64 = -745.1332191019412;  // below: exp < 2^-1075

// exp(x) for finite x; +inf above the overflow bound, 0 below the underflow bound.
NVDET_PORTABLE_FN double exp_f64(double x) {
  if (x > kExpOverflowF64) return mul_f64(pow2_f64(1023), 2.0);  // +inf
  if (x < kExpUnderflowF64) return 0.0;
#if defined(__CUDA_ARCH__)
  const double kd = ::floor(add_f64(mul_f64(x, kLog2eF64), 0.5));
#else
  const double kd = std::floor(add_f64(mul_f64(x, kLog2eF64), 0.5));
#endif
  const int k = static_cast<int>(kd);
  const double r = sub_f64(sub_f64(x, mul_f64(kd, kLn2HiF64)), mul_f64(kd, kLn2LoF64));
  double p = 1.6059043836821613e-10;  // 1/13!
  p = add_f64(mul_f64(p, r), 2.08767569878681e-09);
  p = add_f64(mul_f64(p, r), 2.505210838544172e-08);
  p = add_f64(mul_f64(p, r), 2.755731922398589e-07);
  p = add_f64(mul_f64(p, r), 2.7557319223985893e-06);
  p = add_f64(mul_f64(p, r), 2.48015873015873e-05);
  p = add_f64(mul_f64(p, r), 0.0001984126984126984);
  p = add_f64(mul_f64(p, r), 0.001388888888888889);
  p = add_f64(mul_f64(p, r), 0.008333333333333333);
  p = add_f64(mul_f64(p, r), 0.041666666666666664);
  p = add_f64(mul_f64(p, r), 0.16666666666666666);
  p = add_f64(mul_f64(p, r), 0.5);
  p = add_f64(mul_f64(p, r), 1.0);
  p = add_f64(mul_f64(p, r), 1.0);
  const int k1 = k / 2, k2 = k - k1;
  return mul_f64(mul_f64(p, pow2_f64(k1)), pow2_f64(k2));
}

}  // namespace nvdet::kernels::portable
