#pragma once
// Split decisions shared by the CPU and GPU backends. Plain C++ (no CUDA), so the CPU variant
// kernels and the CUDA launchers make exactly the same choices from the same inputs.
//
// Two families live here:
//  - the invariant plan (invariant_attention_split_size): depends only on fixed settings;
//  - vendor-style heuristics (flashdecoding_num_splits, vendor_decode_split_sizes,
//    vendor_norm_row_splits, vendor_norm_block_threads): they deliberately depend on the batch
//    (its size, its KV lengths, its row count), as the schedulers they reproduce do. That
//    dependence is what makes one request's bits change with its neighbours.
//
// The CPU variant backend has no SMs; it passes kNotionalSmCount (an H200's 132) so that it
// mimics the decisions an H200 would make.
#include <cstdint>
#include <span>
#include <vector>

#include "lib/ops/op_args.h"

namespace nvdet {

// SM count the CPU variant backend pretends to have: an H200 (132 SMs).
inline constexpr int kNotionalSmCount = 132;

// KV tokens per split in the invariant attention plan when the sweep does not fix one.
inline constexpr int kDefaultInvariantSplitSize = 512;

// The invariant attention split size: splits.split_size when set (> 0), else 512. Depends on
// nothing in the batch.
int invariant_attention_split_size(const AttentionSplits& splits);

// Number of KV splits a FlashDecoding-style split-KV decode kernel launches (reproduces the
// `num_splits_heuristic` of FlashAttention-2's flash_fwd_splitkv path):
//  - returns 1 when batch_times_kv_heads >= 0.8 * num_sms (the batch alone nearly fills the GPU);
//  - otherwise considers s = 1 .. min(max_splits, num_sms, kv_len_blocks), where
//    kv_len_blocks = ceil(kv_len / 64) for the longest sequence (a split never gets less than one
//    64-token block);
//  - a split count s > 1 is *eligible* only if it changes the blocks per split, i.e.
//    ceil(kv_len_blocks / s) != ceil(kv_len_blocks / (s - 1)); ineligible counts get efficiency 0;
//  - efficiency(s) = n_waves / ceil(n_waves), n_waves = batch_times_kv_heads * s / num_sms;
//  - returns the smallest eligible s whose efficiency is >= 0.85 * the best efficiency.
int flashdecoding_num_splits(int batch_times_kv_heads, int num_sms, int kv_len_blocks,
                             int max_splits = 128);

// Constants of the FlashInfer-style load balance below.
inline constexpr int kVendorCtasPerSm = 2;       // occupancy the scheduler plans for
inline constexpr int kVendorMinSplitLen = 128;   // never split KV finer than 128 tokens
inline constexpr int kVendorSplitLenAlign = 16;  // split lengths are a multiple of 16 tokens

// Per-request KV split lengths (tokens) of a FlashInfer-style decode scheduler (reproduces the
// idea of FlashInfer's decode plan: one KV chunk size for the whole batch, chosen so that the
// batch's total work fills a fixed CTA budget):
//  - if splits.num_splits > 0: request i gets ceil(kv_lens[i] / num_splits) (at least 1);
//  - else: target_ctas = kVendorCtasPerSm * num_sms; chunks = max(1, target_ctas / heads);
//    split_len = max(kVendorMinSplitLen, ceil(sum(kv_lens) / chunks)) rounded up to a multiple
//    of kVendorSplitLenAlign, the same for every request.
// So a request's split boundaries depend on its neighbours' KV lengths. A split length >= a
// request's kv_len means that request is not split. `heads` is the number of heads a CTA is
// scheduled per (KV heads for GQA).
std::vector<int> vendor_decode_split_sizes(std::span<const int32_t> kv_lens, int heads, int num_sms,
                                           AttentionSplits splits);

// Vendor RMSNorm / log-softmax row split (the "split a row across blocks when the batch is too
// small to fill the GPU" policy of serving-stack norm kernels): when rows < num_sms, each row is
// cut into S = min(ceil(num_sms / rows), ceil(row_len / 1024), 32) contiguous parts that are
// reduced separately and combined; otherwise S = 1. Always >= 1.
int vendor_norm_row_splits(int64_t rows, int64_t row_len, int num_sms);

// Threads per block of the vendor norm kernels: 1024 when rows <= 64 (few rows: one big block
// per row), else 256. The block's reduction tree (per-thread strided sums, warp trees, a tree
// over warps) therefore changes with the token count.
int vendor_norm_block_threads(int64_t rows);

}  // namespace nvdet
