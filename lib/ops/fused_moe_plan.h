#pragma once
// The launch plan of a vendor-style fused MoE kernel (the shape of vLLM's Triton fused_moe, with
// the combine SGLang switches by batch size), shared by cpu-variant and cuda-vendor-policy so that
// both make the same choices from the same inputs. Every choice below deliberately follows the
// batch, as the serving kernels' do; that is what moves a request's bits.
//
//  1. Config. A tuned table keyed by the token count M, one per (experts, expert width) on the
//     device: the row whose key is nearest to M wins, the smaller key on a tie.
//     Without a table, the default: BLOCK_SIZE_M 16, N 32, K 64, GROUP_SIZE_M 1 when M <= experts,
//     else 64, 64, 32, 8.
//  2. Block assignment. When M * top_k * 4 <= experts (a batch far sparser than the experts), each
//     (token, expert) pair is a block of its own, with no alignment. Otherwise every expert's rows
//     are padded up to a multiple of BLOCK_SIZE_M (the sorted layout whose blocks the grid walks).
//     A row's place inside its block does not change its bits (each output row of a tile is its
//     own dot products), so nvdet orders an expert's rows by token where the kernels use atomics.
//  3. Split-K. A table row may ask for a split-K that fills the device: the GEMM's grid is its
//     blocks times ceil(N / BLOCK_SIZE_N) tiles, and split_k = the SMs over the grid, at most 8
//     and at most K / (2 BLOCK_SIZE_K), at least 1. Each split covers whole BLOCK_SIZE_K steps;
//     the splits' fp32 partials are added by a fixed tree.
//  4. Routed weight. Applied in fp32 to the down GEMM's fp32 accumulator in its epilogue, then
//     rounded to the activations' dtype.
//  5. Combine (the row's top_k weighted outputs, in the activations' dtype): with top_k 2 a plain
//     add (one rounding); for M <= 32 a sum in slot order (ascending top-k rank) in fp32, rounded
//     once; above, a reduction in fp32 by a pairwise tree over the slots, rounded once.
#include <cstdint>
#include <string>
#include <vector>

#include "lib/core/dtype.h"

namespace nvdet {

struct FusedMoeConfig {
  int block_m = 64, block_n = 64, block_k = 32, group_m = 8;
  bool split_k_from_grid = false;  // the row asks for a split-K that fills the device

  // "BLOCK_SIZE_M 16, BLOCK_SIZE_N 32, BLOCK_SIZE_K 64, GROUP_SIZE_M 1[, SPLIT_K grid]".
  std::string describe() const;
  bool operator==(const FusedMoeConfig&) const = default;
};

struct FusedMoeTable {
  const char* name = "";  // e.g. "H200 E=128 N=768"
  int experts = 0;
  int64_t expert_width = 0;  // the experts' intermediate size (vLLM's N)
  std::vector<std::pair<int64_t, FusedMoeConfig>> rows;  // ascending M
};

// The table shipped for (experts, expert_width) on an H200-class device, or null.
const FusedMoeTable* find_fused_moe_table(int experts, int64_t expert_width);

// The config for M tokens: the table's nearest row, or the default rule.
FusedMoeConfig fused_moe_config(int64_t tokens, int experts, int64_t expert_width,
                                std::string* source = nullptr);

enum class FusedMoeCombine {
  kPlainAdd,     // top_k 2: y0 + y1 rounded once to the dtype
  kFp32SlotSum,  // slot order in fp32, rounded once
  kFp32TreeSum,  // pairwise tree over the slots in fp32, rounded once
};

const char* fused_moe_combine_name(FusedMoeCombine c);

// The plan of one MoE block over `tokens` rows.
struct FusedMoePlan {
  FusedMoeConfig config;
  std::string config_source;  // which table row (or the default rule) gave the config
  bool naive_blocks = false;  // each (token, expert) pair its own block
  FusedMoeCombine combine = FusedMoeCombine::kFp32TreeSum;
  int num_sms = 0;

  // Rows expert e's blocks cover: its row count padded to BLOCK_SIZE_M (naive: the count).
  int64_t padded_rows(int64_t expert_rows) const;
  // The blocks of the whole layout, given every expert's row count.
  int64_t blocks(const std::vector<int32_t>& expert_rows) const;
  // split_k of one stage's GEMMs (all experts share it): n = the stage's output width, k its
  // reduction length.
  int split_k(const std::vector<int32_t>& expert_rows, int64_t n, int64_t k) const;
  // Elements of K per split (whole BLOCK_SIZE_K steps).
  int64_t split_len(int split_k, int64_t k) const;
  // The notes' text: "BLOCK_SIZE_M 16, ... (table H200 E=16 N=256 bf16, row M=8); naive blocks".
  std::string describe() const;
};

FusedMoePlan plan_fused_moe(int64_t tokens, int experts, int top_k, int64_t expert_width,
                            int num_sms);

// The combine of one output element: `products` are the k weighted outputs w * y already rounded
// to the activations' dtype `t` (in slot order); the sum is rounded to `t` once.
float fused_moe_combine(FusedMoeCombine c, const float* products, int k, DType t);

}  // namespace nvdet
