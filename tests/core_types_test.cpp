// dtype conversions, ULP distances and HostTensor basics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "lib/core/dtype.h"
#include "lib/core/tensor.h"

namespace nvdet {
namespace {

TEST(DType, ParsesNamesAndSizes) {
  EXPECT_EQ(parse_dtype("bf16"), DType::kBF16);
  EXPECT_EQ(parse_dtype("fp16"), DType::kFP16);
  EXPECT_EQ(parse_dtype("fp32"), DType::kFP32);
  EXPECT_FALSE(parse_dtype("int8").has_value());
  EXPECT_EQ(dtype_size(DType::kBF16), 2u);
  EXPECT_EQ(dtype_size(DType::kFP32), 4u);
}

TEST(DType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up to even.
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(bf16_bits_to_float(0xc040), -3.0f);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(NAN))));
}

TEST(DType, Fp16RoundTripsEveryFiniteValue) {
  // Every finite half converts to float and back unchanged: the two conversions are exact inverses.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    if ((bits & 0x7c00) == 0x7c00) continue;  // inf/NaN
    EXPECT_EQ(float_to_fp16_bits(fp16_bits_to_float(bits)), bits) << std::hex << h;
  }
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7c00);               // rounds to infinity
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(float_to_fp16_bits(std::ldexp(3.0f, -25)), 0x0002);  // tie to even: 2 * 2^-24
}

TEST(DType, UlpDistance) {
  EXPECT_EQ(ulp_distance(DType::kBF16, 0x3f80, 0x3f81), 1u);
  EXPECT_EQ(ulp_distance(DType::kBF16, 0x0000, 0x8000), 0u);  // +0 and -0
  EXPECT_EQ(ulp_distance(DType::kBF16, 0x0001, 0x8001), 2u);  // across zero
  EXPECT_EQ(ulp_distance(DType::kFP32, 0x3f800000, 0x3f800010), 16u);
  EXPECT_EQ(ulp_distance(DType::kFP32, 0x7fc00000, 0x3f800000),
            std::numeric_limits<uint64_t>::max());
}

TEST(HostTensor, SeededDataIsReproducibleAndNotZero) {
  HostTensor a(DType::kBF16, {4, 8}), b(DType::kBF16, {4, 8}), c(DType::kBF16, {4, 8});
  fill_normal(a, 42, 7);
  fill_normal(b, 42, 7);
  fill_normal(c, 42, 8);
  int nonzero = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_EQ(a.bits(i), b.bits(i));
    nonzero += a.get(i) != 0.0f;
  }
  EXPECT_GT(nonzero, 28);
  bool differs = false;
  for (int64_t i = 0; i < a.numel(); ++i) differs |= a.bits(i) != c.bits(i);
  EXPECT_TRUE(differs);
}

TEST(HostTensor, UidChangesOnMutationAndSlicesCopyRows) {
  HostTensor t(DType::kFP32, {3, 2});
  const uint64_t uid = t.uid();
  for (int i = 0; i < 6; ++i) t.set(i, static_cast<float>(i) + 0.5f);
  EXPECT_NE(t.uid(), uid);
  const HostTensor s = t.slice_rows(1, 2);
  EXPECT_EQ(s.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.get(0), 2.5f);
  EXPECT_EQ(t.coords_of(5), (std::vector<int64_t>{2, 1}));
  EXPECT_THROW(t.slice_rows(2, 2), std::out_of_range);
}

}  // namespace
}  // namespace nvdet

#include "lib/core/host_info.h"

namespace nvdet {
namespace {

TEST(HostInfo, ParsesTheNvidiaDriverVersion) {
  EXPECT_EQ(parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct 28 2025\n"
                "GCC version:  gcc version 13.2.0\n"),
            "580.159.04");
  EXPECT_EQ(parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release\n"),
            "575.57.08");
  EXPECT_EQ(parse_nvidia_driver_version(""), "");
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX Kernel Module x\n1.2.3"), "");
}

}  // namespace
}  // namespace nvdet
