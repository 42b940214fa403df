#pragma once
// Shared by the tensor-parallel GEMM tests (CPU: tp_gemm_test.cpp, GPU: gpu_tp_gemm_test.cpp):
// seeded bf16 operands and the TpOptions of a plan.
#include <cstdint>
#include <utility>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/workloads/tp_gemm.h"

namespace nvdet::testing {

// A bf16 tensor of normal values with standard deviation `stddev`, from stream `stream` of `seed`.
inline HostTensor seeded_bf16(std::vector<int64_t> shape, uint64_t seed, uint64_t stream,
                              float stddev) {
  HostTensor t(DType::kBF16, std::move(shape));
  fill_normal(t, seed, stream, stddev);
  return t;
}

// tp ranks reduced by `algo` (channels: the ring's, 0 for its default).
inline TpOptions tp_options(int tp, AllReduceAlgo algo, int channels = 0) {
  TpOptions o;
  o.tp = tp;
  o.allreduce = algo;
  o.channels = channels;
  return o;
}

}  // namespace nvdet::testing
