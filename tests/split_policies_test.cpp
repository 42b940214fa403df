// The shared split policies on inputs whose answers were worked out by hand from the formulas
// documented in lib/ops/split_policies.h.
#include "lib/ops/split_policies.h"

#include <gtest/gtest.h>

namespace nvdet {
namespace {

TEST(SplitPolicies, InvariantSplitSizeIsFixedUnlessTheSweepSetsIt) {
  EXPECT_EQ(invariant_attention_split_size({}), 512);
  EXPECT_EQ(invariant_attention_split_size({.split_size = 100}), 100);
  EXPECT_EQ(invariant_attention_split_size({.split_size = 0, .num_splits = 4}), 512);
}

TEST(SplitPolicies, FlashDecodingDoesNotSplitWhenTheBatchFillsTheGpu) {
  // 0.8 * 132 = 105.6: 106 or more (batch x KV heads) run unsplit.
  EXPECT_EQ(flashdecoding_num_splits(128, 132, 16), 1);
  EXPECT_EQ(flashdecoding_num_splits(106, 132, 512), 1);
  // One 64-token block of KV cannot be split.
  EXPECT_EQ(flashdecoding_num_splits(8, 132, 1), 1);
}

TEST(SplitPolicies, FlashDecodingPicksTheSmallestEfficientEligibleSplit) {
  // bh=8, 16 blocks: eligible s = 1,2,3,4,6,8,16 (5, 7, 9..15 leave blocks/split unchanged);
  // all under one wave, efficiency 8s/132, best 128/132 at s=16; 85% of it needs s >= 13.6,
  // and the only eligible such s is 16.
  EXPECT_EQ(flashdecoding_num_splits(8, 132, 16), 16);
  // bh=64, 16 blocks: efficiency(2) = 128/132 = 0.970 equals the best; s=1 gives 0.485.
  EXPECT_EQ(flashdecoding_num_splits(64, 132, 16), 2);
  // bh=8, 4 blocks: eligible 1, 2, 4 (3 gives 2 blocks/split like 2); best 32/132 at s=4;
  // s=2 has half of it.
  EXPECT_EQ(flashdecoding_num_splits(8, 132, 4), 4);
  // bh=40, 64 blocks: best is s=13 (520/132 = 3.94 waves -> 0.985); 85% of that is 0.837;
  // s=1: 0.303, s=2: 0.606, s=3: 120/132 = 0.909 -> 3.
  EXPECT_EQ(flashdecoding_num_splits(40, 132, 64), 3);
  // max_splits caps the search: bh=8, 16 blocks, at most 4 splits -> best eligible is 4.
  EXPECT_EQ(flashdecoding_num_splits(8, 132, 16, 4), 4);
}

TEST(SplitPolicies, VendorDecodeSplitLengthFollowsTheBatchTotal) {
  const std::vector<int32_t> alone = {1000};
  // 2*132/8 = 33 chunks; ceil(1000/33) = 31 < 128 -> the 128-token minimum.
  EXPECT_EQ(vendor_decode_split_sizes(alone, 8, 132, {}), std::vector<int>{128});
  // Same request among neighbours: total 16000; ceil(16000/33) = 485 -> rounded up to 496.
  const std::vector<int32_t> batch = {1000, 3000, 5000, 7000};
  EXPECT_EQ(vendor_decode_split_sizes(batch, 8, 132, {}), std::vector<int>(4, 496));
  // 32 heads: 264/32 = 8 chunks; 8192 / 8 = 1024.
  const std::vector<int32_t> long_one = {8192};
  EXPECT_EQ(vendor_decode_split_sizes(long_one, 32, 132, {}), std::vector<int>{1024});
  // More heads than the CTA budget: one chunk, the whole total rounded up to 16.
  EXPECT_EQ(vendor_decode_split_sizes(alone, 300, 132, {}), std::vector<int>{1008});
}

TEST(SplitPolicies, VendorDecodeHonoursAFixedSplitCountPerRequest) {
  const std::vector<int32_t> lens = {1000, 3000, 10};
  EXPECT_EQ(vendor_decode_split_sizes(lens, 8, 132, {.num_splits = 4}),
            (std::vector<int>{250, 750, 3}));
}

TEST(SplitPolicies, VendorNormRowSplits) {
  EXPECT_EQ(vendor_norm_row_splits(1, 4096, 132), 4);     // min(132, 4, 32)
  EXPECT_EQ(vendor_norm_row_splits(64, 4096, 132), 3);    // min(ceil(132/64)=3, 4, 32)
  EXPECT_EQ(vendor_norm_row_splits(40, 8192, 132), 4);    // min(ceil(132/40)=4, 8, 32)
  EXPECT_EQ(vendor_norm_row_splits(1, 100000, 132), 32);  // min(132, 98, 32)
  EXPECT_EQ(vendor_norm_row_splits(1, 512, 132), 1);      // one 1024-element part is enough
  EXPECT_EQ(vendor_norm_row_splits(131, 4096, 132), 2);   // min(ceil(132/131)=2, 4, 32)
  EXPECT_EQ(vendor_norm_row_splits(132, 4096, 132), 1);   // enough rows to fill the GPU
  EXPECT_EQ(vendor_norm_row_splits(0, 4096, 132), 1);
}

TEST(SplitPolicies, VendorNormBlockThreads) {
  EXPECT_EQ(vendor_norm_block_threads(1), 1024);
  EXPECT_EQ(vendor_norm_block_threads(64), 1024);
  EXPECT_EQ(vendor_norm_block_threads(65), 256);
  EXPECT_EQ(vendor_norm_block_threads(8192), 256);
}

}  // namespace
}  // namespace nvdet
