// Whether a decode form of the tensor-core attention may put the keys and head_dim on wgmma's
// 64-row side and a block's 8 query rows on its N side (m64n8k16) and keep the plan's bits
// (kernels/attention_tc_swap_probe.cuh): one tile of S = Q K^T and of O = o_init + P V, computed
// the kernel's way and swapped, must agree bit for bit in rows 0-7, for bf16 and fp16, with
// seeded data whose products round (values of mixed sign and magnitude) and a nonzero running O.
// A GPU test only; it skips without an sm_90a device and build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/core/dtype.h"
#include "tests/test_support.h"

#ifdef NVDET_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/attention_tc_swap_probe.cuh"
#include "tests/gpu_device_arrays.h"
#endif

namespace nvdet::testing {
namespace {

#ifdef NVDET_WITH_CUDA

using kernels::kSwapProbeHeadDim;
using kernels::kSwapProbeKeys;
using kernels::kSwapProbeRows;
using kernels::kSwapProbeSwappedRows;

std::vector<float> download(const float* p, size_t n) {
  std::vector<float> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

// Element i of 16-bit codes of `dtype`, exactly.
double code_value(DType dtype, const std::vector<uint16_t>& codes, size_t i) {
  return dtype == DType::kBF16 ? bf16_bits_to_float(codes[i]) : fp16_bits_to_float(codes[i]);
}

// n values of the element type from a seeded normal distribution, as 16-bit codes.
std::vector<uint16_t> seeded_codes(DType dtype, size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<uint16_t> out(n);
  for (uint16_t& c : out) {
    const float v = dist(rng);
    c = dtype == DType::kBF16 ? float_to_bf16_bits(v) : float_to_fp16_bits(v);
  }
  return out;
}

int differing_bits(const std::vector<float>& narrow, const std::vector<float>& wide, int cols) {
  int differ = 0;
  for (int r = 0; r < kSwapProbeSwappedRows; ++r) {
    for (int c = 0; c < cols; ++c) {
      uint32_t a = 0, b = 0;
      std::memcpy(&a, &narrow[size_t(r) * cols + c], 4);
      std::memcpy(&b, &wide[size_t(r) * cols + c], 4);
      differ += a != b;
    }
  }
  return differ;
}

TEST(GpuAttentionSwap, SwappedTensorCoreFormsGiveTheKernelsBits) {
  if (!gpu_available()) GTEST_SKIP() << "no GPU";
  if (!kernels::attention_tc_swap_probe_available()) {
    GTEST_SKIP() << "no sm_90a tensor-core attention code on this device";
  }
  const int hd = kSwapProbeHeadDim, keys = kSwapProbeKeys, rows = kSwapProbeRows;
  for (const DType dtype : {DType::kBF16, DType::kFP16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    for (const uint32_t seed : {1u, 2u, 3u}) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      DeviceArrays dev;
      const auto q = seeded_codes(dtype, size_t(rows) * hd, seed, 1.0f);
      const auto k = seeded_codes(dtype, size_t(keys) * hd, seed + 100, 1.0f);
      const auto v = seeded_codes(dtype, size_t(keys) * hd, seed + 200, 0.5f);
      // P as a softmax leaves it (0 to 1, some exactly 0), O as a running sum leaves it.
      std::mt19937 rng(seed + 300);
      std::uniform_real_distribution<float> unit(0.0f, 1.0f);
      std::normal_distribution<float> normal(0.0f, 4.0f);
      std::vector<float> p(size_t(rows) * keys), o_init(size_t(rows) * hd);
      for (float& x : p) x = unit(rng) < 0.1f ? 0.0f : unit(rng);
      for (float& x : o_init) x = normal(rng);
      float* s_std = static_cast<float*>(dev.poisoned(size_t(rows) * keys * sizeof(float)));
      float* s_swap =
          static_cast<float*>(dev.poisoned(size_t(kSwapProbeSwappedRows) * keys * sizeof(float)));
      float* o_std = static_cast<float*>(dev.poisoned(size_t(rows) * hd * sizeof(float)));
      float* o_swap =
          static_cast<float*>(dev.poisoned(size_t(kSwapProbeSwappedRows) * hd * sizeof(float)));
      ASSERT_EQ(
          kernels::attention_tc_swap_probe(
              dtype == DType::kBF16 ? kernels::ElemType::kBF16 : kernels::ElemType::kFP16,
              dev.upload(q), dev.upload(k), dev.upload(v), static_cast<const float*>(dev.upload(p)),
              static_cast<const float*>(dev.upload(o_init)), s_std, s_swap, o_std, o_swap, nullptr),
          cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto ss = download(s_std, size_t(rows) * keys);
      const auto sn = download(s_swap, size_t(kSwapProbeSwappedRows) * keys);
      const auto os = download(o_std, size_t(rows) * hd);
      const auto on = download(o_swap, size_t(kSwapProbeSwappedRows) * hd);
      // The kernel's form against a double-precision product (rounding to fp32 in the tensor
      // cores' own order: within a few fp32 ulps of sum |terms|), so that a layout mistake in the
      // probe cannot pass as agreement between two wrong results.
      double worst_s = 0.0, worst_o = 0.0;
      for (int r = 0; r < kSwapProbeSwappedRows; ++r) {
        for (int c = 0; c < keys; ++c) {
          double dot = 0.0, mag = 0.0;
          for (int d = 0; d < hd; ++d) {
            const double t =
                code_value(dtype, q, size_t(r) * hd + d) * code_value(dtype, k, size_t(c) * hd + d);
            dot += t;
            mag += std::abs(t);
          }
          worst_s = std::max(worst_s, std::abs(ss[size_t(r) * keys + c] - dot) / mag);
        }
        for (int d = 0; d < hd; ++d) {
          double acc = o_init[size_t(r) * hd + d], mag = std::abs(acc);
          for (int c = 0; c < keys; ++c) {
            const float pf = p[size_t(r) * keys + c];
            const std::vector<uint16_t> pc = {dtype == DType::kBF16 ? float_to_bf16_bits(pf)
                                                                    : float_to_fp16_bits(pf)};
            const double t = code_value(dtype, pc, 0) * code_value(dtype, v, size_t(c) * hd + d);
            acc += t;
            mag += std::abs(t);
          }
          worst_o = std::max(worst_o, std::abs(os[size_t(r) * hd + d] - acc) / mag);
        }
      }
      EXPECT_LT(worst_s, 1e-6) << "Q K^T in the kernel's form against the double product";
      EXPECT_LT(worst_o, 1e-6) << "o_init + P V in the kernel's form against the double product";
      EXPECT_EQ(differing_bits(sn, ss, keys), 0)
          << "of " << kSwapProbeSwappedRows * keys << " scores, K Q^T against Q K^T";
      EXPECT_EQ(differing_bits(on, os, hd), 0)
          << "of " << kSwapProbeSwappedRows * hd << " outputs, V^T P^T against P V";
    }
  }
}

#else
TEST(GpuAttentionSwap, SwappedTensorCoreFormsGiveTheKernelsBits) {
  GTEST_SKIP() << "no CUDA build";
}
#endif

}  // namespace
}  // namespace nvdet::testing
