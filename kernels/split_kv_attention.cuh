#pragma once
// Host interface of the split-KV attention kernels that both attention ops use. An op is a list
// of work items, each one query row (one token's query heads) over one contiguous range of its
// sequence's KV positions; every item produces partial softmax states (m, l, o) for all query
// heads, and a merge kernel folds each row's items in item order. The op-level plans (which items)
// live in the host code: decode splits (attention_decode.cu), prefill segments
// (attention_prefill.cu). See split_kv_attention_impl.cuh for the in-item reduction order.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

// One query row over KV positions [kv_start, kv_end) of sequence `seq`.
struct AttentionWorkItem {
  int32_t q_row;
  int32_t seq;
  int32_t kv_start;
  int32_t kv_end;
};

struct SplitKvAttentionParams {
  ElemType dtype = ElemType::kBF16;      // q, k, v
  ElemType out_dtype = ElemType::kFP32;
  const void* q = nullptr;         // [num_rows, num_heads, head_dim]
  const void* k = nullptr;         // [num_pages, page_size, num_kv_heads, head_dim]
  const void* v = nullptr;
  const int32_t* page_table = nullptr;  // device, [num_seqs * max_pages_per_seq]
  int32_t max_pages_per_seq = 0;
  int32_t page_size = 16;
  int32_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  const AttentionWorkItem* items = nullptr;  // device; items of one row are consecutive,
  int32_t num_items = 0;                     // rows in ascending order
  const int32_t* row_item_begin = nullptr;   // device, [num_rows + 1]
  int32_t num_rows = 0;
  float* workspace = nullptr;                // split_kv_attention_workspace_bytes()
  void* out = nullptr;                       // [num_rows, num_heads, head_dim] of out_dtype
};

size_t split_kv_attention_workspace_bytes(int64_t num_items, int num_heads, int head_dim);

// Whether the kernels take this dtype (bf16, fp16), head_dim (64, 128, 256) and query heads per
// KV head (1..8).
bool split_kv_attention_supported(ElemType dtype, int head_dim, int group);

// Decode: KV tiles of 128 keys inside each item (attention_decode.cu).
cudaError_t launch_attention_decode(const SplitKvAttentionParams& p, cudaStream_t stream);
// Prefill: KV tiles of 64 keys inside each item (attention_prefill.cu).
cudaError_t launch_attention_prefill(const SplitKvAttentionParams& p, cudaStream_t stream);
// The merge of each row's partial states, in item order (attention_merge.cu). Called by both
// launchers above after their partial kernel.
cudaError_t launch_attention_merge(const SplitKvAttentionParams& p, cudaStream_t stream);

}  // namespace nvdet::kernels
