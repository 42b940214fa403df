// Prefill (chunked, with a prefix cache) attention over a paged KV cache, causal.
//
// New token i of sequence s sits at absolute position p and attends to KV positions [0, p].
// Invariance argument. Invariant plan (lib/cuda/attention_ops.cpp): one item per query token
// covering [0, p + 1); the kernel walks it in tiles of 64 keys aligned to position 0, with an
// online softmax, in tile order (split_kv_attention_impl.cuh), and the merge of a single item is
// o / l. Nothing in that depends on the chunk size, the prefix length or the other tokens and
// sequences, so token p's output bits are identical for every chunking and prefix.
// Vendor plan: the range is cut at the prefix boundary and the chunk start into
// [0, prefix), [prefix, chunk_start), [chunk_start, p], each with its own online softmax (tiles
// aligned to the segment start) and merged by log-sum-exp in that order, as cascade /
// chunked-prefill kernels with merge_attn_states do: the bits follow the chunking.
#include <type_traits>

#include "kernels/split_kv_attention_impl.cuh"

namespace nvdet::kernels {

cudaError_t launch_attention_prefill(const SplitKvAttentionParams& p, cudaStream_t stream) {
  return launch_split_kv_attention</*kTile=*/64, /*kWarps=*/4, /*kUnroll=*/8>(p, stream);
}

}  // namespace nvdet::kernels
