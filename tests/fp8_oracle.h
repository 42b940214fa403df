#pragma once
// The FP8 GEMM's independent oracle and arguments, shared by the CPU and GPU FP8 tests: each
// operand dequantised on its own (code * its scale) with the test's own reading of the codes (the
// OCP fields, not nvdet's table), the products summed in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/ops/fp8_quant.h"
#include "lib/ops/op_args.h"

namespace nvdet::testing {

inline double decode_fp8(uint8_t code, Fp8Format f) {
  const int mbits = f == Fp8Format::kE4M3 ? 3 : 2, bias = f == Fp8Format::kE4M3 ? 7 : 15;
  const int e = (code & 0x7f) >> mbits, m = code & ((1 << mbits) - 1);
  const double v =
      e == 0 ? std::ldexp(m, 1 - bias - mbits) : std::ldexp(m + (1 << mbits), e - bias - mbits);
  return (code & 0x80) ? -v : v;
}

struct Fp8Oracle {
  std::vector<double> out;    // [m, n]
  std::vector<double> bound;  // [m, n]: sum over k of |term| + |bias|
};

// out[i, j] = sum_k deq(a[i, k]) * deq(w[j, k]) (+ bias[j]), `a` quantised by `scheme`.
inline Fp8Oracle dequantised_gemm(const HostTensor& a, const Fp8Weight& w, const HostTensor* bias,
                                  const Fp8Scheme& scheme) {
  const Fp8Activations qa = quantize_activations(a, scheme);
  const int64_t m = a.dim(0);
  Fp8Oracle o{std::vector<double>(static_cast<size_t>(m * w.rows)),
              std::vector<double>(static_cast<size_t>(m * w.rows))};
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < w.rows; ++j) {
      double sum = bias ? bias->get(j) : 0.0, abs_sum = bias ? std::fabs(bias->get(j)) : 0.0;
      for (int64_t k = 0; k < w.cols; ++k) {
        const double x =
            decode_fp8(qa.codes[i * w.cols + k], scheme.format) * qa.scale(i, k / kFp8Group);
        const double y = decode_fp8(w.codes[j * w.cols + k], w.format) * w.scale(j, k / kFp8Group);
        sum += x * y;
        abs_sum += std::fabs(x * y);
      }
      o.out[i * w.rows + j] = sum;
      o.bound[i * w.rows + j] = abs_sum;
    }
  }
  return o;
}

// The largest |got - want| of an FP8 GEMM's output, each relative to its sum of |terms| (the
// bound of any summation order's error).
inline double worst_relative_error(const HostTensor& got, const Fp8Oracle& want) {
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::fabs(got.get(i) - want.out[i]) / want.bound[i]);
  return worst;
}

// An FP8 GEMM's arguments: `a` quantised by `scheme` against `w`, fp32 out.
inline GemmArgs fp8_args(const HostTensor& a, const Fp8Weight& w, const HostTensor* bias,
                         const Fp8Scheme& scheme) {
  GemmArgs g;
  g.a = &a;
  g.bias = bias;
  g.out_dtype = DType::kFP32;
  g.fp8_w = &w;
  g.fp8 = scheme;
  return g;
}

}  // namespace nvdet::testing
