// Work-item plans of the split-KV attention kernels; see attention_plans.h.
#include "lib/cuda/attention_plans.h"

#include <algorithm>

#include "lib/ops/split_policies.h"

namespace nvdet::cuda {
namespace {

// Appends the items of one row: [0, kv_len) cut every split_len tokens.
void add_row_splits(AttentionPlan& plan, int32_t row, int32_t seq, int32_t kv_len,
                    int32_t split_len) {
  for (int32_t b = 0; b < kv_len; b += split_len) {
    plan.items.push_back({row, seq, b, std::min(kv_len, b + split_len)});
  }
  plan.row_item_begin.push_back(static_cast<int32_t>(plan.items.size()));
}

}  // namespace

AttentionPlan invariant_decode_plan(std::span<const int32_t> kv_lens, int split_size) {
  AttentionPlan plan;
  plan.split_size = split_size;
  plan.row_item_begin.push_back(0);
  for (size_t s = 0; s < kv_lens.size(); ++s) {
    add_row_splits(plan, static_cast<int32_t>(s), static_cast<int32_t>(s), kv_lens[s], split_size);
  }
  if (!kv_lens.empty()) plan.num_splits_seq0 = plan.row_item_begin[1];
  return plan;
}

AttentionPlan vendor_decode_plan(std::span<const int32_t> kv_lens, int num_kv_heads, int num_sms,
                                 const AttentionSplits& splits) {
  AttentionPlan plan;
  std::vector<int> split_lens;
  if (splits.num_splits > 0) {
    split_lens = vendor_decode_split_sizes(kv_lens, num_kv_heads, num_sms, splits);
  } else {
    const int32_t max_kv = kv_lens.empty() ? 0 : *std::max_element(kv_lens.begin(), kv_lens.end());
    plan.flashdecoding_num_splits = flashdecoding_num_splits(
        static_cast<int>(kv_lens.size()) * num_kv_heads, num_sms, (max_kv + 63) / 64);
    if (plan.flashdecoding_num_splits == 1) {
      split_lens.assign(kv_lens.begin(), kv_lens.end());
    } else {
      split_lens = vendor_decode_split_sizes(kv_lens, num_kv_heads, num_sms, AttentionSplits{});
    }
  }
  plan.row_item_begin.push_back(0);
  for (size_t s = 0; s < kv_lens.size(); ++s) {
    add_row_splits(plan, static_cast<int32_t>(s), static_cast<int32_t>(s), kv_lens[s],
                   std::max(1, split_lens[s]));
  }
  if (!kv_lens.empty()) {
    plan.vendor_split_len = split_lens[0];
    plan.num_splits_seq0 = plan.row_item_begin[1];
  }
  return plan;
}

AttentionPlan invariant_prefill_plan(std::span<const int32_t> q_start,
                                     std::span<const int32_t> kv_lens, int split_size) {
  AttentionPlan plan;
  plan.split_size = split_size;
  plan.row_item_begin.push_back(0);
  for (size_t s = 0; s + 1 < q_start.size(); ++s) {
    const int32_t q_len = q_start[s + 1] - q_start[s];
    const int32_t chunk_start = kv_lens[s] - q_len;
    for (int32_t i = 0; i < q_len; ++i) {
      add_row_splits(plan, q_start[s] + i, static_cast<int32_t>(s), chunk_start + i + 1,
                     split_size);
    }
  }
  if (q_start.size() > 1 && q_start[1] > q_start[0]) {
    plan.num_splits_seq0 = plan.row_item_begin[static_cast<size_t>(q_start[1])] -
                           plan.row_item_begin[static_cast<size_t>(q_start[1]) - 1];
  }
  return plan;
}

bool tc_split_parallel_pays(std::span<const int64_t> item_tiles, int64_t split_tiles, int num_sms) {
  if (item_tiles.empty() || num_sms <= 0 || split_tiles <= 0) return false;
  int64_t total = 0, longest = 0;
  for (const int64_t t : item_tiles) {
    total += t;
    longest = std::max(longest, t);
  }
  const int64_t spread = (total + num_sms - 1) / num_sms;
  const int64_t fused = std::max(longest, spread);
  const int64_t split = std::max(std::min(longest, split_tiles), spread) + 1;
  return 5 * split < 4 * fused;
}

TcAttentionPlan tc_attention_plan(std::span<const int32_t> q_start,
                                  std::span<const int32_t> kv_lens, int group, int split_size,
                                  int consumers, int num_kv_heads, int num_sms, int tile_keys,
                                  TcExecution execution) {
  TcAttentionPlan plan;
  plan.consumers = consumers;
  const int32_t tokens_per_block = kernels::attention_tc_block_rows(consumers) / group;
  const int32_t rows = q_start.empty() ? 0 : q_start.back();
  plan.row_slot.assign(static_cast<size_t>(rows), -1);
  struct Block {
    kernels::TcAttentionUnit unit;
    int32_t splits;
  };
  std::vector<Block> blocks;
  for (size_t s = 0; s + 1 < q_start.size(); ++s) {
    const int32_t q_len = q_start[s + 1] - q_start[s];
    const int32_t first = kv_lens[s] - q_len;
    for (int32_t b = 0; b < q_len; b += tokens_per_block) {
      const int32_t n = std::min(tokens_per_block, q_len - b);
      const int32_t last = first + b + n - 1;
      blocks.push_back(
          {{static_cast<int32_t>(s), q_start[s] + b, n, first + b, 0, last / split_size + 1, 0, 0},
           last / split_size + 1});
    }
    if (s == 0 && q_len > 0) plan.num_splits_seq0 = (kv_lens[0] - 1) / split_size + 1;
  }
  // Split-parallel when the fused blocks would leave SMs idle long enough (or when asked).
  bool split = execution == TcExecution::kSplit;
  if (execution == TcExecution::kAuto) {
    std::vector<int64_t> item_tiles;
    item_tiles.reserve(blocks.size());
    for (const Block& b : blocks) {
      const int64_t last = b.unit.first_pos + b.unit.num_tokens - 1;
      int64_t tiles = 0;
      for (int32_t j = 0; j < b.splits; ++j) {
        const int64_t len = std::min<int64_t>(last + 1, static_cast<int64_t>(j + 1) * split_size) -
                            static_cast<int64_t>(j) * split_size;
        tiles += (len + tile_keys - 1) / tile_keys;
      }
      for (int h = 0; h < num_kv_heads; ++h) item_tiles.push_back(tiles);
    }
    split = tc_split_parallel_pays(item_tiles, (split_size + tile_keys - 1) / tile_keys, num_sms);
  }
  for (const Block& b : blocks) {
    if (!split || b.splits == 1) {
      plan.units.push_back(b.unit);
      continue;
    }
    plan.split_parallel = true;
    for (int32_t t = 0; t < b.unit.num_tokens; ++t) {
      const int32_t row = b.unit.q_row + t, pos = b.unit.first_pos + t;
      plan.row_slot[static_cast<size_t>(row)] = static_cast<int32_t>(plan.slots);
      plan.slots += pos / split_size + 1;
      plan.merge_rows.push_back(row);
      plan.merge_pos.push_back(pos);
    }
    for (int32_t j = 0; j < b.splits; ++j) {
      kernels::TcAttentionUnit u = b.unit;
      u.split_begin = j;
      u.split_end = j + 1;
      u.partial = 1;
      plan.units.push_back(u);
    }
  }
  // Longest first, so that the persistent CTAs' last items are short ones.
  const auto work = [&](const kernels::TcAttentionUnit& u) {
    const int64_t last = u.first_pos + u.num_tokens - 1;
    return std::min<int64_t>(last + 1, static_cast<int64_t>(u.split_end) * split_size) -
           static_cast<int64_t>(u.split_begin) * split_size;
  };
  std::stable_sort(plan.units.begin(), plan.units.end(),
                   [&](const auto& a, const auto& b) { return work(a) > work(b); });
  return plan;
}

AttentionPlan vendor_prefill_plan(std::span<const int32_t> q_start,
                                  std::span<const int32_t> prefix_len,
                                  std::span<const int32_t> kv_lens) {
  AttentionPlan plan;
  plan.row_item_begin.push_back(0);
  for (size_t s = 0; s + 1 < q_start.size(); ++s) {
    const int32_t q_len = q_start[s + 1] - q_start[s];
    const int32_t chunk_start = kv_lens[s] - q_len;
    const int32_t prefix = prefix_len.empty() ? 0 : std::min(prefix_len[s], chunk_start);
    for (int32_t i = 0; i < q_len; ++i) {
      const int32_t cuts[4] = {0, prefix, chunk_start, chunk_start + i + 1};
      for (int c = 0; c < 3; ++c) {
        if (cuts[c + 1] > cuts[c]) {
          plan.items.push_back({q_start[s] + i, static_cast<int32_t>(s), cuts[c], cuts[c + 1]});
        }
      }
      plan.row_item_begin.push_back(static_cast<int32_t>(plan.items.size()));
    }
  }
  return plan;
}

}  // namespace nvdet::cuda
