#pragma once
// Host interface of the tensor-core attention kernels (attention_tc.cu, sm_90a): one kernel for
// decode and prefill over a paged KV cache, following one plan so that a query row's output bits
// do not depend on how it reached the kernel.
//
// THE PLAN (for a query row at absolute position p of its sequence, one query head):
//  1. Splits. Keys [0, p] are cut into splits [j*S, (j+1)*S) at absolute positions, S the split
//     size (a setting, 512 by default); split j ends at min((j+1)*S, p + 1).
//  2. Tiles. Inside split j, key tiles of W keys start at j*S, j*S + W, ... (W = 128 for head_dim
//     64 and 128, 64 for head_dim 256), taken in ascending order. Each tile is one pass of the
//     same arithmetic (attention_tc_math.cuh): s = q.k by wgmma m64nWk16 in k steps of 16
//     ascending; keys at or past the split end or past p are set to -inf by a select; the tile's
//     row max; p = exp2(s * c - m * c) (c = scale * log2 e); the row sum; l and O rescaled by
//     alpha = exp2((m_old - m_new) * c) (exactly 1 when the max did not move); O += P V by wgmma
//     m64nDk16 in k steps of 16 keys ascending, P rounded to the input type. (The select is
//     skipped on a tile none of whose keys it would mask, and the rescale of O where alpha is
//     exactly 1: both are the identity there.)
//  3. Merge. The splits' states (m, l, O) are folded into an empty state in ascending j with
//     tc_fold(), then out = O / L, rounded once.
// Nothing in that depends on the batch, the other sequences, the chunk the row arrived in, the
// prefix-cache length, the row's place in the CTA's 64-row block or how many CTAs work on it:
//  - rows of an MMA never mix, so a row's scores and P V products are the same in any block;
//  - a tile past a row's last key is an exact no-op (max unchanged: alpha = 1, p = 0, O + 0 V),
//    so a block may walk further than some of its rows need; V rows past the sequence's last
//    key are zero-filled in shared memory so that 0 x (unwritten slot) cannot be NaN;
//  - a split may be folded inside the CTA that computed it (fused), or written as a partial state
//    and folded by the merge kernel (split-parallel): both apply tc_fold in the same order to the
//    same fp32 values. Which one runs, and how many query rows share a CTA, follow the launch
//    (tests force each and compare bits); what is computed does not.
// Decode is the special case of one query token per sequence: the GQA group's heads fill the
// rows of one block, and its splits usually run in parallel CTAs.
// Two forms of the same products: the 64-row form puts a block's 64 query rows on wgmma's M side
// (m64nWk16 for S, m64nDk16 for O); the swapped form, for blocks of at most 8 query rows with
// one warpgroup (decode), puts the keys and head_dim there (S^T = K Q^T, O^T += V^T P^T by
// m64n8k16) and runs the softmax step on the 64-row form's register order. Each element of S and
// of O gets the same bits from both (the tensor cores add a dot product's 16 k terms the same way
// whichever operand is A; tests show it, and the plan tests compare the forms).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

// One CTA's work for one KV head (the launcher pairs every unit with every KV head): query tokens
// [q_row, q_row + num_tokens) of sequence `seq`, at positions first_pos, first_pos + 1, ...,
// over splits [split_begin, split_end). partial == 0: the CTA folds those splits (all of the
// tokens' splits) and writes the output. partial == 1: the unit has exactly one split and writes
// each row's partial state for the merge kernel.
struct TcAttentionUnit {
  int32_t seq;
  int32_t q_row;
  int32_t num_tokens;
  int32_t first_pos;
  int32_t split_begin;
  int32_t split_end;
  int32_t partial;
  int32_t pad_;
};

struct TcAttentionParams {
  ElemType dtype = ElemType::kBF16;  // q, k, v
  ElemType out_dtype = ElemType::kFP32;
  const void* q = nullptr;  // [rows, num_heads, head_dim]
  const void* k = nullptr;  // [num_pages, page_size, num_kv_heads, head_dim]
  const void* v = nullptr;
  const int32_t* page_table = nullptr;  // device, [num_seqs * max_pages_per_seq]
  int32_t max_pages_per_seq = 0;
  int32_t page_size = 16;
  int32_t num_heads = 0, num_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  int32_t split_size = 512;
  int32_t consumers = 1;  // warpgroups of 64 query rows per CTA (1 or 2)
  // With one warpgroup, items of at most 8 query rows (decode: one token's GQA heads) in the
  // swapped form (attention_tc_small_block_rows); false: every item in the 64-row form. The same
  // bits either way.
  bool swap_small_blocks = true;
  const TcAttentionUnit* units = nullptr;  // device
  int32_t num_units = 0;
  int32_t ctas = 0;  // persistent CTAs (0: one per SM)
  // The persistent CTAs' item lists (item = unit index * num_kv_heads + KV head): CTA b takes
  // cta_items[cta_item_begin[b] .. cta_item_begin[b + 1]) in that order, and the launch has ctas
  // CTAs. Null: CTA b takes items b, b + gridDim.x, ... Which CTA runs an item, and after which
  // other items, never changes what the item computes.
  const int32_t* cta_item_begin = nullptr;  // device, [ctas + 1]
  const int32_t* cta_items = nullptr;       // device
  // Split-parallel units: token row r's split j state lives in slot row_slot[r] + j
  // (row_slot[r] = -1 for rows no partial unit covers); the merge kernel folds merge_rows.
  const int32_t* row_slot = nullptr;   // device, [rows]
  const int32_t* merge_rows = nullptr;  // device: token rows to fold, with their positions
  const int32_t* merge_pos = nullptr;   // device
  int32_t num_merge_rows = 0;
  float* partial_o = nullptr;   // [slots, num_heads, head_dim]
  float* partial_ml = nullptr;  // [slots, num_heads, 2]
  void* out = nullptr;          // [rows, num_heads, head_dim] of out_dtype
  // The merge launched as the attention grid's programmatic dependent (its blocks scheduled while
  // the attention CTAs run, held in griddepcontrol.wait), or as a plain launch after it. The same
  // reads and folds either way.
  bool dependent_merge = true;
  // Non-null: no merge kernel; the CTA that writes the last of a split-parallel row's splits
  // folds that row (the merge kernel's reads and folds, in the same order). One counter per
  // (token row, KV head) counts the splits written; it must read zero before the launch, and the
  // folding CTA sets it back to zero, so a buffer zeroed once serves every later launch.
  int32_t* merge_count = nullptr;  // device, [rows * num_kv_heads]
  // K and V tiles by TMA (set by attention_tc_use_kv_tma): a tile whose keys all lie below its
  // split's end and the unit's last key comes as whole pages, one box a page and 64-element column
  // block, issued by the producer thread that owns the page's first key; a tile with keys past
  // that end still comes by cp.async with zero fill. The same bytes land in the same places.
  bool kv_tma = false;
  CUtensorMap k_map{}, v_map{};  // [num_pages, page_size, num_kv_heads, head_dim] of k and v
};

// The plan's key-tile width for a head_dim (0 when the kernels do not take it).
int attention_tc_tile_keys(int head_dim);
// Query rows (tokens x heads of one KV head) of a CTA with `consumers` warpgroups.
inline int attention_tc_block_rows(int consumers) { return 64 * consumers; }
// The most query rows of an item the swapped form takes (TcAttentionParams::swap_small_blocks).
inline constexpr int attention_tc_small_block_rows = 8;
// Whether the kernels take this dtype (bf16, fp16), head_dim (64, 128, 256) and GQA group
// (1..64 query heads per KV head), and with which warpgroup counts (head_dim 256: 1 only).
bool attention_tc_supported(ElemType dtype, int head_dim, int group);
bool attention_tc_consumers_supported(int head_dim, int consumers);
// Whether the CTA that writes a split-parallel row's last split can fold the row itself
// (TcAttentionParams::merge_count): at most two quads of the group's heads a consumer thread.
bool attention_tc_fold_in_kernel(int head_dim, int group, int consumers);
// Whether the K/V pages can come by TMA (tc_kv_tma_applies for this head_dim's tile width).
bool attention_tc_kv_tma_applies(int head_dim, int page_size, int split_size);
// Encodes p.k_map and p.v_map over caches of num_pages pages (p.k, p.v, p.dtype, p.page_size,
// p.num_kv_heads, p.head_dim set) and sets p.kv_tma where TMA applies and the driver takes the
// maps; returns p.kv_tma.
bool attention_tc_use_kv_tma(TcAttentionParams& p, int64_t num_pages);
// Whether this process can run them: sm_90a code built and a compute capability 9.0 device.
bool attention_tc_available();

size_t attention_tc_partial_o_bytes(int64_t slots, int num_heads, int head_dim);
size_t attention_tc_partial_ml_bytes(int64_t slots, int num_heads);

// Runs the units, then (when num_merge_rows > 0) the merge kernel.
cudaError_t launch_attention_tc(const TcAttentionParams& p, cudaStream_t stream);

}  // namespace nvdet::kernels
