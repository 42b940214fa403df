// cuda-invariant's FP8 GEMM (nvdet's wgmma e4m3 kernel, kernels/gemm_fp8.cuh;
// lib/cuda/gemm_fp8_invariant_ops.cpp):
//  - correctness: every activation and weight scale, promoted and fast accumulation, with and
//    without a bias, K a multiple of 128 and not, against the independent dequantise-then-double
//    product of the same codes and scales, within the bound of the accumulation's rounding;
//  - invariance: a row's bits alone and inside batches of 33, 200 and 1000 rows, bitwise, for the
//    per-row schemes; dynamic_tensor follows the batch (its scale is the batch's max);
//  - every tile configuration and persistent CTA count gives the same bits (kernel level);
//  - what it does not compute is refused with a sentence.
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

#ifdef NVDET_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/gemm_fp8.cuh"
#include "tests/gpu_device_arrays.h"
#endif

namespace nvdet {
namespace {

using testing::fp8_args;

#define REQUIRE_GPU() \
  if (!nvdet::testing::gpu_available()) GTEST_SKIP() << "no GPU"

HostTensor seeded(std::vector<int64_t> shape, uint64_t stream, float stddev) {
  HostTensor t(DType::kBF16, std::move(shape));
  fill_normal(t, 43, stream, stddev);
  return t;
}

Fp8Scheme scheme_of(Fp8ActScale act, Fp8WeightScale weight, Fp8Accumulation acc) {
  Fp8Scheme s;
  s.format = Fp8Format::kE4M3;
  s.act_scale = act;
  s.weight_scale = weight;
  s.accumulation = acc;
  s.static_scale = 0.008f;
  return s;
}

// Relative to sum_k |term|: the FP8 tensor cores add a group's products in an accumulator of about
// 13 mantissa bits, then the kernel promotes every 128 of K: at most 128 * 2^-14 = 2^-7. Fast
// accumulation keeps that accumulator over all K (<= 512 here): 512 * 2^-14 = 2^-5. A wrong scale,
// group or layout is off by the order of the values themselves.
double tolerance(Fp8Accumulation acc) {
  return acc == Fp8Accumulation::kFast ? std::ldexp(1.0, -5) : std::ldexp(1.0, -7);
}

struct Case {
  Fp8ActScale act;
  Fp8WeightScale weight;
  Fp8Accumulation acc;
};
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {Fp8ActScale::kStatic, Fp8WeightScale::kTensor, Fp8Accumulation::kPromoted},
      {Fp8ActScale::kDynamicTensor, Fp8WeightScale::kTensor, Fp8Accumulation::kPromoted},
      {Fp8ActScale::kDynamicToken, Fp8WeightScale::kChannel, Fp8Accumulation::kPromoted},
      {Fp8ActScale::kGroup128, Fp8WeightScale::kBlock128, Fp8Accumulation::kPromoted},
      {Fp8ActScale::kGroup128, Fp8WeightScale::kChannel, Fp8Accumulation::kPromoted},
      {Fp8ActScale::kDynamicToken, Fp8WeightScale::kBlock128, Fp8Accumulation::kPromoted},
      {Fp8ActScale::kStatic, Fp8WeightScale::kTensor, Fp8Accumulation::kFast},
      {Fp8ActScale::kDynamicToken, Fp8WeightScale::kChannel, Fp8Accumulation::kFast},
  };
  return all;
}

TEST(GpuFp8Invariant, MatchesTheDequantisedProduct) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  // K = 512: whole 128-wide groups; K = 400: a last group of 16 (zero-filled past K).
  for (const auto& [n, k] : std::vector<std::pair<int64_t, int64_t>>{{384, 512}, {200, 400}}) {
    const HostTensor w = seeded({n, k}, 2, 0.05f);
    const HostTensor bias = seeded({n}, 3, 0.5f);
    for (const Case& c : cases()) {
      const Fp8Weight qw = quantize_weight(w, Fp8Format::kE4M3, c.weight);
      const Fp8Scheme scheme = scheme_of(c.act, c.weight, c.acc);
      for (const int64_t m : {1, 7, 64, 200}) {
        const HostTensor a = seeded({m, k}, 10 + static_cast<uint64_t>(m), 1.0f);
        for (const HostTensor* b : {static_cast<const HostTensor*>(nullptr), &bias}) {
          const testing::Fp8Oracle want = testing::dequantised_gemm(a, qw, b, scheme);
          RunNotes notes;
          const HostTensor got = backend->run(fp8_args(a, qw, b, scheme), &notes);
          ASSERT_EQ(got.shape(), (std::vector<int64_t>{m, n}));
          const double worst = testing::worst_relative_error(got, want);
          const std::string what = fp8_scheme_text(scheme) + ", m " + std::to_string(m) + ", n " +
                                   std::to_string(n) + ", k " + std::to_string(k) +
                                   (b ? ", bias" : "");
          EXPECT_LE(worst, tolerance(c.acc)) << what;
          EXPECT_EQ(notes.at("kernel"), "wgmma-m64nNk32-e4m3-tma") << what;
          EXPECT_EQ(notes.at("split_k"), "1") << what;
          if (m == 200 && b) {
            std::cout << what << ": largest error " << worst << " of sum |a w| (tolerance "
                      << tolerance(c.acc) << ")\n";
          }
        }
      }
    }
  }
}

// The probe row alone and as the last row of batches of 33, 200 and 1000 (other tiles, other
// configurations, other CTA counts), the batch's first row 16 times louder: the per-row schemes
// give the same bits; dynamic_tensor's scale is the batch's max, so its bits move.
TEST(GpuFp8Invariant, ARowsBitsDoNotDependOnTheBatch) {
  REQUIRE_GPU();
  const int64_t n = 1024, k = 1024;
  auto backend = make_backend("cuda-invariant");
  const HostTensor w = seeded({n, k}, 4, 0.05f);
  const HostTensor probe = seeded({1, k}, 7, 1.0f);
  for (const Case& c : cases()) {
    const Fp8Weight qw = quantize_weight(w, Fp8Format::kE4M3, c.weight);
    const Fp8Scheme scheme = scheme_of(c.act, c.weight, c.acc);
    const HostTensor alone = backend->run(fp8_args(probe, qw, nullptr, scheme), nullptr);
    for (const int64_t m : {33, 200, 1000}) {
      HostTensor batch = seeded({m, k}, 8 + static_cast<uint64_t>(m), 1.0f);
      for (int64_t col = 0; col < k; ++col) {
        batch.set(col, 16.0f * batch.get(col));        // row 0: loud
        batch.set((m - 1) * k + col, probe.get(col));  // the last row: the probe
      }
      RunNotes notes;
      const HostTensor got = backend->run(fp8_args(batch, qw, nullptr, scheme), &notes);
      const bool same = std::memcmp(alone.data(), got.data() + (m - 1) * n * sizeof(float),
                                    n * sizeof(float)) == 0;
      const std::string what = fp8_scheme_text(scheme) + ", batch of " + std::to_string(m) +
                               " (tile " + notes.at("tile") + ", " + notes.at("ctas") + " CTAs)";
      if (c.act == Fp8ActScale::kDynamicTensor) {
        EXPECT_FALSE(same) << what << ": a 16x louder row did not move dynamic_tensor's scale";
      } else {
        EXPECT_TRUE(same) << what << ": the probe row's bits changed with the batch";
      }
    }
  }
}

#ifdef NVDET_WITH_CUDA
// Kernel level: an m x 520 problem (partial tiles in m and n) with K deep under every scheme,
// configuration and CTA count, bitwise; with scales per K group and weight scales in 128-column
// blocks (block_128x128, tensor), both forms of the promotion (w_scale_blocks_of_128); the
// entries with several K groups a stage with one copy a stage and one a group.
void expect_every_configuration_agrees(int k, int m) {
  const int n = 520;
  const HostTensor a = seeded({m, k}, 11, 1.0f);
  const HostTensor w = seeded({n, k}, 12, 0.05f);
  testing::DeviceArrays dev;
  for (const Case& c : cases()) {
    const Fp8Scheme scheme = scheme_of(c.act, c.weight, c.acc);
    const Fp8Activations qa = quantize_activations(a, scheme);
    const Fp8Weight qw = quantize_weight(w, Fp8Format::kE4M3, c.weight);
    const bool per_group = qa.scale_cols > 1 || qw.scale_cols > 1;
    const int groups = per_group ? (k + 127) / 128 : 1;
    std::vector<float> sa(size_t(groups) * m), sw(size_t(groups) * n);
    for (int g = 0; g < groups; ++g) {
      for (int i = 0; i < m; ++i) sa[size_t(g) * m + i] = qa.scale(i, g);
      for (int j = 0; j < n; ++j) sw[size_t(g) * n + j] = qw.scale(j, g);
    }
    kernels::Fp8GemmProblem p;
    p.a = static_cast<const uint8_t*>(dev.upload(qa.codes.data(), qa.codes.size()));
    p.w = static_cast<const uint8_t*>(dev.upload(qw.codes.data(), qw.codes.size()));
    p.a_scale = static_cast<const float*>(dev.upload(sa.data(), sa.size() * 4));
    p.w_scale = static_cast<const float*>(dev.upload(sw.data(), sw.size() * 4));
    p.out_type = kernels::ElemType::kFP32;
    p.m = m, p.n = n, p.k = k, p.lda = k, p.ldw = k, p.ldo = n;
    p.per_group = per_group;
    p.promoted = c.acc == Fp8Accumulation::kPromoted;
    void* out = dev.alloc(size_t(m) * n * 4);
    ASSERT_NE(out, nullptr);
    p.out = out;
    ASSERT_EQ(kernels::fp8_gemm_unsupported(p), nullptr);
    std::vector<uint8_t> first;
    const bool blocks_possible = per_group && c.weight != Fp8WeightScale::kChannel;
    for (const bool blocks : {false, true}) {
      if (blocks && !blocks_possible) continue;
      p.w_scale_blocks_of_128 = blocks;
      for (int config = 0; config < kernels::kFp8GemmConfigCount; ++config) {
        const bool several = kernels::kFp8GemmConfigs[config].groups_per_stage > 1;
        for (const int ctas : {1, 7, 132}) {
          for (const bool stage_boxes : {true, false}) {
            if (!stage_boxes && !several) continue;
            ASSERT_EQ(cudaMemset(out, 0xff, size_t(m) * n * 4), cudaSuccess);  // NaN: unwritten
            kernels::Fp8GemmPlan plan = kernels::fp8_gemm_plan(p, 132, config, ctas);
            plan.stage_boxes = stage_boxes;
            ASSERT_EQ(kernels::fp8_gemm_launch(p, plan, nullptr), cudaSuccess);
            ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
            std::vector<uint8_t> bytes(size_t(m) * n * 4);
            ASSERT_EQ(cudaMemcpy(bytes.data(), out, bytes.size(), cudaMemcpyDeviceToHost),
                      cudaSuccess);
            for (size_t i = 0; i < bytes.size(); i += 4) {
              float v;
              std::memcpy(&v, &bytes[i], 4);
              ASSERT_TRUE(std::isfinite(v))
                  << "element " << i / 4 << " unwritten, config " << config;
            }
            if (first.empty()) {
              first = bytes;
            } else {
              EXPECT_EQ(bytes, first)
                  << fp8_scheme_text(scheme) << ": config " << config << ", " << ctas << " CTAs"
                  << (blocks ? ", weight scales as 128-column blocks" : "")
                  << (stage_boxes ? "" : ", one copy a K group");
            }
          }
        }
      }
    }
  }
}

TEST(GpuFp8Invariant, EveryConfigurationAndCtaCountGivesTheSameBits) {
  REQUIRE_GPU();
  if (!kernels::fp8_gemm_available()) GTEST_SKIP() << "no sm_90a FP8 kernel on this device";
  // A last K group of 16, with 6 K groups and with 4; 8 whole K groups (the decode entries' one
  // copy a stage), also at m = 5 (A's box of 8 rows: a whole box of the 8-row tile, part of the
  // others).
  struct Case {
    int k, m;
  };
  for (const Case c : {Case{656, 300}, Case{400, 300}, Case{1024, 300}, Case{1024, 5}}) {
    SCOPED_TRACE("k " + std::to_string(c.k) + ", m " + std::to_string(c.m));
    ASSERT_NO_FATAL_FAILURE(expect_every_configuration_agrees(c.k, c.m));
  }
}
#endif

TEST(GpuFp8Invariant, WhatItDoesNotComputeIsRefused) {
  REQUIRE_GPU();
  auto backend = make_backend("cuda-invariant");
  const HostTensor w = seeded({128, 512}, 2, 0.05f);
  const HostTensor a = seeded({4, 512}, 5, 1.0f);
  const auto refused = [&](const HostTensor& act, const Fp8Weight& qw, const Fp8Scheme& s,
                           const std::string& sentence) {
    try {
      backend->run(fp8_args(act, qw, nullptr, s), nullptr);
      ADD_FAILURE() << fp8_scheme_text(s) << " ran on cuda-invariant";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(sentence), std::string::npos) << e.what();
    }
  };
  const Fp8Weight block = quantize_weight(w, Fp8Format::kE4M3, Fp8WeightScale::kBlock128);
  refused(a, block,
          scheme_of(Fp8ActScale::kGroup128, Fp8WeightScale::kBlock128, Fp8Accumulation::kFast),
          "does not compute FP8 accumulation 'fast' with scales that change along K");
  Fp8Scheme e5m2 =
      scheme_of(Fp8ActScale::kDynamicToken, Fp8WeightScale::kTensor, Fp8Accumulation::kPromoted);
  e5m2.format = Fp8Format::kE5M2;
  const Fp8Weight w_e5m2 = quantize_weight(w, Fp8Format::kE5M2, Fp8WeightScale::kTensor);
  refused(a, w_e5m2, e5m2, "does not compute FP8 format 'e5m2'");
  const HostTensor w_odd = seeded({128, 40}, 6, 0.05f), a_odd = seeded({4, 40}, 9, 1.0f);
  const Fp8Weight qw_odd = quantize_weight(w_odd, Fp8Format::kE4M3, Fp8WeightScale::kTensor);
  refused(a_odd, qw_odd,
          scheme_of(Fp8ActScale::kStatic, Fp8WeightScale::kTensor, Fp8Accumulation::kPromoted),
          "needs k a multiple of 16");
}

}  // namespace
}  // namespace nvdet
