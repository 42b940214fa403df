#pragma once
// The combine of a vendor fused-MoE plan (lib/ops/fused_moe_plan.h), written once for the host
// (cpu-variant and cuda-vendor-policy's host pipeline) and the device (cuda-vendor-policy's
// device block), with the same bits: the k weighted outputs of one element, each already rounded
// to the activations' dtype, added in slot order (top-2's plain add and the slot-order sum) or
// by a pairwise tree over the slots padded with zeros to a power of two; fp32, each addition
// rounded on its own. The caller rounds the sum once to the dtype.
#include "kernels/portable_math.cuh"

namespace nvdet::kernels {

enum class FusedCombineRule : int { kSlotOrder = 0, kTree = 1 };

// k <= 64.
NVDET_PORTABLE_FN float fused_moe_combine_sum(FusedCombineRule rule, const float* products,
                                              int k) {
  namespace pt = portable;
  if (rule == FusedCombineRule::kSlotOrder) {
    float total = 0.0f;
    for (int j = 0; j < k; ++j) total = pt::add(total, products[j]);
    return total;
  }
  float v[64];
  int width = 1;
  while (width < k) width *= 2;
  for (int j = 0; j < width; ++j) v[j] = j < k ? products[j] : 0.0f;
  for (int w = width / 2; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) v[i] = pt::add(v[i], v[i + w]);
  }
  return v[0];
}

}  // namespace nvdet::kernels
