#include "lib/ops/moe_routing.h"

#include <fmt/format.h>

#include "kernels/moe_route.cuh"
#include "lib/core/error.h"

namespace nvdet {

MoeRoute route_tokens(std::span<const float> router_logits, int rows, int num_experts, int top_k,
                      bool norm_topk_prob) {
  if (rows < 0 || num_experts < 1 || top_k < 1 || top_k > num_experts) {
    throw_input_error(fmt::format(
        "MoE routing needs rows >= 0 and 1 <= top_k <= num_experts (got rows {}, top_k {}, "
        "num_experts {})",
        rows, top_k, num_experts));
  }
  if (router_logits.size() != static_cast<size_t>(rows) * static_cast<size_t>(num_experts)) {
    throw_input_error(fmt::format("MoE routing got {} router logits for {} rows of {} experts",
                                  router_logits.size(), rows, num_experts));
  }
  MoeRoute route;
  route.rows = rows;
  route.top_k = top_k;
  route.expert.resize(static_cast<size_t>(rows) * top_k);
  route.weight.resize(route.expert.size());
  for (int r = 0; r < rows; ++r) {
    const size_t at = static_cast<size_t>(r) * top_k;
    const int bad = kernels::moe_route_row(
        router_logits.data() + static_cast<size_t>(r) * num_experts, num_experts, top_k,
        norm_topk_prob, route.expert.data() + at, route.weight.data() + at);
    if (bad >= 0) {
      throw_runtime_error(
          fmt::format("MoE routing: router logit of row {}, expert {} is not finite ({})", r, bad,
                      router_logits[static_cast<size_t>(r) * num_experts + bad]));
    }
  }
  return route;
}

std::vector<int32_t> expert_row_counts(const MoeRoute& route, int num_experts) {
  std::vector<int32_t> counts(num_experts, 0);
  for (int32_t e : route.expert) {
    if (e < 0 || e >= num_experts) {
      throw_input_error(fmt::format("MoE route names expert {} of {}", e, num_experts));
    }
    ++counts[e];
  }
  return counts;
}

MoeExpertRows group_rows_by_expert(const MoeRoute& route, int num_experts) {
  const std::vector<int32_t> counts = expert_row_counts(route, num_experts);
  MoeExpertRows grouped;
  grouped.offsets.assign(num_experts + 1, 0);
  for (int e = 0; e < num_experts; ++e) grouped.offsets[e + 1] = grouped.offsets[e] + counts[e];
  grouped.row.resize(route.expert.size());
  grouped.rank.resize(route.expert.size());
  grouped.position.resize(route.expert.size());
  std::vector<int32_t> next(grouped.offsets.begin(), grouped.offsets.end() - 1);
  // Rows in ascending order, so each expert's entries come out ascending by row.
  for (int r = 0; r < route.rows; ++r) {
    for (int j = 0; j < route.top_k; ++j) {
      const size_t at = static_cast<size_t>(r) * route.top_k + j;
      const int32_t e = route.expert[at];
      grouped.row[next[e]] = r;
      grouped.rank[next[e]] = j;
      grouped.position[at] = next[e];
      ++next[e];
    }
  }
  return grouped;
}

}  // namespace nvdet
