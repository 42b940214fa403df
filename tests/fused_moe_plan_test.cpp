// The vendor fused-MoE launch plan (lib/ops/fused_moe_plan.h) that cpu-variant and
// cuda-vendor-policy share: the table's nearest-row rule, the default rule, the block assignment,
// the split-K from the grid and the combine rules, each against values worked out by hand.
#include "lib/ops/fused_moe_plan.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

namespace nvdet {
namespace {

TEST(FusedMoePlan, TheNearestTableRowWinsAndTheSmallerKeyOnATie) {
  // Qwen3-30B-A3B's table has rows at 1, 8, 16, 64, 128, 256, 1024, 4096.
  ASSERT_NE(find_fused_moe_table(128, 768), nullptr);
  std::string source;
  EXPECT_EQ(fused_moe_config(13, 128, 768, &source).block_n, 128);  // 13 is nearer 16 than 8
  EXPECT_NE(source.find("row M=16"), std::string::npos) << source;
  fused_moe_config(40, 128, 768, &source);  // 40 is as far from 16 as from 64: the smaller
  EXPECT_NE(source.find("row M=16"), std::string::npos) << source;
  fused_moe_config(41, 128, 768, &source);
  EXPECT_NE(source.find("row M=64"), std::string::npos) << source;
  fused_moe_config(100000, 128, 768, &source);
  EXPECT_NE(source.find("row M=4096"), std::string::npos) << source;
  EXPECT_EQ(fused_moe_config(100000, 128, 768).block_m, 128);
}

TEST(FusedMoePlan, WithoutATableTheDefaultRuleFollowsTokensAgainstExperts) {
  EXPECT_EQ(find_fused_moe_table(8, 64), nullptr);
  std::string source;
  const FusedMoeConfig small = fused_moe_config(8, 8, 64, &source);
  EXPECT_EQ(small.describe(), "BLOCK_SIZE_M 16, BLOCK_SIZE_N 32, BLOCK_SIZE_K 64, GROUP_SIZE_M 1");
  EXPECT_NE(source.find("default, M 8 <= 8 experts"), std::string::npos) << source;
  const FusedMoeConfig large = fused_moe_config(9, 8, 64);
  EXPECT_EQ(large.describe(), "BLOCK_SIZE_M 64, BLOCK_SIZE_N 64, BLOCK_SIZE_K 32, GROUP_SIZE_M 8");
  EXPECT_FALSE(small.split_k_from_grid || large.split_k_from_grid);
}

TEST(FusedMoePlan, SparseBatchesTakeOneBlockPerPairOthersPadToTheBlock) {
  // 128 experts, top-8: 4 tokens x 8 x 4 = 128 <= 128: naive; 5 tokens are not.
  const FusedMoePlan naive = plan_fused_moe(4, 128, 8, 768, 132);
  EXPECT_TRUE(naive.naive_blocks);
  EXPECT_EQ(naive.padded_rows(3), 3);
  EXPECT_EQ(naive.blocks({3, 0, 1}), 4);
  const FusedMoePlan padded = plan_fused_moe(5, 128, 8, 768, 132);
  EXPECT_FALSE(padded.naive_blocks);
  EXPECT_EQ(padded.config.block_m, 16);  // table row M=8
  EXPECT_EQ(padded.padded_rows(3), 16);
  EXPECT_EQ(padded.padded_rows(17), 32);
  EXPECT_EQ(padded.padded_rows(0), 0);
  EXPECT_EQ(padded.blocks({3, 0, 17}), 3);
}

TEST(FusedMoePlan, SplitKFillsTheSmsFromTheGridWhereTheRowAsksForIt) {
  // Row M=8 of the Qwen3 table: 16 x 64 blocks, BLOCK_SIZE_K 128, split-K from the grid.
  const FusedMoePlan p = plan_fused_moe(6, 128, 8, 768, 132);
  ASSERT_TRUE(p.config.split_k_from_grid);
  // 6 tokens spread over 10 experts: 10 blocks; gate_up n = 1536 -> 24 column tiles: grid 240,
  // more than the SMs: no split.
  const std::vector<int32_t> spread = {5, 5, 5, 5, 5, 5, 5, 5, 4, 4};
  EXPECT_EQ(p.split_k(spread, 1536, 2048), 1);
  // 3 blocks x 24 = 72 tiles: 132 / 72 = 1 split. A grid of one block: 24 tiles -> 5 splits for
  // gate_up (K 2048 allows 2048 / 256 = 8); down (n = 2048 -> 32 tiles): 4, but K 768 allows
  // only 768 / 256 = 3.
  EXPECT_EQ(p.split_k({16, 16, 16}, 1536, 2048), 1);
  EXPECT_EQ(p.split_k({16}, 1536, 2048), 5);
  EXPECT_EQ(p.split_k({16}, 2048, 768), 3);
  // Whole BLOCK_SIZE_K steps per split: K 2048 = 16 steps, 5 splits -> 4 steps = 512.
  EXPECT_EQ(p.split_len(5, 2048), 512);
  EXPECT_EQ(p.split_len(3, 768), 256);
  EXPECT_EQ(p.split_len(1, 700), 768);
  // A row without the flag never splits.
  const FusedMoePlan q = plan_fused_moe(300, 128, 8, 768, 132);
  EXPECT_FALSE(q.config.split_k_from_grid);
  EXPECT_EQ(q.split_k({48}, 1536, 2048), 1);
}

TEST(FusedMoePlan, TheCombineRuleFollowsTopKAndTheTokenCount) {
  EXPECT_EQ(plan_fused_moe(1000, 16, 2, 512, 132).combine, FusedMoeCombine::kPlainAdd);
  EXPECT_EQ(plan_fused_moe(32, 16, 4, 512, 132).combine, FusedMoeCombine::kFp32SlotSum);
  EXPECT_EQ(plan_fused_moe(33, 16, 4, 512, 132).combine, FusedMoeCombine::kFp32TreeSum);
}

TEST(FusedMoePlan, SlotOrderAndTreeAddTheSameValuesDifferently) {
  // In slot order each 2^-24 added to 1 rounds back to 1 (a tie, to even). The tree pairs slot 0
  // with 2 and 1 with 3: (1 + 0) + (2^-24 + 2^-24) = 1 + 2^-23, exact.
  const float tiny = std::ldexp(1.0f, -24);
  const float v[4] = {1.0f, tiny, 0.0f, tiny};
  EXPECT_EQ(fused_moe_combine(FusedMoeCombine::kFp32SlotSum, v, 4, DType::kFP32), 1.0f);
  EXPECT_EQ(fused_moe_combine(FusedMoeCombine::kFp32TreeSum, v, 4, DType::kFP32), 1.0f + 2 * tiny);
  // Three slots pad to four with a zero: (a + c) + (b + 0).
  const float w[3] = {1.0f, tiny, tiny};
  EXPECT_EQ(fused_moe_combine(FusedMoeCombine::kFp32TreeSum, w, 3, DType::kFP32), 1.0f);
  // The sum is rounded to the dtype once: 1 + 2^-8 + 2^-9 in bf16 rounds up to 1 + 2^-7.
  const float b[2] = {1.0f + std::ldexp(1.0f, -8), std::ldexp(1.0f, -9)};
  EXPECT_EQ(fused_moe_combine(FusedMoeCombine::kPlainAdd, b, 2, DType::kBF16),
            1.0f + std::ldexp(1.0f, -7));
}

}  // namespace
}  // namespace nvdet
