// Decode attention over a paged KV cache: one query token per sequence, split-KV.
//
// Invariance argument. The host plan (lib/cuda/attention_plans.cpp) cuts sequence s's KV range
// [0, kv_len) into items; the partial kernel (split_kv_attention_impl.cuh, which states the
// reduction order inside an item) computes each item's softmax state from the item's own keys,
// in tiles of 128 keys aligned to the item start, in an order fixed by the item's range and
// compile-time constants; the merge kernel folds a sequence's items in item order
// (attention_merge.cu). Neither kernel's arithmetic depends on the grid, so:
//  - invariant plan: items are [0, S), [S, 2S), ... with S = invariant_attention_split_size
//    (512 by default), a function of kv_len and a fixed setting only. KV length 1000 is always
//    items of 512 and 488 whatever the batch, so the output bits are batch-invariant;
//  - vendor plan: the split count and length follow the batch (FlashDecoding's num-splits
//    heuristic, FlashInfer-style split lengths from the whole batch's KV lengths), so the same
//    request gets different items, and different bits, in different batches.
// Speed: a CTA handles one (item, KV head) for all query heads of the GQA group, so K and V are
// read once, with 16-byte streaming loads, 8 per lane in flight, the tile's page-table lookups
// hoisted into shared memory and the first V loads issued before the softmax step.
#include <type_traits>

#include "kernels/split_kv_attention_impl.cuh"

namespace nvdet::kernels {

cudaError_t launch_attention_decode(const SplitKvAttentionParams& p, cudaStream_t stream) {
  return launch_split_kv_attention</*kTile=*/128, /*kWarps=*/4, /*kUnroll=*/8>(p, stream);
}

}  // namespace nvdet::kernels
