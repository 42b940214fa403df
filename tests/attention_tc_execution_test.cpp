// How the tensor-core attention runs a launch's splits (lib/cuda/attention_plans.h): fused in each
// block's CTA or split-parallel with a merge kernel after. Both give the same bits (the GPU tests
// force each); this is the choice of the faster one by the launch's tile counts. Read without a
// GPU; built with the CUDA backends only.
#include <gtest/gtest.h>

#include <cstdint>
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

#endif  // NVDET_WITH_CUDA

}  // namespace
}  // namespace nvdet
