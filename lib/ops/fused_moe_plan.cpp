#include "lib/ops/fused_moe_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "kernels/fused_moe_combine.cuh"

namespace nvdet {
namespace {

constexpr int kSparseFactor = 4;           // naive blocks when tokens * top_k * 4 <= experts
constexpr int kMaxSplitK = 8;              // split-K never cuts K into more parts than this
constexpr int64_t kSlotSumMaxTokens = 32;  // the slot-order combine up to this many tokens

FusedMoeConfig config(int m, int n, int k, int group, bool split_from_grid = false) {
  FusedMoeConfig c;
  c.block_m = m;
  c.block_n = n;
  c.block_k = k;
  c.group_m = group;
  c.split_k_from_grid = split_from_grid;
  return c;
}

// nvdet's tables for the shapes its audits run, in the form a serving stack's tuning script writes
// them (token count -> config). Their rows are nvdet's own choices for an H200-class device,
// spread so that the config changes where batches of an audit cross them: small batches take
// 16-row blocks with a split-K that fills the device, mid-size ones 32 or 64 rows, large ones 128.
const std::vector<FusedMoeTable>& tables() {
  static const std::vector<FusedMoeTable> all = {
      {"H200 E=16 N=256",  // scenarios/moe-cpu.yaml's shape
       16,
       256,
       {{1, config(16, 32, 64, 1, true)},
        {4, config(16, 64, 64, 1, true)},
        {8, config(16, 64, 128, 1, true)},
        {16, config(32, 64, 64, 1)},
        {32, config(32, 128, 64, 8)},
        {64, config(64, 128, 64, 8)},
        {256, config(128, 128, 64, 8)}}},
      {"H200 E=16 N=512",  // scenarios/moe-gpu.yaml
       16,
       512,
       {{1, config(16, 32, 64, 1, true)},
        {4, config(16, 64, 128, 1, true)},
        {16, config(16, 128, 64, 1)},
        {32, config(32, 128, 64, 8)},
        {64, config(64, 128, 64, 8)},
        {512, config(128, 128, 64, 8)}}},
      {"H200 E=128 N=768",  // Qwen3-30B-A3B
       128,
       768,
       {{1, config(16, 64, 128, 1, true)},
        {8, config(16, 64, 128, 1, true)},
        {16, config(16, 128, 128, 1)},
        {64, config(16, 128, 64, 1)},
        {128, config(32, 128, 64, 8)},
        {256, config(64, 128, 64, 8)},
        {1024, config(64, 256, 64, 8)},
        {4096, config(128, 256, 64, 16)}}},
      {"H200 E=8 N=14336",  // Mixtral-8x7B
       8,
       14336,
       {{1, config(16, 64, 256, 1, true)},
        {8, config(16, 128, 128, 1, true)},
        {32, config(32, 128, 128, 1)},
        {64, config(64, 128, 64, 1)},
        {256, config(64, 256, 64, 8)},
        {1024, config(128, 256, 64, 8)}}},
  };
  return all;
}

}  // namespace

std::string FusedMoeConfig::describe() const {
  return fmt::format("BLOCK_SIZE_M {}, BLOCK_SIZE_N {}, BLOCK_SIZE_K {}, GROUP_SIZE_M {}{}",
                     block_m, block_n, block_k, group_m, split_k_from_grid ? ", SPLIT_K grid" : "");
}

const FusedMoeTable* find_fused_moe_table(int experts, int64_t expert_width) {
  for (const FusedMoeTable& t : tables()) {
    if (t.experts == experts && t.expert_width == expert_width) return &t;
  }
  return nullptr;
}

FusedMoeConfig fused_moe_config(int64_t tokens, int experts, int64_t expert_width,
                                std::string* source) {
  if (const FusedMoeTable* t = find_fused_moe_table(experts, expert_width)) {
    // The nearest key; scanning ascending keys with a strict comparison keeps the smaller on a tie.
    const auto* best = &t->rows.front();
    for (const auto& row : t->rows) {
      if (std::llabs(row.first - tokens) < std::llabs(best->first - tokens)) best = &row;
    }
    if (source) *source = fmt::format("table {}, row M={}", t->name, best->first);
    return best->second;
  }
  if (tokens <= experts) {
    if (source) *source = fmt::format("default, M {} <= {} experts", tokens, experts);
    return config(16, 32, 64, 1);
  }
  if (source) *source = fmt::format("default, M {} > {} experts", tokens, experts);
  return config(64, 64, 32, 8);
}

const char* fused_moe_combine_name(FusedMoeCombine c) {
  switch (c) {
    case FusedMoeCombine::kPlainAdd: return "plain add (top-2)";
    case FusedMoeCombine::kFp32SlotSum: return "fp32 sum in slot order";
    case FusedMoeCombine::kFp32TreeSum: return "fp32 tree reduce over the slots";
  }
  return "?";
}

int64_t FusedMoePlan::padded_rows(int64_t expert_rows) const {
  if (naive_blocks || expert_rows == 0) return expert_rows;
  return (expert_rows + config.block_m - 1) / config.block_m * config.block_m;
}

int64_t FusedMoePlan::blocks(const std::vector<int32_t>& expert_rows) const {
  int64_t total = 0;
  for (int32_t rows : expert_rows) {
    total += naive_blocks ? rows : padded_rows(rows) / config.block_m;
  }
  return total;
}

int FusedMoePlan::split_k(const std::vector<int32_t>& expert_rows, int64_t n, int64_t k) const {
  if (!config.split_k_from_grid) return 1;
  const int64_t grid =
      std::max<int64_t>(1, blocks(expert_rows) * ((n + config.block_n - 1) / config.block_n));
  const int64_t by_k = std::max<int64_t>(1, k / (2 * config.block_k));
  return static_cast<int>(
      std::clamp<int64_t>(num_sms / grid, 1, std::min<int64_t>(kMaxSplitK, by_k)));
}

int64_t FusedMoePlan::split_len(int splits, int64_t k) const {
  const int64_t steps = (k + config.block_k - 1) / config.block_k;
  return (steps + splits - 1) / splits * config.block_k;
}

std::string FusedMoePlan::describe() const {
  return fmt::format("{} ({}){}", config.describe(), config_source,
                     naive_blocks ? "; naive blocks (each token-expert pair its own block)"
                                  : "; blocks padded to BLOCK_SIZE_M");
}

FusedMoePlan plan_fused_moe(int64_t tokens, int experts, int top_k, int64_t expert_width,
                            int num_sms) {
  FusedMoePlan p;
  p.config = fused_moe_config(tokens, experts, expert_width, &p.config_source);
  p.naive_blocks = tokens * top_k * kSparseFactor <= experts;
  p.num_sms = num_sms;
  p.combine = top_k == 2                    ? FusedMoeCombine::kPlainAdd
              : tokens <= kSlotSumMaxTokens ? FusedMoeCombine::kFp32SlotSum
                                            : FusedMoeCombine::kFp32TreeSum;
  return p;
}

float fused_moe_combine(FusedMoeCombine c, const float* products, int k, DType t) {
  const kernels::FusedCombineRule rule = c == FusedMoeCombine::kFp32TreeSum
                                             ? kernels::FusedCombineRule::kTree
                                             : kernels::FusedCombineRule::kSlotOrder;
  return round_to_dtype(kernels::fused_moe_combine_sum(rule, products, k), t);
}

}  // namespace nvdet
