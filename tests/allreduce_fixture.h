#pragma once
// Shared by the all-reduce tests (CPU: allreduce_test.cpp against sums written out by hand,
// multi-GPU: multigpu_nccl_test.cpp against NCCL): each rank's seeded bf16 buffer.
#include <cstdint>
#include <utility>
#include <vector>

#include "lib/core/tensor.h"

namespace nvdet::testing {

// n ranks of `count` bf16 values, rank r filled from stream first_stream + r of `seed`.
inline std::vector<HostTensor> seeded_ranks(int n, int64_t count, uint64_t seed,
                                            uint64_t first_stream) {
  std::vector<HostTensor> out;
  for (int r = 0; r < n; ++r) {
    HostTensor t(DType::kBF16, {count});
    fill_normal(t, seed, first_stream + static_cast<uint64_t>(r), 1.0f);
    out.push_back(std::move(t));
  }
  return out;
}

// The ranks' buffers as the all-reduce functions take them.
inline std::vector<const HostTensor*> pointers(const std::vector<HostTensor>& ranks) {
  std::vector<const HostTensor*> p;
  for (const HostTensor& t : ranks) p.push_back(&t);
  return p;
}

}  // namespace nvdet::testing
