// Split-K around a backend's GEMM (lib/backend/split_k_gemm.h), the composition
// cuda-vendor-policy's fused MoE plan puts around cuBLASLt: with cpu-variant's GEMM computing each
// K part whole, it must give cpu-variant's own split GEMM bit for bit (the same parts, the same
// tree), bias and bf16 output included; and the weight slices are cut once per (tensor, range).
#include "lib/backend/split_k_gemm.h"

#include <gtest/gtest.h>

#include <cstring>

#include "lib/core/seeded_random.h"
#include "lib/reference/cpu_kernels.h"

namespace nvdet {
namespace {

HostTensor seeded(DType t, std::vector<int64_t> shape, uint64_t stream) {
  HostTensor x(t, std::move(shape));
  fill_normal(x, 77, stream, 1.0f);
  return x;
}

bool same_bits(const HostTensor& a, const HostTensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(SplitKGemm, EqualsTheVariantGemmsOwnSplitsBitwise) {
  const auto whole = [](const GemmArgs& part) {
    return cpu::variant_gemm_with_split_len(part, part.a->dim(1), nullptr);
  };
  for (DType out_dtype : {DType::kFP32, DType::kBF16}) {
    for (int64_t k : {300, 512, 1000}) {
      const HostTensor a = seeded(DType::kBF16, {7, k}, 1);
      const HostTensor w = seeded(DType::kBF16, {40, k}, 2);
      const HostTensor bias = seeded(DType::kBF16, {40}, 3);
      for (int64_t split_len : {64, 128, 192, 1024}) {
        for (const HostTensor* b : {static_cast<const HostTensor*>(nullptr), &bias}) {
          SCOPED_TRACE(testing::Message() << "k " << k << " split_len " << split_len
                                          << (b ? " bias" : "") << " " << dtype_name(out_dtype));
          const GemmArgs g{&a, &w, b, out_dtype, false};
          const HostTensor want = cpu::variant_gemm_with_split_len(g, split_len, nullptr);
          KSliceCache cache;
          EXPECT_TRUE(same_bits(gemm_in_k_splits(g, split_len, whole, &cache), want));
          EXPECT_TRUE(same_bits(gemm_in_k_splits(g, split_len, whole), want));
        }
      }
    }
  }
}

TEST(SplitKGemm, SplittingChangesTheBitsAndTheCacheKeepsOneSliceARange) {
  const HostTensor a = seeded(DType::kFP32, {4, 2048}, 4);
  const HostTensor w = seeded(DType::kFP32, {64, 2048}, 5);
  const GemmArgs g{&a, &w, nullptr, DType::kFP32, false};
  const auto whole = [](const GemmArgs& part) {
    return cpu::variant_gemm_with_split_len(part, part.a->dim(1), nullptr);
  };
  // Not a no-op: one part and four give different fp32 sums somewhere in 256 outputs.
  EXPECT_FALSE(same_bits(gemm_in_k_splits(g, 2048, whole), gemm_in_k_splits(g, 512, whole)));
  KSliceCache cache;
  const HostTensor& s1 = cache.slice(w, 512, 1024);
  const HostTensor& s2 = cache.slice(w, 512, 1024);
  EXPECT_EQ(&s1, &s2);
  EXPECT_EQ(s1.uid(), s2.uid());
  ASSERT_EQ(s1.shape(), (std::vector<int64_t>{64, 512}));
  for (int64_t r : {0, 63}) {
    for (int64_t c : {0, 511}) EXPECT_EQ(s1.get(r * 512 + c), w.get(r * 2048 + 512 + c));
  }
  EXPECT_NE(cache.slice(w, 0, 512).uid(), s1.uid());
}

}  // namespace
}  // namespace nvdet
