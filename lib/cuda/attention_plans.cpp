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
                                     std::span<const int32_t> kv_lens) {
  AttentionPlan plan;
  plan.row_item_begin.push_back(0);
  for (size_t s = 0; s + 1 < q_start.size(); ++s) {
    const int32_t q_len = q_start[s + 1] - q_start[s];
    const int32_t chunk_start = kv_lens[s] - q_len;
    for (int32_t i = 0; i < q_len; ++i) {
      plan.items.push_back({q_start[s] + i, static_cast<int32_t>(s), 0, chunk_start + i + 1});
      plan.row_item_begin.push_back(static_cast<int32_t>(plan.items.size()));
    }
  }
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
