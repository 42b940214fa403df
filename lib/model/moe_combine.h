#pragma once
// The MoE layer's combine in the decoder: each row's k expert outputs weighted and summed in one
// fixed order - ascending top-k rank (the highest-scored expert first), in fp32, rounded once to
// the activation dtype. A row's sum depends only on its own route and its experts' rows for it,
// never on where other rows went, so the combine is batch-invariant by construction; only the
// experts' GEMMs (backend calls) can bring batch dependence.
#include <cstdint>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/ops/moe_routing.h"

namespace nvdet {

// route: the rows' experts and weights; by_expert: the same route grouped by expert
// (group_rows_by_expert); outputs[e]: expert e's down projection, one row per entry of expert e
// in by_expert order (empty for an expert that received none). Returns [route.rows, hidden].
// With a shared expert (Qwen2-MoE): shared [rows, hidden] is its output and shared_gate
// [rows, 1] (fp32) its gate logits; sigmoid(gate) * shared is added after the routed sum, still
// in fp32, before the one rounding.
HostTensor combine_experts(const MoeRoute& route, const MoeExpertRows& by_expert,
                           const std::vector<HostTensor>& outputs, int64_t hidden, DType dtype,
                           const HostTensor* shared = nullptr,
                           const HostTensor* shared_gate = nullptr);

}  // namespace nvdet
