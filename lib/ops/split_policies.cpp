// Split decisions shared by the CPU and GPU backends; see split_policies.h for the formulas and
// which schedulers they reproduce. Everything here is integer or plain double arithmetic on
// small numbers, so CPU and GPU callers get identical answers.
#include "lib/ops/split_policies.h"

#include <algorithm>
#include <cmath>

namespace nvdet {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int invariant_attention_split_size(const AttentionSplits& splits) {
  return splits.split_size > 0 ? splits.split_size : kDefaultInvariantSplitSize;
}

int flashdecoding_num_splits(int batch_times_kv_heads, int num_sms, int kv_len_blocks,
                             int max_splits) {
  if (num_sms <= 0 || batch_times_kv_heads <= 0) return 1;
  // The batch alone nearly fills the GPU: splitting would only add a combine step.
  if (static_cast<double>(batch_times_kv_heads) >= 0.8 * num_sms) return 1;
  const int limit = std::min({max_splits, num_sms, kv_len_blocks});
  if (limit <= 1) return 1;

  auto eligible = [&](int s) {
    return s == 1 || ceil_div(kv_len_blocks, s) != ceil_div(kv_len_blocks, s - 1);
  };
  std::vector<double> efficiency(static_cast<size_t>(limit) + 1, 0.0);
  double best = 0.0;
  for (int s = 1; s <= limit; ++s) {
    if (!eligible(s)) continue;
    const double n_waves = static_cast<double>(batch_times_kv_heads) * s / num_sms;
    efficiency[s] = n_waves / std::ceil(n_waves);
    best = std::max(best, efficiency[s]);
  }
  for (int s = 1; s <= limit; ++s) {
    if (eligible(s) && efficiency[s] >= 0.85 * best) return s;
  }
  return 1;
}

std::vector<int> vendor_decode_split_sizes(std::span<const int32_t> kv_lens, int heads, int num_sms,
                                           AttentionSplits splits) {
  std::vector<int> out(kv_lens.size(), 1);
  if (splits.num_splits > 0) {
    for (size_t i = 0; i < kv_lens.size(); ++i) {
      out[i] = static_cast<int>(std::max<int64_t>(1, ceil_div(kv_lens[i], splits.num_splits)));
    }
    return out;
  }
  int64_t total_kv = 0;
  for (int32_t len : kv_lens) total_kv += std::max<int32_t>(len, 0);
  const int64_t target_ctas = int64_t{kVendorCtasPerSm} * std::max(num_sms, 1);
  const int64_t chunks = std::max<int64_t>(1, target_ctas / std::max(heads, 1));
  int64_t split_len = std::max<int64_t>(kVendorMinSplitLen, ceil_div(total_kv, chunks));
  split_len = ceil_div(split_len, kVendorSplitLenAlign) * kVendorSplitLenAlign;
  std::fill(out.begin(), out.end(), static_cast<int>(split_len));
  return out;
}

int vendor_norm_row_splits(int64_t rows, int64_t row_len, int num_sms) {
  if (rows <= 0 || row_len <= 0 || rows >= num_sms) return 1;
  const int64_t s = std::min({ceil_div(num_sms, rows), ceil_div(row_len, 1024), int64_t{32}});
  return static_cast<int>(std::max<int64_t>(1, s));
}

int vendor_norm_block_threads(int64_t rows) { return rows <= 64 ? 1024 : 256; }

}  // namespace nvdet
