#pragma once
// Work-item plans of the split-KV attention kernels (kernels/split_kv_attention.cuh): which KV
// ranges each query row is cut into. Plain host code, so the plans can be checked without a GPU.
// The invariant plans depend only on each sequence's own lengths and fixed settings; the
// vendor-style plans follow the batch through lib/ops/split_policies.h, exactly as the CPU
// variant backend does.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/attention_tc.cuh"
#include "kernels/split_kv_attention.cuh"
#include "lib/ops/op_args.h"

namespace nvdet::cuda {

struct AttentionPlan {
  std::vector<kernels::AttentionWorkItem> items;  // a row's items consecutive, rows ascending
  std::vector<int32_t> row_item_begin;            // [rows + 1]
  // For run notes.
  int split_size = 0;                // invariant decode: KV tokens per split
  int flashdecoding_num_splits = 0;  // vendor decode, when the heuristic ran
  int vendor_split_len = 0;          // vendor decode: split length of sequence 0
  int num_splits_seq0 = 0;           // splits of sequence 0
};

// Decode, invariant: sequence s is cut into [0, S), [S, 2S), ..., S = split_size.
AttentionPlan invariant_decode_plan(std::span<const int32_t> kv_lens, int split_size);

// Decode, vendor policy (as lib/reference/variant_attention.cpp): splits.num_splits when set;
// else FlashDecoding's split count for the batch, and when it asks for splits, the
// FlashInfer-style split length from the whole batch's KV lengths.
AttentionPlan vendor_decode_plan(std::span<const int32_t> kv_lens, int num_kv_heads, int num_sms,
                                 const AttentionSplits& splits);

// Prefill, invariant, on the CUDA-core kernels (GPUs without the tensor-core kernels): the new
// token at position p gets the decode plan of kv_len = p + 1, the splits [0, S), [S, 2S), ... of
// [0, p + 1), so decode and prefill compute a token's row from the same items.
AttentionPlan invariant_prefill_plan(std::span<const int32_t> q_start,
                                     std::span<const int32_t> kv_lens, int split_size);

// How the tensor-core kernel runs a plan's splits (kernels/attention_tc.cuh): every split of a
// block folded by the block's CTA, or each split of a multi-split block in a CTA of its own with a
// merge kernel after. Both give the same bits; kAuto picks by the launch's size
// (tc_split_parallel_pays).
enum class TcExecution { kAuto, kFused, kSplit };

// Whether running multi-split blocks split-parallel is expected to finish sooner than fused, for
// `item_tiles` (each fused item's key tiles, one item per block and KV head), the tiles of one
// split (split_tiles) and `num_sms` persistent CTAs. Fused takes about max(the longest item, the
// tiles spread over the SMs); split-parallel cuts every item into items of at most split_tiles and
// adds the partial states' round trip and the merge launch, counted as one tile per CTA. Split
// wins only by a clear margin (fused writes no partial states).
bool tc_split_parallel_pays(std::span<const int64_t> item_tiles, int64_t split_tiles, int num_sms);

// The persistent CTAs' item lists for items of the given costs (in launch order, longest first):
// each item in turn goes to the CTA with the least work so far (the lowest index on a tie), so
// the last CTA finishes near the average. Empty (the kernel's stride walk: CTA b takes items b,
// b + ctas, ...) when that walk already finishes within 3% of the balanced lists or of the
// lower bound, as with decode's equal splits, so that no list is uploaded for nothing.
struct TcCtaLists {
  std::vector<int32_t> begin;  // [ctas + 1]
  std::vector<int32_t> items;
};
// kBalanced makes the lists whenever there are more items than CTAs, kStride never (tests and
// bisecting; neither changes a bit).
enum class TcSchedule { kAuto, kStride, kBalanced };
TcCtaLists tc_balance_items(std::span<const int64_t> item_cost, int ctas,
                            TcSchedule schedule = TcSchedule::kAuto);

// The tensor-core kernel's units for decode (q_start = 0, 1, ..., seqs) or prefill: each
// sequence's new tokens in blocks of block_rows / group tokens, ordered longest first, and the
// persistent CTAs that run the (unit, KV head) items.
struct TcAttentionPlan {
  std::vector<kernels::TcAttentionUnit> units;
  std::vector<int32_t> row_slot;    // [rows]: first partial slot of a split-parallel row, else -1
  std::vector<int32_t> merge_rows;  // split-parallel rows, with their positions
  std::vector<int32_t> merge_pos;
  int64_t slots = 0;
  int consumers = 1;
  bool split_parallel = false;  // some blocks run split-parallel
  int num_splits_seq0 = 0;      // splits of sequence 0's last new token, for notes
  int ctas = 0;                 // min(items, num_sms): num_sms is the CTA count asked for
  TcCtaLists cta_lists;         // empty: the stride walk
};
TcAttentionPlan tc_attention_plan(std::span<const int32_t> q_start,
                                  std::span<const int32_t> kv_lens, int group, int split_size,
                                  int consumers, int num_kv_heads, int num_sms, int tile_keys,
                                  TcExecution execution, TcSchedule schedule = TcSchedule::kAuto);

// Prefill, vendor policy: each new token's [0, p] cut at the prefix length and the chunk start
// into up to three segments, empty ones left out.
AttentionPlan vendor_prefill_plan(std::span<const int32_t> q_start,
                                  std::span<const int32_t> prefix_len,
                                  std::span<const int32_t> kv_lens);

}  // namespace nvdet::cuda
