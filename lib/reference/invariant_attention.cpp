// cpu-invariant decode and prefill attention.
//
// Decode, for query head h of sequence s (KV head h / (num_heads / num_kv_heads)):
//   S = invariant_attention_split_size(splits) (512 unless the sweep fixes it);
//   split j covers KV tokens [j*S, min((j+1)*S, kv_len)); each split is folded from an empty
//   online-softmax state by attend_tiles (64-token tiles aligned to the split start);
//   the split states are merged with merge_state in split order (j = 0, 1, ...); out = acc / l.
// Prefill, for new token at absolute position p: the decode plan over kv_len = p + 1, the same
//   splits of S tokens from position 0, each folded from an empty state in 64-token tiles aligned
//   to its start, merged in split order; out = acc / l.
// Invariance: the plan depends only on kv_len (decode) or p (prefill) and fixed settings, never
// on the batch, the other sequences, the chunk a token arrives in or the prefix-cache length.
// Parity: decode and prefill share that one plan, so a token's attention row has the same bits
// whether a decode step or a prefill pass (a trainer's scoring pass) computes it; GEMM and
// RMSNorm rows are independent of the row count already, so cpu-invariant's decode logits equal
// its scoring pass's bit for bit (tests/parity_cpu_test.cpp).
#include "lib/ops/split_policies.h"
#include "lib/reference/cpu_common.h"
#include "lib/reference/cpu_kernels.h"

namespace nvdet::cpu {

HostTensor invariant_attention_decode(const AttentionDecodeArgs& args, RunNotes* notes) {
  const int64_t seqs = args.q->dim(0);
  const int32_t H = args.num_heads, D = args.head_dim;
  const int64_t split = invariant_attention_split_size(args.splits);
  const std::vector<float> q = to_float(*args.q);
  std::vector<float> out(static_cast<size_t>(seqs * H * D));
  for_each_decode_row(args, [&](int64_t, const SequenceKv& kv, int64_t row) {
    attend_split_kv(q.data() + row * D, kv, split, args.scale, out.data() + row * D);
  });
  if (notes) {
    (*notes)["split_size"] = std::to_string(split);
    (*notes)["tile"] = std::to_string(kAttentionTile);
  }
  return make_output(args.out_dtype, {seqs, H, D}, std::span<const float>(out));
}

HostTensor invariant_attention_prefill(const AttentionPrefillArgs& args, RunNotes* notes) {
  const int64_t tokens = args.q->dim(0);
  const int32_t H = args.num_heads, D = args.head_dim;
  const int64_t split = invariant_attention_split_size(args.splits);
  const std::vector<float> q = to_float(*args.q);
  std::vector<float> out(static_cast<size_t>(tokens * H * D));
  for_each_prefill_row(args, [&](int64_t, const SequenceKv& kv, int64_t, int64_t pos, int64_t row) {
    attend_split_kv(q.data() + row * D, kv, pos + 1, split, args.scale, out.data() + row * D);
  });
  if (notes) {
    (*notes)["split_size"] = std::to_string(split);
    (*notes)["tile"] = std::to_string(kAttentionTile);
    (*notes)["kv_segments"] = std::string("the decode plan's splits of kv_len = position + 1");
  }
  return make_output(args.out_dtype, {tokens, H, D}, std::span<const float>(out));
}

}  // namespace nvdet::cpu
