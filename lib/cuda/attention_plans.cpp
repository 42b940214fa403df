// Work-item plans of the split-KV attention kernels; see attention_plans.h.
#include "lib/cuda/attention_plans.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

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

// Key tiles of a unit: each of its splits' keys in tiles of tile_keys.
int64_t unit_tiles(const kernels::TcAttentionUnit& u, int split_size, int tile_keys) {
  const int64_t last = u.first_pos + u.num_tokens - 1;
  int64_t tiles = 0;
  for (int32_t j = u.split_begin; j < u.split_end; ++j) {
    const int64_t len = std::min<int64_t>(last + 1, static_cast<int64_t>(j + 1) * split_size) -
                        static_cast<int64_t>(j) * split_size;
    tiles += (len + tile_keys - 1) / tile_keys;
  }
  return tiles;
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
                                  TcExecution execution, TcSchedule schedule) {
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
    item_tiles.reserve(blocks.size() * static_cast<size_t>(num_kv_heads));
    for (const Block& b : blocks) {
      item_tiles.insert(item_tiles.end(), static_cast<size_t>(num_kv_heads),
                        unit_tiles(b.unit, split_size, tile_keys));
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
  // The items' costs in tiles, plus one for what every item does once (its Q, its output or
  // partial state), for the CTAs' lists.
  std::vector<int64_t> item_cost;
  item_cost.reserve(plan.units.size() * static_cast<size_t>(std::max(num_kv_heads, 0)));
  for (const kernels::TcAttentionUnit& u : plan.units) {
    item_cost.insert(item_cost.end(), static_cast<size_t>(std::max(num_kv_heads, 0)),
                     unit_tiles(u, split_size, tile_keys) + 1);
  }
  plan.ctas = static_cast<int>(
      std::min<int64_t>(static_cast<int64_t>(item_cost.size()), std::max(num_sms, 1)));
  plan.cta_lists = tc_balance_items(item_cost, plan.ctas, schedule);
  return plan;
}

TcCtaLists tc_balance_items(std::span<const int64_t> item_cost, int ctas, TcSchedule schedule) {
  TcCtaLists lists;
  const int64_t items = static_cast<int64_t>(item_cost.size());
  // One item a CTA at most: nothing to balance.
  if (ctas <= 0 || items <= ctas || schedule == TcSchedule::kStride) return lists;
  const bool forced = schedule == TcSchedule::kBalanced;
  // The stride walk's finish against the lower bound (the longest item, or the average).
  std::vector<int64_t> stride(static_cast<size_t>(ctas), 0);
  int64_t total = 0, longest = 0;
  for (int64_t i = 0; i < items; ++i) {
    stride[static_cast<size_t>(i % ctas)] += item_cost[static_cast<size_t>(i)];
    total += item_cost[static_cast<size_t>(i)];
    longest = std::max(longest, item_cost[static_cast<size_t>(i)]);
  }
  const int64_t stride_end = *std::max_element(stride.begin(), stride.end());
  const int64_t bound = std::max(longest, (total + ctas - 1) / ctas);
  if (!forced && 100 * stride_end <= 103 * bound) return lists;
  // Least-loaded first: a min-heap of (work so far, CTA).
  using Load = std::pair<int64_t, int32_t>;
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> heap;
  for (int32_t c = 0; c < ctas; ++c) heap.push({0, c});
  std::vector<int32_t> owner(static_cast<size_t>(items));
  std::vector<int32_t> count(static_cast<size_t>(ctas), 0);
  int64_t balanced_end = 0;
  for (int64_t i = 0; i < items; ++i) {
    const auto [load, c] = heap.top();
    heap.pop();
    owner[static_cast<size_t>(i)] = c;
    ++count[static_cast<size_t>(c)];
    const int64_t now = load + item_cost[static_cast<size_t>(i)];
    balanced_end = std::max(balanced_end, now);
    heap.push({now, c});
  }
  if (!forced && 100 * stride_end <= 103 * balanced_end) return lists;
  lists.begin.assign(static_cast<size_t>(ctas) + 1, 0);
  for (int32_t c = 0; c < ctas; ++c) {
    lists.begin[static_cast<size_t>(c) + 1] =
        lists.begin[static_cast<size_t>(c)] + count[static_cast<size_t>(c)];
  }
  lists.items.resize(static_cast<size_t>(items));
  std::vector<int32_t> next(lists.begin.begin(), lists.begin.end() - 1);
  for (int64_t i = 0; i < items; ++i) {
    lists.items[static_cast<size_t>(next[static_cast<size_t>(owner[static_cast<size_t>(i)])]++)] =
        static_cast<int32_t>(i);
  }
  return lists;
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
