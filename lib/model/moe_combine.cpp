#include "lib/model/moe_combine.h"

#include "kernels/portable_math.cuh"

namespace nvdet {

HostTensor combine_experts(const MoeRoute& route, const MoeExpertRows& by_expert,
                           const std::vector<HostTensor>& outputs, int64_t hidden, DType dtype,
                           const HostTensor* shared, const HostTensor* shared_gate) {
  const size_t k = static_cast<size_t>(route.top_k);
  HostTensor out(dtype, {route.rows, hidden});
  std::vector<float> acc(static_cast<size_t>(hidden));
  for (int64_t r = 0; r < route.rows; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (size_t j = 0; j < k; ++j) {
      const size_t at = static_cast<size_t>(r) * k + j;
      const HostTensor& y = outputs.at(static_cast<size_t>(route.expert[at]));
      const float w = route.weight[at];
      // The entry's row within its expert's output.
      const int64_t base =
          int64_t{by_expert.position[at] - by_expert.offsets[route.expert[at]]} * hidden;
      for (int64_t c = 0; c < hidden; ++c) acc[c] += w * y.get(base + c);
    }
    if (shared) {
      // sigmoid(g) = 1 / (1 + exp(-g)) with the exp the SwiGLU uses (portable_math.cuh).
      const float g = shared_gate->get(r);
      const float s =
          kernels::portable::div(1.0f, kernels::portable::add(1.0f, kernels::portable::exp(-g)));
      for (int64_t c = 0; c < hidden; ++c) acc[c] += s * shared->get(r * hidden + c);
    }
    for (int64_t c = 0; c < hidden; ++c) out.set(r * hidden + c, acc[c]);
  }
  return out;
}

}  // namespace nvdet
