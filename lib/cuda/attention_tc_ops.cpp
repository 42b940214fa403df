// cuda-invariant's attention on the tensor-core kernels (kernels/attention_tc.cuh): decode and
// prefill both become a list of units over the one split plan, so a token's attention row has the
// same bits whether it was decoded, prefilled whole or in chunks, or scored by a trainer pass.
//
// Settings for tests and bisecting, read at each call (a bad value exits 2):
//   NVDET_ATTENTION_TC=0                      the CUDA-core kernels with the same plan instead
//   NVDET_ATTENTION_TC_EXECUTION=fused|split  every split in the block's CTA, or split-parallel
//   NVDET_ATTENTION_TC_CONSUMERS=1|2          warpgroups of 64 query rows per CTA
//   NVDET_ATTENTION_TC_CTAS=N                 persistent CTAs (default: one per SM)
//   NVDET_ATTENTION_TC_SCHEDULE=stride|balanced  the CTAs' items in stride order, or in lists
//                                             balanced by their tiles (default: lists where the
//                                             stride order would finish over 3% later)
//   NVDET_ATTENTION_TC_MERGE=dependent|after|last  the split-parallel merge as the attention
//                                             grid's programmatic dependent, or launched after it
//                                             (default: dependent where no merged row has over 8
//                                             splits), or folded inside the attention kernel by
//                                             the CTA that writes a row's last split
//   NVDET_ATTENTION_TC_SMALL_BLOCKS=swapped|wide  with one warpgroup, blocks of at most 8 query
//                                             rows (decode) in the swapped form (keys and head_dim
//                                             on wgmma's 64-row side; the default), or in the
//                                             64-row form as prefill blocks
//   NVDET_ATTENTION_TC_KV_COPY=auto|cp_async  K and V tiles by TMA, whole pages, where the page
//                                             size allows it (attention_tc_kv_tma_applies; the
//                                             default), or every tile by cp.async
// None of them changes what a row computes within the tensor-core path: the GPU tests run each
// and compare bits.
#include "lib/cuda/attention_tc_ops.h"

#include <algorithm>
#include <span>
#include <string>
#include <string_view>

#include "kernels/attention_tc.cuh"
#include "lib/core/env_setting.h"
#include "lib/core/error.h"
#include "lib/cuda/attention_plans.h"
#include "lib/cuda/elem_type.h"

namespace nvdet::cuda {
namespace {

TcExecution execution_setting() {
  return env_word_setting("NVDET_ATTENTION_TC_EXECUTION", TcExecution::kAuto,
                          {{"fused", TcExecution::kFused}, {"split", TcExecution::kSplit}});
}

// 0: by the batch's shape.
int consumers_setting() {
  return env_word_setting("NVDET_ATTENTION_TC_CONSUMERS", 0, {{"1", 1}, {"2", 2}});
}

// 0: one per SM.
int ctas_setting() { return env_int_setting("NVDET_ATTENTION_TC_CTAS", 1, 65535, 0); }

TcSchedule schedule_setting() {
  return env_word_setting("NVDET_ATTENTION_TC_SCHEDULE", TcSchedule::kAuto,
                          {{"stride", TcSchedule::kStride}, {"balanced", TcSchedule::kBalanced}});
}

bool swap_small_blocks_setting() {
  return env_word_setting("NVDET_ATTENTION_TC_SMALL_BLOCKS", true,
                          {{"swapped", true}, {"wide", false}});
}

// How split-parallel rows are merged. By default the merge kernel: as the attention grid's
// programmatic dependent where no row has over 8 splits (on an H100, with 2 and 8 splits a row it
// saved 0.7-1.3 us against a launch after the grid; with 64 it cost 4-6 us, the waiting merge
// blocks sitting beside the attention CTAs for the whole grid), else launched after the grid.
// kLast, only when asked for and where the kernel can (attention_tc_fold_in_kernel): inside the
// attention kernel, by the CTA that writes a row's last split. It saves the second launch but
// makes every split-parallel item publish its states and count them before the consumers go on
// (two fences and an atomic round trip an item): on an H100
// (reports/h100/plan-and-merge-2026-12-06) 1 us faster at KV 32768 batch 1, 1.41x slower at KV
// 32768 batch 8, and prefill chunks of 64-256 tokens lost up to two thirds of their throughput.
enum class TcMerge { kLast, kDependent, kAfter };
constexpr int kDependentMergeMaxSplits = 8;

TcMerge merge_setting(std::span<const int32_t> merge_pos, int split_size, bool fold_in_kernel) {
  const std::string_view v = env_text("NVDET_ATTENTION_TC_MERGE");
  if (v == "dependent") return TcMerge::kDependent;
  if (v == "after") return TcMerge::kAfter;
  if (!v.empty() && v != "auto" && v != "last") {
    throw_input_error("NVDET_ATTENTION_TC_MERGE must be auto, last, dependent or after, got '" +
                      std::string(v) + "'");
  }
  if (v == "last" && fold_in_kernel) return TcMerge::kLast;
  int32_t last = 0;
  for (int32_t pos : merge_pos) last = std::max(last, pos);
  return last / split_size + 1 <= kDependentMergeMaxSplits ? TcMerge::kDependent : TcMerge::kAfter;
}

bool kv_tma_setting() {
  return env_word_setting("NVDET_ATTENTION_TC_KV_COPY", true, {{"cp_async", false}});
}

}  // namespace

bool use_attention_tc(DType dtype, int32_t num_heads, int32_t num_kv_heads, int32_t head_dim) {
  const std::string_view v = env_text("NVDET_ATTENTION_TC");
  if (v == "0") return false;
  if (!v.empty() && v != "1") {
    throw_input_error("NVDET_ATTENTION_TC must be 0 or 1, got '" + std::string(v) + "'");
  }
  if (num_kv_heads <= 0 || num_heads % num_kv_heads != 0) return false;
  return kernels::attention_tc_supported(elem_type(dtype), head_dim, num_heads / num_kv_heads) &&
         kernels::attention_tc_available();
}

PreparedCall prepare_attention_tc(DeviceContext& ctx, const TcAttentionCall& c,
                                  const IndexUpload& upload, RunNotes* notes) {
  const int group = c.num_heads / c.num_kv_heads;
  const int32_t seqs = static_cast<int32_t>(c.q_start.size()) - 1;
  const int32_t rows = c.q_start.empty() ? 0 : c.q_start.back();
  // One warpgroup when every sequence's new tokens fit in 64 rows (decode, verify passes), two
  // for longer prompts where the K and V tiles then serve 128 rows.
  int consumers = consumers_setting();
  if (consumers == 0) {
    int32_t longest = 0;
    for (int32_t s = 0; s < seqs; ++s) longest = std::max(longest, c.q_start[s + 1] - c.q_start[s]);
    consumers = static_cast<int64_t>(longest) * group > 64 ? 2 : 1;
  }
  if (!kernels::attention_tc_consumers_supported(c.head_dim, consumers)) consumers = 1;
  const int ctas = ctas_setting();
  const TcAttentionPlan plan = tc_attention_plan(
      c.q_start, c.kv->kv_lens, group, c.split_size, consumers, c.num_kv_heads,
      ctas > 0 ? ctas : ctx.sm_count(), kernels::attention_tc_tile_keys(c.head_dim),
      execution_setting(), schedule_setting());

  PreparedCall call;
  const auto put = [&](const void* data, size_t bytes) -> const void* {
    if (upload) return upload(data, bytes);
    call.owned.push_back(ctx.upload_array(data, bytes));
    return call.owned.back().get();
  };
  kernels::TcAttentionParams p;
  TcMerge merge = TcMerge::kDependent;  // p.dependent_merge's default; set for split-parallel plans
  p.dtype = elem_type(c.ops.dtype);
  p.out_dtype = elem_type(c.out_dtype);
  p.q = c.ops.q;
  p.k = c.ops.k;
  p.v = c.ops.v;
  p.page_table = static_cast<const int32_t*>(
      put(c.kv->page_table.data(), c.kv->page_table.size() * sizeof(int32_t)));
  p.max_pages_per_seq = c.kv->max_pages_per_seq;
  p.page_size = c.kv->page_size;
  p.num_heads = c.num_heads;
  p.num_kv_heads = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.scale = c.scale;
  p.split_size = c.split_size;
  p.consumers = plan.consumers;
  p.swap_small_blocks = swap_small_blocks_setting();
  if (kv_tma_setting()) {
    // The maps span the pages the table names (a cache's pages past them are never read).
    int32_t last_page = -1;
    for (int32_t page : c.kv->page_table) last_page = std::max(last_page, page);
    kernels::attention_tc_use_kv_tma(p, int64_t{last_page} + 1);
  }
  p.units = static_cast<const kernels::TcAttentionUnit*>(
      put(plan.units.data(), plan.units.size() * sizeof(kernels::TcAttentionUnit)));
  p.num_units = static_cast<int32_t>(plan.units.size());
  p.ctas = plan.ctas;
  if (!plan.cta_lists.items.empty()) {
    const TcCtaLists& lists = plan.cta_lists;
    p.cta_item_begin =
        static_cast<const int32_t*>(put(lists.begin.data(), lists.begin.size() * sizeof(int32_t)));
    p.cta_items =
        static_cast<const int32_t*>(put(lists.items.data(), lists.items.size() * sizeof(int32_t)));
  }
  if (plan.split_parallel) {
    p.row_slot = static_cast<const int32_t*>(
        put(plan.row_slot.data(), plan.row_slot.size() * sizeof(int32_t)));
    p.merge_rows = static_cast<const int32_t*>(
        put(plan.merge_rows.data(), plan.merge_rows.size() * sizeof(int32_t)));
    p.merge_pos = static_cast<const int32_t*>(
        put(plan.merge_pos.data(), plan.merge_pos.size() * sizeof(int32_t)));
    p.num_merge_rows = static_cast<int32_t>(plan.merge_rows.size());
    merge = merge_setting(plan.merge_pos, c.split_size,
                          kernels::attention_tc_fold_in_kernel(c.head_dim, group, plan.consumers));
    p.dependent_merge = merge == TcMerge::kDependent;
    if (merge == TcMerge::kLast) {
      p.merge_count = ctx.zeroed_counters(static_cast<size_t>(rows) * c.num_kv_heads);
    }
    const size_t o_bytes =
        kernels::attention_tc_partial_o_bytes(plan.slots, c.num_heads, c.head_dim);
    const size_t ml_bytes = kernels::attention_tc_partial_ml_bytes(plan.slots, c.num_heads);
    auto* ws = static_cast<char*>(ctx.workspace(o_bytes + ml_bytes));
    p.partial_o = reinterpret_cast<float*>(ws);
    p.partial_ml = reinterpret_cast<float*>(ws + o_bytes);
  }
  call.out_dtype = c.out_dtype;
  call.out_shape = {rows, c.num_heads, c.head_dim};
  if (c.ops.out) {
    p.out = c.ops.out;
  } else {
    call.owned.emplace_back(static_cast<size_t>(rows) * c.num_heads * c.head_dim *
                            dtype_size(c.out_dtype));
    p.out = call.owned.back().get();
  }
  call.output = p.out;
  call.launch = [p](cudaStream_t s) { return kernels::launch_attention_tc(p, s); };
  if (notes) {
    (*notes)["kernel"] = "attention_tc_wgmma";
    (*notes)["split_size"] = std::to_string(c.split_size);
    (*notes)["tile"] = std::to_string(kernels::attention_tc_tile_keys(c.head_dim));
    (*notes)["num_splits"] = std::to_string(plan.num_splits_seq0);
    (*notes)["warpgroups"] = std::to_string(plan.consumers);
    (*notes)["kv_copy"] =
        p.kv_tma ? "TMA, whole pages (cp.async for tiles past a split's end)" : "cp.async";
    const bool swapped = plan.consumers == 1 && p.swap_small_blocks;
    (*notes)["small_blocks"] =
        swapped ? "blocks of at most " + std::to_string(kernels::attention_tc_small_block_rows) +
                      " query rows swapped (keys and head_dim on wgmma's 64 rows)"
                : "every block in the 64-row form";
    (*notes)["ctas"] = std::to_string(plan.ctas) + (plan.cta_lists.items.empty()
                                                        ? " persistent, items in stride order"
                                                        : " persistent, items in balanced lists");
    (*notes)["splits_run"] =
        !plan.split_parallel      ? "fused in each block's CTA"
        : merge == TcMerge::kLast ? "split-parallel, folded in split order by each row's last CTA"
        : merge == TcMerge::kDependent
            ? "split-parallel, merged in split order"
            : "split-parallel, merged in split order by a launch after the grid";
  }
  return call;
}

}  // namespace nvdet::cuda
