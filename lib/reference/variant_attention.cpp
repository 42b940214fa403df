// cpu-variant decode and prefill attention: split-KV plans chosen from the batch, as
// FlashDecoding / FlashInfer schedulers and chunked-prefill / cascade kernels do.
//
// Decode, for sequence s (all heads alike):
//   if splits.num_splits > 0: split_len = ceil(kv_len / num_splits) (vendor_decode_split_sizes);
//   else n = flashdecoding_num_splits(num_seqs * num_kv_heads, 132, ceil(max kv_len / 64)):
//     n == 1 -> no split (split_len = kv_len): the batch already fills the notional GPU;
//     n > 1  -> split_len = vendor_decode_split_sizes(kv_lens, num_kv_heads, 132) — one length
//               for the whole batch, derived from the batch's total KV tokens.
//   Split j covers [j*split_len, ...); each is folded from an empty state by attend_tiles (64-token
//   tiles aligned to the split start) and the states are merged with merge_state in split order.
// Prefill, for the new token at position p of sequence s, with chunk_start = kv_len - q_len:
//   the KV range [0, p] is cut at the prefix-cache length and at chunk_start into
//   [0, prefix), [prefix, chunk_start), [chunk_start, p]; each non-empty segment is folded from an
//   empty state with tiles aligned to the segment start, and the segment states are merged in
//   order (log-sum-exp merge).
// Not invariant, on purpose: decode split lengths follow the batch's size and KV lengths;
// prefill results follow the chunking and the prefix length.
#include <algorithm>

#include "lib/ops/split_policies.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"

namespace nvdet::cpu {

HostTensor variant_attention_decode(const AttentionDecodeArgs& args, RunNotes* notes) {
  const int64_t seqs = args.q->dim(0);
  const int32_t H = args.num_heads, KH = args.num_kv_heads, D = args.head_dim;
  const std::vector<int32_t>& kv_lens = args.kv.kv_lens;

  int fd_splits = 0;
  std::vector<int> split_lens;
  if (args.splits.num_splits > 0) {
    split_lens = vendor_decode_split_sizes(kv_lens, KH, kNotionalSmCount, args.splits);
  } else {
    const int64_t max_kv = *std::max_element(kv_lens.begin(), kv_lens.end());
    fd_splits = flashdecoding_num_splits(static_cast<int>(seqs * KH), kNotionalSmCount,
                                         static_cast<int>((max_kv + 63) / 64));
    if (fd_splits == 1) {
      split_lens.assign(kv_lens.begin(), kv_lens.end());
    } else {
      split_lens = vendor_decode_split_sizes(kv_lens, KH, kNotionalSmCount, AttentionSplits{});
    }
  }

  const std::vector<float> q = to_float(*args.q);
  std::vector<float> out(static_cast<size_t>(seqs * H * D));
  for_each_decode_row(args, [&](int64_t s, const SequenceKv& kv, int64_t row) {
    attend_split_kv(q.data() + row * D, kv, split_lens[s], args.scale, out.data() + row * D);
  });
  if (notes) {
    if (fd_splits > 0) (*notes)["flashdecoding_num_splits"] = std::to_string(fd_splits);
    (*notes)["split_len"] = std::to_string(split_lens[0]);
    (*notes)["num_splits"] = std::to_string((kv_lens[0] + split_lens[0] - 1) / split_lens[0]);
  }
  return make_output(args.out_dtype, {seqs, H, D}, std::span<const float>(out));
}

HostTensor variant_attention_prefill(const AttentionPrefillArgs& args, RunNotes* notes) {
  const int64_t tokens = args.q->dim(0);
  const int32_t H = args.num_heads, D = args.head_dim;
  const std::vector<float> q = to_float(*args.q);
  std::vector<float> out(static_cast<size_t>(tokens * H * D));
  for_each_prefill_row(
      args, [&](int64_t s, const SequenceKv& kv, int64_t chunk_start, int64_t pos, int64_t row) {
        const int64_t prefix = args.prefix_len.empty() ? 0 : args.prefix_len[s];
        const int64_t cuts[4] = {0, prefix, chunk_start, pos + 1};
        SoftmaxState total(D);
        for (int c = 0; c < 3; ++c) {
          if (cuts[c + 1] <= cuts[c]) continue;
          SoftmaxState part(D);
          attend_tiles(q.data() + row * D, kv, cuts[c], cuts[c + 1], cuts[c], args.scale, part);
          merge_state(total, part);
        }
        finish_state(total, out.data() + row * D);
      });
  if (notes) {
    (*notes)["kv_segments"] = std::string("[0, prefix) | [prefix, chunk start) | [chunk start, p]");
    (*notes)["tile"] = std::to_string(kAttentionTile);
  }
  return make_output(args.out_dtype, {tokens, H, D}, std::span<const float>(out));
}

}  // namespace nvdet::cpu
