#pragma once
// Mixture-of-experts routing, shared by every backend and by the decoder, so that all of them
// send each token row to the same experts with the same weights: a backend's bits may then differ
// only in its GEMMs and in its combine, which is where serving kernels differ.
//
// For each row r of router logits [rows, num_experts] (fp32, as the router GEMM returned them),
// by kernels/moe_route.cuh (the same code routes on the device, with the same bits):
//  - scores: softmax over the experts, computed in double (max subtracted, exp, sum in ascending
//    expert order, divide), with nvdet's own exp (kernels/portable_math_f64.cuh) rather than the
//    C library's, which the device does not share;
//  - top-k: the top_k experts with the highest score; equal scores -> the lower expert index
//    first. Softmax is monotone, so the ranking is made on the fp32 logits themselves (exact;
//    no rounding of the scores can reorder or merge them);
//  - weights: the k selected scores, divided by their sum (in double, ascending rank) when
//    norm_topk_prob, then rounded once to fp32.
// A non-finite logit makes the ranking undefined and is refused (exit 3: it comes from the data,
// not from the scenario).
#include <cstdint>
#include <span>
#include <vector>

namespace nvdet {

struct MoeRoute {
  int rows = 0;
  int top_k = 0;
  std::vector<int32_t> expert;  // [rows * top_k]: [r * top_k + j] is row r's rank-j expert
  std::vector<float> weight;    // [rows * top_k]: that expert's combine weight
};

MoeRoute route_tokens(std::span<const float> router_logits, int rows, int num_experts, int top_k,
                      bool norm_topk_prob);

// How many rows each expert receives: [num_experts] (a row counts once per expert it selects).
std::vector<int32_t> expert_row_counts(const MoeRoute& route, int num_experts);

// The sorted token layout that grouped MoE kernels work in: every (row, rank) assignment grouped
// by expert, ascending expert, and within an expert ascending row. Expert e's assignments are
// entries [offsets[e], offsets[e + 1]).
struct MoeExpertRows {
  std::vector<int32_t> offsets;  // [num_experts + 1]
  std::vector<int32_t> row;      // [rows * top_k]: the token row
  std::vector<int32_t> rank;     // [rows * top_k]: which of that row's top-k slots it fills
  // The inverse, [rows * top_k] row-major: where row r's rank-j entry sits in `row`.
  std::vector<int32_t> position;
};

MoeExpertRows group_rows_by_expert(const MoeRoute& route, int num_experts);

}  // namespace nvdet
