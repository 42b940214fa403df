// MoE routing on the device (kernels/moe_route.cu) against the host's route_tokens and
// group_rows_by_expert, bit for bit: experts, weights, offsets, the layout's rows and places, on
// seeded logits with many ties (logits drawn from a few values), 1 to 4099 rows, 8 to 256
// experts, top-1 to top-8, with and without norm_topk_prob; and a row with a non-finite logit
// flagged as the first bad row. Skipped without a device.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "lib/ops/moe_routing.h"
#include "tests/test_support.h"

#ifdef NVDET_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/moe_route_launch.cuh"
#endif

namespace nvdet::testing {
namespace {

#ifdef NVDET_WITH_CUDA

template <class T>
struct DeviceArray {
  explicit DeviceArray(size_t n) : n(n) {
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess);
  }
  ~DeviceArray() { cudaFree(p); }
  std::vector<T> host() const {
    std::vector<T> out(n);
    EXPECT_EQ(cudaMemcpy(out.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  T* p = nullptr;
  size_t n;
};

struct DeviceRoute {
  std::vector<int32_t> expert, offsets, row, position;
  std::vector<float> weight;
};

DeviceRoute route_on_device(const std::vector<float>& logits, int rows, int experts, int k,
                            bool norm) {
  DeviceArray<float> l(logits.size()), weight(static_cast<size_t>(rows) * k);
  DeviceArray<int32_t> expert(static_cast<size_t>(rows) * k), offsets(experts + 2),
      row(static_cast<size_t>(rows) * k), position(static_cast<size_t>(rows) * k), counts(experts);
  EXPECT_EQ(cudaMemcpy(l.p, logits.data(), logits.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  kernels::MoeRouteOutputs o{expert.p, weight.p, offsets.p, row.p, position.p, counts.p};
  EXPECT_EQ(kernels::launch_moe_route(l.p, rows, experts, k, norm, o, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return {expert.host(), offsets.host(), row.host(), position.host(), weight.host()};
}

TEST(GpuMoeRoute, EqualsTheHostRoutingAndLayoutBitwise) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  std::mt19937 rng(36);
  for (const int experts : {8, 128, 256}) {
    for (const int k : {1, 2, 8}) {
      for (const int rows : {1, 7, 300, 4099}) {
        // A few distinct values, so that ties between experts are common.
        std::uniform_int_distribution<int> level(-6, 6);
        std::vector<float> logits(static_cast<size_t>(rows) * experts);
        for (float& x : logits) x = 0.37f * level(rng);
        for (const bool norm : {false, true}) {
          SCOPED_TRACE(::testing::Message() << experts << " experts, top-" << k << ", " << rows
                                            << " rows" << (norm ? ", norm" : ""));
          const MoeRoute want = route_tokens(logits, rows, experts, k, norm);
          const MoeExpertRows layout = group_rows_by_expert(want, experts);
          const DeviceRoute got = route_on_device(logits, rows, experts, k, norm);
          EXPECT_EQ(got.expert, want.expert);
          ASSERT_EQ(got.weight.size(), want.weight.size());
          for (size_t i = 0; i < want.weight.size(); ++i) {
            ASSERT_EQ(std::bit_cast<uint32_t>(got.weight[i]),
                      std::bit_cast<uint32_t>(want.weight[i]))
                << i;
          }
          std::vector<int32_t> offsets = layout.offsets;
          offsets.push_back(0);  // no bad row
          EXPECT_EQ(got.offsets, offsets);
          EXPECT_EQ(got.row, layout.row);
          EXPECT_EQ(got.position, layout.position);
        }
      }
    }
  }
}

TEST(GpuMoeRoute, FlagsTheFirstRowWithANonFiniteLogit) {
  if (!gpu_available()) GTEST_SKIP() << "no CUDA device";
  const int rows = 300, experts = 16;
  std::vector<float> logits(static_cast<size_t>(rows) * experts, 0.5f);
  logits[250 * experts + 3] = NAN;
  logits[41 * experts + 15] = INFINITY;
  const DeviceRoute got = route_on_device(logits, rows, experts, 2, true);
  EXPECT_EQ(got.offsets.back(), 42);
}

#else
TEST(GpuMoeRoute, NeedsACudaBuild) { GTEST_SKIP() << "built without CUDA"; }
#endif

}  // namespace
}  // namespace nvdet::testing
