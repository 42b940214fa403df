// cublas's FP8 GEMM (cuBLASLt's FP8 matmul; lib/cuda/gemm_fp8_ops.cpp):
//  - correctness: e4m3 with static and dynamic_tensor activation scales and a tensor weight scale,
//    promoted and fast accumulation, with and without a bias, against an independent
//    dequantise-then-double product of the same codes and scales, within the bound of each
//    accumulation's rounding (stated at `tolerance`); the largest error is printed;
//  - the scheme's batch dependence: with dynamic_tensor a loud row elsewhere in the batch moves
//    the probe row's scale and so its bits; with static the probe row stays within tolerance;
//  - its per-row (OUTER_VEC) and block-scaled (VEC128 with BLK128x128) modes against the same
//    oracle;
//  - the refusals of what cuBLASLt's FP8 GEMM does not compute, on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/ops/fp8_quant.h"
#include "tests/fp8_oracle.h"
#include "tests/test_support.h"

namespace nvdet {
namespace {

using testing::fp8_args;

#define REQUIRE_GPU() \
  if (!nvdet::testing::gpu_available()) GTEST_SKIP() << "no GPU"

constexpr int64_t kN = 384, kK = 512;  // K and the fp32 output rows 16-byte multiples

HostTensor seeded(std::vector<int64_t> shape, uint64_t stream, float stddev) {
  HostTensor t(DType::kBF16, std::move(shape));
  fill_normal(t, 41, stream, stddev);
  return t;
}

Fp8Scheme tensor_scheme(Fp8ActScale act, Fp8Accumulation acc) {
  Fp8Scheme s;
  s.format = Fp8Format::kE4M3;
  s.act_scale = act;
  s.weight_scale = Fp8WeightScale::kTensor;
  s.accumulation = acc;
  s.static_scale = 0.008f;
  return s;
}

// Relative to sum_k |term| (the bound of any summation order's error). The FP8 tensor cores add
// products in a narrower accumulator than fp32 (about 13 mantissa bits): with fast accumulation
// all K = 512 of them, at most 512 * 2^-14 = 2^-5; promoted, cuBLASLt moves the partial sum into
// fp32 at least every 128 of K, at most 128 * 2^-14 = 2^-7. A wrong scale, operand or layout is
// off by the order of the values themselves.
double tolerance(Fp8Accumulation acc) {
  return acc == Fp8Accumulation::kFast ? std::ldexp(1.0, -5) : std::ldexp(1.0, -7);
}

TEST(GpuFp8Gemm, CublasMatchesTheDequantisedProduct) {
  REQUIRE_GPU();
  const HostTensor w = seeded({kN, kK}, 2, 0.05f);
  const HostTensor bias = seeded({kN}, 3, 0.5f);
  const Fp8Weight qw = quantize_weight(w, Fp8Format::kE4M3, Fp8WeightScale::kTensor);
  auto cublas = make_backend("cublas");
  for (const int64_t m : {1, 7, 64}) {
    const HostTensor a = seeded({m, kK}, 10 + static_cast<uint64_t>(m), 1.0f);
    for (const Fp8ActScale act : {Fp8ActScale::kStatic, Fp8ActScale::kDynamicTensor}) {
      for (const Fp8Accumulation acc : {Fp8Accumulation::kPromoted, Fp8Accumulation::kFast}) {
        for (const HostTensor* b : {static_cast<const HostTensor*>(nullptr), &bias}) {
          const Fp8Scheme scheme = tensor_scheme(act, acc);
          const testing::Fp8Oracle want = testing::dequantised_gemm(a, qw, b, scheme);
          RunNotes notes;
          const HostTensor got = cublas->run(fp8_args(a, qw, b, scheme), &notes);
          ASSERT_EQ(got.shape(), (std::vector<int64_t>{m, kN}));
          const double worst = testing::worst_relative_error(got, want);
          const std::string what =
              fp8_scheme_text(scheme) + ", m " + std::to_string(m) + (b ? ", bias" : "");
          EXPECT_LE(worst, tolerance(acc)) << what;
          EXPECT_EQ(notes.at("kernel"), "cublasLt fp8") << what;
          EXPECT_EQ(notes.at("fp8"), fp8_scheme_text(scheme)) << what;
          EXPECT_EQ(notes.at("fast_accum"), acc == Fp8Accumulation::kFast ? "on" : "off");
          // Without a bias cuBLASLt rounds to the output dtype itself, as a serving stack calls
          // it; a bias goes through nvdet's fp32 pass.
          EXPECT_EQ(notes.at("rounding").rfind(b ? "fp32 D" : "cuBLASLt's epilogue", 0), 0u)
              << what << ": " << notes.at("rounding");
          std::cout << what << ": largest error " << worst << " of sum |a w| (tolerance "
                    << tolerance(acc) << ")\n";
        }
      }
    }
  }
}

// cuBLASLt's other scale modes: a scale per row of each operand (dynamic_token with channel) and
// 128-wide activation vectors with 128x128 weight blocks (group_128 with block_128x128), against
// the same oracle, with and without a bias, at m where the block mode has kernels and where it
// needs the activations padded (the notes say so).
TEST(GpuFp8Gemm, CublasScaleModesMatchTheDequantisedProduct) {
  REQUIRE_GPU();
  const HostTensor w = seeded({kN, kK}, 2, 0.05f);
  const HostTensor bias = seeded({kN}, 3, 0.5f);
  auto cublas = make_backend("cublas");
  struct Pair {
    Fp8ActScale act;
    Fp8WeightScale weight;
    const char* mode;
  };
  for (const Pair& p : {Pair{Fp8ActScale::kDynamicToken, Fp8WeightScale::kChannel, "OUTER_VEC"},
                        Pair{Fp8ActScale::kGroup128, Fp8WeightScale::kBlock128, "VEC128"}}) {
    const Fp8Weight qw = quantize_weight(w, Fp8Format::kE4M3, p.weight);
    Fp8Scheme scheme = tensor_scheme(p.act, Fp8Accumulation::kPromoted);
    scheme.weight_scale = p.weight;
    for (const int64_t m : {1, 7, 64, 256}) {
      const HostTensor a = seeded({m, kK}, 20 + static_cast<uint64_t>(m), 1.0f);
      for (const HostTensor* b : {static_cast<const HostTensor*>(nullptr), &bias}) {
        const testing::Fp8Oracle want = testing::dequantised_gemm(a, qw, b, scheme);
        RunNotes notes;
        const HostTensor got = cublas->run(fp8_args(a, qw, b, scheme), &notes);
        ASSERT_EQ(got.shape(), (std::vector<int64_t>{m, kN}));
        const double worst = testing::worst_relative_error(got, want);
        const std::string what =
            fp8_scheme_text(scheme) + ", m " + std::to_string(m) + (b ? ", bias" : "");
        EXPECT_LE(worst, tolerance(Fp8Accumulation::kPromoted)) << what;
        EXPECT_NE(notes.at("scale_mode").find(p.mode), std::string::npos) << what;
        std::cout << what << ": largest error " << worst << " of sum |a w|"
                  << (notes.count("m_padded") ? ", m padded " + notes.at("m_padded") : "")
                  << ", rounding: " << notes.at("rounding") << "\n";
      }
    }
  }
}

// The probe row alone and in a batch whose first filler is 16 times louder: dynamic_tensor's
// scale is that batch's max, so the probe's codes and bits move; static's do not (the GEMM's
// own heuristic may still change the bits: within tolerance, compared).
TEST(GpuFp8Gemm, DynamicTensorScaleFollowsTheBatch) {
  REQUIRE_GPU();
  const HostTensor w = seeded({kN, kK}, 2, 0.05f);
  const Fp8Weight qw = quantize_weight(w, Fp8Format::kE4M3, Fp8WeightScale::kTensor);
  const HostTensor probe = seeded({1, kK}, 7, 1.0f);
  HostTensor batch = seeded({33, kK}, 8, 1.0f);
  for (int64_t c = 0; c < kK; ++c) {
    batch.set(c, 16.0f * batch.get(c));    // row 0: loud
    batch.set(32 * kK + c, probe.get(c));  // row 32: the probe
  }
  auto cublas = make_backend("cublas");
  for (const Fp8ActScale act : {Fp8ActScale::kStatic, Fp8ActScale::kDynamicTensor}) {
    const Fp8Scheme scheme = tensor_scheme(act, Fp8Accumulation::kPromoted);
    const HostTensor alone = cublas->run(fp8_args(probe, qw, nullptr, scheme), nullptr);
    const HostTensor in_batch = cublas->run(fp8_args(batch, qw, nullptr, scheme), nullptr);
    bool same_bits = true;
    double largest = 0, scale = 0;
    for (int64_t j = 0; j < kN; ++j) {
      const float x = alone.get(j), y = in_batch.get(32 * kN + j);
      same_bits = same_bits && std::memcmp(&x, &y, sizeof x) == 0;
      largest = std::max(largest, static_cast<double>(std::fabs(x - y)));
      scale = std::max(scale, static_cast<double>(std::fabs(x)));
    }
    if (act == Fp8ActScale::kDynamicTensor) {
      EXPECT_FALSE(same_bits) << "a 16x louder row did not move dynamic_tensor's scale";
    } else {
      EXPECT_LE(largest, tolerance(Fp8Accumulation::kPromoted) * scale * kK);
    }
    std::cout << fp8_act_scale_name(act) << ": the probe row alone and in a batch of 33 "
              << (same_bits ? "agree bitwise" : "differ") << " (largest difference " << largest
              << ")\n";
  }
}

// What cuBLASLt's tensor-wide FP8 GEMM does not compute is refused with a sentence, on the
// device as before a run; K that is no multiple of 16 is refused naming it.
TEST(GpuFp8Gemm, WhatItDoesNotComputeIsRefused) {
  REQUIRE_GPU();
  auto cublas = make_backend("cublas");
  const HostTensor w = seeded({kN, kK}, 2, 0.05f);
  const HostTensor a = seeded({4, kK}, 5, 1.0f);
  Fp8Scheme per_row = tensor_scheme(Fp8ActScale::kDynamicToken, Fp8Accumulation::kPromoted);
  const Fp8Weight qw = quantize_weight(w, Fp8Format::kE4M3, Fp8WeightScale::kTensor);
  try {
    cublas->run(fp8_args(a, qw, nullptr, per_row), nullptr);
    ADD_FAILURE() << "dynamic_token ran on cublas";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not compute FP8 act_scale 'dynamic_token'"),
              std::string::npos)
        << e.what();
  }
  const HostTensor w_odd = seeded({kN, 40}, 6, 0.05f), a_odd = seeded({4, 40}, 9, 1.0f);
  const Fp8Weight qw_odd = quantize_weight(w_odd, Fp8Format::kE4M3, Fp8WeightScale::kTensor);
  try {
    cublas->run(fp8_args(a_odd, qw_odd, nullptr,
                         tensor_scheme(Fp8ActScale::kStatic, Fp8Accumulation::kPromoted)),
                nullptr);
    ADD_FAILURE() << "k = 40 ran on cublas";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k a multiple of 16, got k = 40"), std::string::npos)
        << e.what();
  }
  // The vendor-policy flavor computes no FP8 at all (cuda-invariant: gpu_fp8_invariant_test.cpp).
  try {
    make_backend("cuda-vendor-policy")
        ->run(fp8_args(a, qw, nullptr,
                       tensor_scheme(Fp8ActScale::kStatic, Fp8Accumulation::kPromoted)),
              nullptr);
    ADD_FAILURE() << "FP8 ran on cuda-vendor-policy";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not compute FP8"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nvdet
