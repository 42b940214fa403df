#pragma once
// MoE routing on the device, for a decoder that keeps its MoE layers on the GPU: each row routed
// by kernels/moe_route.cuh (the host's route_tokens, bit for bit) and the assignments laid out as
// lib/ops/moe_routing.h's group_rows_by_expert lays them out (ascending expert, then ascending
// row), by a stable counting sort with no atomics, so the layout never depends on thread timing.
#include <cuda_runtime.h>

#include <cstdint>

namespace nvdet::kernels {

struct MoeRouteOutputs {
  int32_t* expert = nullptr;    // [rows * top_k]: row r's rank-j expert at r * top_k + j
  float* weight = nullptr;      // [rows * top_k]: its combine weight
  int32_t* offsets = nullptr;   // [experts + 2]: expert e's entries are [offsets[e], offsets[e+1]);
                                // offsets[experts + 1]: 0, or 1 + the first row whose logits are
                                // not all finite (that row is not routed; nothing else is valid)
  int32_t* row = nullptr;       // [rows * top_k]: the layout's token rows
  int32_t* position = nullptr;  // [rows * top_k]: where row r's rank-j entry sits in `row`
  int32_t* counts = nullptr;    // [experts]: scratch
};

// logits: [rows, experts] fp32. rows * top_k < 2^31; top_k <= experts.
cudaError_t launch_moe_route(const float* logits, int rows, int experts, int top_k,
                             bool norm_topk_prob, const MoeRouteOutputs& out, cudaStream_t stream);

}  // namespace nvdet::kernels
