#pragma once
// One token row of MoE routing, written once for the host (lib/ops/moe_routing.cpp) and the
// device (kernels/moe_route.cu), with the same bits on both (kernels/portable_math_f64.cuh):
//  - top-k: the top_k experts by the ranking "higher fp32 logit first, the lower expert index on
//    a tie", a strict total order, picked one by one (pick j is the best expert ranked after pick
//    j - 1), so the result does not depend on a sort's algorithm;
//  - scores: softmax in double (the largest logit subtracted, exp_f64, the sum in ascending
//    expert order, a division); the k picks' scores recomputed the same way;
//  - weights: each pick's score, divided by the picks' sum (ascending rank) when norm_topk_prob,
//    rounded once to fp32.
#include <cstdint>

#include "kernels/portable_math_f64.cuh"

namespace nvdet::kernels {

// Does expert a rank before expert b? Higher logit first, then the lower index.
NVDET_PORTABLE_FN bool moe_ranks_before(const float* logits, int a, int b) {
  return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
}

// Is this router logit infinite or NaN? (Such a row is not routed.)
NVDET_PORTABLE_FN bool moe_logit_not_finite(float logit) {
  return (portable::bits_of(logit) & 0x7f800000u) == 0x7f800000u;
}

// Routes one row: expert[j] and weight[j] for j < top_k. Returns -1, or the first expert whose
// logit is not finite (the row is then not routed: the ranking would be undefined).
NVDET_PORTABLE_FN int moe_route_row(const float* logits, int experts, int top_k,
                                    bool norm_topk_prob, int32_t* expert, float* weight) {
  namespace pt = portable;
  for (int e = 0; e < experts; ++e) {
    if (moe_logit_not_finite(logits[e])) return e;
  }
  int previous = -1;
  for (int j = 0; j < top_k; ++j) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      if (previous >= 0 && !moe_ranks_before(logits, previous, e)) continue;
      if (best < 0 || moe_ranks_before(logits, e, best)) best = e;
    }
    expert[j] = best;
    previous = best;
  }
  // The largest logit is the first pick's.
  const double max_logit = static_cast<double>(logits[expert[0]]);
  double denom = 0.0;
  for (int e = 0; e < experts; ++e) {
    denom = pt::add_f64(denom, pt::exp_f64(pt::sub_f64(static_cast<double>(logits[e]), max_logit)));
  }
  const auto score = [&](int j) {
    return pt::div_f64(
        pt::exp_f64(pt::sub_f64(static_cast<double>(logits[expert[j]]), max_logit)), denom);
  };
  double kept = 0.0;
  for (int j = 0; j < top_k; ++j) kept = pt::add_f64(kept, score(j));
  for (int j = 0; j < top_k; ++j) {
    weight[j] = static_cast<float>(norm_topk_prob ? pt::div_f64(score(j), kept) : score(j));
  }
  return -1;
}

}  // namespace nvdet::kernels
