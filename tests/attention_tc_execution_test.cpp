// How the tensor-core attention runs a launch's splits (lib/cuda/attention_plans.h): fused in each
// block's CTA or split-parallel with a merge kernel after, and which persistent CTA runs which
// item. Neither changes a bit (the GPU tests force each execution and CTA count); these are the
// choices of the faster one by the launch's tile counts. Read without a GPU; built with the CUDA
// backends only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#ifdef NVDET_WITH_CUDA
#include "kernels/attention_tc.cuh"
#include "lib/cuda/attention_plans.h"
#endif

namespace nvdet {
namespace {

#ifdef NVDET_WITH_CUDA

constexpr int kSms = 132;

TEST(AttentionTcExecution, SplitsWhenFewLongItemsWouldLeaveSmsIdle) {
  // Decode, batch 1, KV 32768, 8 KV heads: 8 items of 256 tiles against 2048 tiles over 132 SMs.
  EXPECT_TRUE(cuda::tc_split_parallel_pays(std::vector<int64_t>(8, 256), 4, kSms));
  // Decode, batch 8, KV 4096: 64 items of 32 tiles (fused 32 tiles a CTA, split-parallel 17).
  EXPECT_TRUE(cuda::tc_split_parallel_pays(std::vector<int64_t>(64, 32), 4, kSms));
  // A 16-token prefill call over 4096 keys: 8 items of 32 tiles.
  EXPECT_TRUE(cuda::tc_split_parallel_pays(std::vector<int64_t>(8, 32), 4, kSms));
}

TEST(AttentionTcExecution, StaysFusedWhenTheSmsAreAlreadyBusy) {
  // The last 512-token chunk of a 4096-token prompt: 16 blocks x 8 KV heads of 29-32 tiles, one
  // wave either way, so the partial states would only add traffic.
  std::vector<int64_t> chunk;
  for (int b = 0; b < 16; ++b) chunk.insert(chunk.end(), 8, 29 + b / 5);
  EXPECT_FALSE(cuda::tc_split_parallel_pays(chunk, 4, kSms));
  // Decode, batch 16, KV 4096: 128 items of 32 tiles.
  EXPECT_FALSE(cuda::tc_split_parallel_pays(std::vector<int64_t>(128, 32), 4, kSms));
  // Single-split items gain nothing.
  EXPECT_FALSE(cuda::tc_split_parallel_pays(std::vector<int64_t>(8, 4), 4, kSms));
  EXPECT_FALSE(cuda::tc_split_parallel_pays({}, 4, kSms));
}

TEST(AttentionTcExecution, ThePlanFollowsTheChoice) {
  // One decode row at position 32767: 64 splits of 512 keys, 8 KV heads, split-parallel.
  const std::vector<int32_t> q_start = {0, 1};
  const std::vector<int32_t> kv_len = {32768};
  const int tile = kernels::attention_tc_tile_keys(128);
  const cuda::TcAttentionPlan decode =
      cuda::tc_attention_plan(q_start, kv_len, 4, 512, 1, 8, kSms, tile, cuda::TcExecution::kAuto);
  EXPECT_TRUE(decode.split_parallel);
  EXPECT_EQ(decode.units.size(), 64u);
  EXPECT_EQ(decode.slots, 64);
  // A 512-token chunk ending at 4096 in blocks of 32 tokens (group 4, two warpgroups): fused.
  const std::vector<int32_t> chunk_start = {0, 512};
  const std::vector<int32_t> chunk_kv = {4096};
  const cuda::TcAttentionPlan chunk = cuda::tc_attention_plan(chunk_start, chunk_kv, 4, 512, 2, 8,
                                                              kSms, tile, cuda::TcExecution::kAuto);
  EXPECT_FALSE(chunk.split_parallel);
  EXPECT_EQ(chunk.units.size(), 16u);
  // Forcing overrides the estimate.
  const cuda::TcAttentionPlan forced = cuda::tc_attention_plan(
      chunk_start, chunk_kv, 4, 512, 2, 8, kSms, tile, cuda::TcExecution::kSplit);
  EXPECT_TRUE(forced.split_parallel);
  EXPECT_EQ(forced.units.size(), 16u * 8u);
}

// Each CTA's finish (its items' costs summed) under lists, or under the stride walk when the
// lists are empty.
std::vector<int64_t> cta_work(const cuda::TcCtaLists& lists, const std::vector<int64_t>& cost,
                              int ctas) {
  std::vector<int64_t> work(static_cast<size_t>(ctas), 0);
  if (lists.items.empty()) {
    for (size_t i = 0; i < cost.size(); ++i) work[i % static_cast<size_t>(ctas)] += cost[i];
    return work;
  }
  for (int c = 0; c < ctas; ++c) {
    for (int32_t i = lists.begin[static_cast<size_t>(c)];
         i < lists.begin[static_cast<size_t>(c) + 1]; ++i) {
      work[static_cast<size_t>(c)] +=
          cost[static_cast<size_t>(lists.items[static_cast<size_t>(i)])];
    }
  }
  return work;
}

// Every item in exactly one list, each list in launch order.
void expect_partition(const cuda::TcCtaLists& lists, size_t items, int ctas) {
  ASSERT_EQ(lists.begin.size(), static_cast<size_t>(ctas) + 1);
  EXPECT_EQ(lists.begin.front(), 0);
  EXPECT_EQ(static_cast<size_t>(lists.begin.back()), items);
  ASSERT_EQ(lists.items.size(), items);
  std::vector<int> seen(items, 0);
  for (int c = 0; c < ctas; ++c) {
    const int32_t b = lists.begin[static_cast<size_t>(c)],
                  e = lists.begin[static_cast<size_t>(c) + 1];
    ASSERT_LE(b, e);
    for (int32_t i = b; i < e; ++i) {
      const int32_t item = lists.items[static_cast<size_t>(i)];
      ASSERT_GE(item, 0);
      ASSERT_LT(static_cast<size_t>(item), items);
      ++seen[static_cast<size_t>(item)];
      if (i > b) EXPECT_LT(lists.items[static_cast<size_t>(i) - 1], item);
    }
  }
  for (size_t i = 0; i < items; ++i) EXPECT_EQ(seen[i], 1) << "item " << i;
}

TEST(AttentionTcSchedule, ACausalPromptGetsBalancedListsThatFinishSooner) {
  // A whole 4096-token prompt, group 4, two warpgroups: 128 blocks of 32 tokens x 8 KV heads,
  // 1 to 32 tiles each (plus one per item). The stride walk gives CTA 0 the longest item of every
  // round (152 against an average of 136).
  const std::vector<int32_t> q_start = {0, 4096};
  const std::vector<int32_t> kv_len = {4096};
  const int tile = kernels::attention_tc_tile_keys(128);
  const cuda::TcAttentionPlan plan =
      cuda::tc_attention_plan(q_start, kv_len, 4, 512, 2, 8, kSms, tile, cuda::TcExecution::kAuto);
  EXPECT_FALSE(plan.split_parallel);
  ASSERT_EQ(plan.ctas, kSms);
  const size_t items = plan.units.size() * 8;
  ASSERT_EQ(items, 1024u);
  expect_partition(plan.cta_lists, items, plan.ctas);
  // The costs the plan balanced, recomputed here from the units: keys [lo, hi) of each split.
  std::vector<int64_t> cost;
  int64_t total = 0, longest = 0;
  for (const kernels::TcAttentionUnit& u : plan.units) {
    const int64_t keys = u.first_pos + u.num_tokens;  // fused: every split of [0, keys)
    int64_t tiles = 0;
    for (int64_t lo = 0; lo < keys; lo += 512)
      tiles += (std::min<int64_t>(keys, lo + 512) - lo + 127) / 128;
    for (int h = 0; h < 8; ++h) {
      cost.push_back(tiles + 1);
      total += tiles + 1;
      longest = std::max(longest, tiles + 1);
    }
  }
  const std::vector<int64_t> balanced = cta_work(plan.cta_lists, cost, plan.ctas);
  const std::vector<int64_t> stride = cta_work(cuda::TcCtaLists{}, cost, plan.ctas);
  const int64_t balanced_end = *std::max_element(balanced.begin(), balanced.end());
  const int64_t stride_end = *std::max_element(stride.begin(), stride.end());
  EXPECT_EQ(stride_end, 152);
  EXPECT_LT(balanced_end, stride_end);
  // The greedy bound: no CTA finishes later than the average plus the longest item.
  EXPECT_LE(balanced_end, (total + kSms - 1) / kSms + longest);
  EXPECT_LE(balanced_end, 138);
}

TEST(AttentionTcSchedule, EqualItemsKeepTheStrideWalk) {
  // Decode, batch 64, KV 4096 (8 splits of 4 tiles), 8 KV heads, split-parallel: equal items.
  const std::vector<int64_t> equal(64 * 8 * 8, 5);
  EXPECT_TRUE(cuda::tc_balance_items(equal, kSms).items.empty());
  // No more items than CTAs: one each.
  std::vector<int64_t> few;
  for (int i = 0; i < kSms; ++i) few.push_back(100 - i / 2);
  EXPECT_TRUE(cuda::tc_balance_items(few, kSms).items.empty());
  // Uneven but already within 3% under the stride walk.
  std::vector<int64_t> near;
  for (int i = 0; i < 40 * kSms; ++i) near.push_back(i < kSms ? 6 : 5);
  EXPECT_TRUE(cuda::tc_balance_items(near, kSms).items.empty());
  EXPECT_TRUE(cuda::tc_balance_items({}, kSms).items.empty());
  EXPECT_TRUE(cuda::tc_balance_items(equal, 0).items.empty());
}

TEST(AttentionTcSchedule, ListsAreAPartitionForAnyLongestFirstCosts) {
  // Seeded costs, sorted longest first as the plan orders its units, over several CTA counts.
  uint64_t state = 2026;
  const auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((state >> 33) % 64) + 1;
  };
  int balanced_cases = 0;
  for (const int ctas : {1, 7, 132}) {
    for (const size_t n : {size_t{200}, size_t{1000}, size_t{5000}}) {
      std::vector<int64_t> cost(n);
      for (int64_t& c : cost) c = next();
      std::sort(cost.begin(), cost.end(), std::greater<>());
      const cuda::TcCtaLists lists = cuda::tc_balance_items(cost, ctas);
      if (ctas == 1) {
        EXPECT_TRUE(lists.items.empty());  // one CTA: the stride walk is the only order
        continue;
      }
      if (lists.items.empty()) continue;  // the stride walk was within 3%
      ++balanced_cases;
      expect_partition(lists, n, ctas);
      const std::vector<int64_t> work = cta_work(lists, cost, ctas);
      const std::vector<int64_t> stride = cta_work(cuda::TcCtaLists{}, cost, ctas);
      EXPECT_LT(*std::max_element(work.begin(), work.end()),
                *std::max_element(stride.begin(), stride.end()));
    }
  }
  EXPECT_GE(balanced_cases, 3);
}

#endif  // NVDET_WITH_CUDA

}  // namespace
}  // namespace nvdet
