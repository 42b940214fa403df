#pragma once
// The arithmetic of the portable invariant backends (cuda-portable and cpu-portable), written
// once and compiled twice: by nvcc for the device and by the host C++ compiler for the CPU.
// Bitwise identity between the two rests on using only operations that IEEE 754 defines to the
// bit and that both sides implement exactly:
//  - fp32 add, subtract, multiply, divide and square root, each correctly rounded (round to
//    nearest even). On the device they are written as __fadd_rn / __fmul_rn / __fdiv_rn /
//    __fsqrt_rn, which nvcc never contracts into an FMA (the kernels are built with --fmad=true,
//    so a plain `a * b + c` could become one FFMA on the device and two roundings on the host);
//    on the host as plain operators, with -ffp-contract=off and FLT_EVAL_METHOD 0 (checked below).
//    No FMA is used anywhere, on either side.
//  - floor, comparisons, integer and bit operations (exact).
//  - exp and log: nvdet's own range reduction and polynomials built from the operations above,
//    never expf/logf/__expf from either math library (their results differ between libraries).
//    Accuracy against double (tests/portable_math_test.cpp measures it over a sweep of inputs):
//    exp within 2 ulp for normal results, log within 2 ulp (measured: 1.2 and 0.94 ulp).
//  - bf16 / fp16 <-> fp32 conversions by bit manipulation (round to nearest even), and a NaN
//    result always stored as one canonical quiet NaN (the device and x86 produce different NaN
//    payloads for the same invalid operation).
// Subnormals are kept on both sides: the device is built with --ftz=false and the CPU never sets
// FTZ/DAZ.
//
// This header includes no CUDA header and nothing from lib/: the CPU backend includes it as plain
// C++, where NVDET_PORTABLE_FN expands to `inline`.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define NVDET_PORTABLE_FN __host__ __device__ __forceinline__
#else
#include <cfloat>
#include <cmath>
#define NVDET_PORTABLE_FN inline
// Excess precision (x87) would round intermediate results differently from the device.
static_assert(FLT_EVAL_METHOD == 0, "cpu-portable needs float expressions evaluated in float");
#endif

namespace nvdet::kernels::portable {

// ---- the five correctly rounded operations -----------------------------------------------------

NVDET_PORTABLE_FN float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
NVDET_PORTABLE_FN float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
NVDET_PORTABLE_FN float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
NVDET_PORTABLE_FN float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
NVDET_PORTABLE_FN float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}
// Exact on both sides (no rounding involved).
NVDET_PORTABLE_FN float floor(float a) {
#if defined(__CUDA_ARCH__)
  return floorf(a);
#else
  return std::floor(a);
#endif
}

// acc + a * b with the product rounded first: two roundings, never an FMA.
NVDET_PORTABLE_FN float mul_add(float acc, float a, float b) { return add(acc, mul(a, b)); }

// The larger of a and b; a when they compare equal or b is NaN. A fixed rule, so that +0 / -0
// and NaN pick the same operand on both sides (fmaxf leaves that to the implementation).
NVDET_PORTABLE_FN float max(float a, float b) { return b > a ? b : a; }

// ---- bits ---------------------------------------------------------------------------------------

NVDET_PORTABLE_FN uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}
NVDET_PORTABLE_FN float float_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}
NVDET_PORTABLE_FN bool is_nan(float f) { return (bits_of(f) & 0x7fffffffu) > 0x7f800000u; }

inline constexpr uint32_t kCanonicalNanBits = 0x7fc00000u;
inline constexpr uint32_t kInfBits = 0x7f800000u;

// 2^n for -126 <= n <= 127, exactly.
NVDET_PORTABLE_FN float pow2(int n) { return float_of(static_cast<uint32_t>(n + 127) << 23); }

// ---- exp ----------------------------------------------------------------------------------------
// exp(x) = 2^k * exp(r), k = floor(x * log2(e) + 0.5), r = (x - k * ln2_hi) - k * ln2_lo, |r| <
// 0.35 (ln2_hi has 16 significant bits, so k * ln2_hi is exact for |k| <= 256). exp(r) is the
// degree-7 Taylor polynomial in Horner form (truncation error below 4e-9 relative at |r| = 0.35;
// coefficients 1/n! rounded to float, written as decimal literals so no compiler folds a division).
// 2^k is applied as two exact powers of two (k split in halves) so that no factor overflows; a
// subnormal result is rounded twice, identically on both sides.

inline constexpr float kLog2e = 1.44269502162933349609375f;
inline constexpr float kLn2Hi = 0.693145751953125f;              // 0x3f317200
inline constexpr float kLn2Lo = 1.42860676533018704503775e-06f;  // ln 2 - kLn2Hi
inline constexpr float kExpOverflow = 88.72283935546875f;      // smallest float with exp > FLT_MAX
inline constexpr float kExpUnderflow = -103.972084045410156f;  // below: exp < 2^-150, rounds to 0

NVDET_PORTABLE_FN float exp(float x) {
  if (is_nan(x)) return float_of(kCanonicalNanBits);
  if (x >= kExpOverflow) return float_of(kInfBits);
  if (x < kExpUnderflow) return 0.0f;
  const float kf = floor(add(mul(x, kLog2e), 0.5f));
  const int k = static_cast<int>(kf);
  const float r = sub(sub(x, mul(kf, kLn2Hi)), mul(kf, kLn2Lo));
  float p = 1.98412701138295233e-04f;
  p = add(mul(p, r), 1.38888892251998186e-03f);
  p = add(mul(p, r), 8.33333376795053482e-03f);
  p = add(mul(p, r), 4.16666679084300995e-02f);
  p = add(mul(p, r), 1.66666671633720398e-01f);
  p = add(mul(p, r), 0.5f);
  p = add(mul(p, r), 1.0f);
  p = add(mul(p, r), 1.0f);
  const int k1 = k / 2, k2 = k - k1;  // both in [-75, 64]
  return mul(mul(p, pow2(k1)), pow2(k2));
}

// ---- log ----------------------------------------------------------------------------------------
// log(x) = e * ln2 + log(m), x = m * 2^e with m in [sqrt(1/2), sqrt(2)) (subnormal x is first
// scaled by 2^23, exactly). With f = m - 1 (exact) and s = f / (2 + f), log(m) = 2 atanh(s) =
// 2s + s * R, R = z * (2/3 + z * (2/5 + z * (2/7 + z * 2/9))), z = s^2, |s| <= 0.1716 (truncation
// error below 2e-9 relative); since 2s = f - s * f, log(m) = f - s * (f - R), whose leading term f
// is exact, so the rounding of s only reaches the small correction. The result is
// e * ln2_hi + (e * ln2_lo + log(m)), e * ln2_hi exact.

NVDET_PORTABLE_FN float log(float x) {
  if (is_nan(x) || x < 0.0f) return float_of(kCanonicalNanBits);
  if (x == 0.0f) return float_of(kInfBits | 0x80000000u);  // -inf
  if (bits_of(x) == kInfBits) return x;
  int e = 0;
  uint32_t u = bits_of(x);
  if (u < 0x00800000u) {  // subnormal
    u = bits_of(mul(x, 8388608.0f));
    e = -23;
  }
  e += static_cast<int>(u >> 23) - 127;
  float m = float_of((u & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421353816986083984375f) {
    m = mul(m, 0.5f);
    e += 1;
  }
  const float f = sub(m, 1.0f);
  const float s = div(f, add(2.0f, f));
  const float z = mul(s, s);
  float p = 2.22222223877906799e-01f;
  p = add(mul(p, z), 2.85714298486709595e-01f);
  p = add(mul(p, z), 4.00000005960464478e-01f);
  p = add(mul(p, z), 6.66666686534881592e-01f);
  const float r = mul(z, p);
  const float log_m = sub(f, mul(s, sub(f, r)));
  const float ef = static_cast<float>(e);
  return add(mul(ef, kLn2Hi), add(mul(ef, kLn2Lo), log_m));
}

// ---- storage types ------------------------------------------------------------------------------
// 16-bit elements as raw bits, so that host and device share one conversion. Layout-compatible
// with __nv_bfloat16 / __half / uint16_t storage.

struct Bf16 {
  uint16_t bits;
};
struct Fp16 {
  uint16_t bits;
};

NVDET_PORTABLE_FN float to_float(float v) { return v; }
NVDET_PORTABLE_FN float to_float(Bf16 v) { return float_of(static_cast<uint32_t>(v.bits) << 16); }
NVDET_PORTABLE_FN float to_float(Fp16 v) {
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x8000u) << 16;
  const uint32_t exp = (v.bits >> 10) & 0x1fu;
  const uint32_t mant = v.bits & 0x3ffu;
  if (exp == 0x1fu) return float_of(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24, exact in float (a normal float, or zero).
  const float magnitude = mul(static_cast<float>(mant), 5.9604644775390625e-08f);
  return float_of(sign | bits_of(magnitude));
}

// Round to nearest even; NaN -> one canonical quiet NaN.
template <class T>
NVDET_PORTABLE_FN T from_float(float v);

template <>
NVDET_PORTABLE_FN float from_float<float>(float v) {
  return is_nan(v) ? float_of(kCanonicalNanBits) : v;
}
template <>
NVDET_PORTABLE_FN Bf16 from_float<Bf16>(float v) {
  if (is_nan(v)) return Bf16{0x7fc0u};
  const uint32_t u = bits_of(v);
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);  // carries into the exponent: exact
  return Bf16{static_cast<uint16_t>(rounded >> 16)};
}
template <>
NVDET_PORTABLE_FN Fp16 from_float<Fp16>(float v) {
  if (is_nan(v)) return Fp16{0x7e00u};
  const uint32_t u = bits_of(v);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a >= 0x477ff000u) return Fp16{static_cast<uint16_t>(sign | 0x7c00u)};  // >= 65520: inf
  if (a >= 0x38800000u) {  // normal half: drop 13 bits, nearest even, re-bias the exponent
    const uint32_t r = a - (112u << 23);
    return Fp16{static_cast<uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13))};
  }
  if (a <= 0x33000000u) return Fp16{sign};  // <= 2^-25: rounds to zero (a tie goes to even 0)
  // Subnormal half: units of 2^-24 are mant >> shift, rounded to nearest even.
  const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const int shift = 126 - static_cast<int>(a >> 23);  // 14..24
  const uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  const uint32_t h = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  return Fp16{static_cast<uint16_t>(sign | h)};
}

}  // namespace nvdet::kernels::portable
