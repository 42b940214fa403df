#pragma once
// Seeded rows for the row ops (gemm activations, rmsnorm and log-softmax inputs): the rows of a
// stream (a probed request or a filler slot) are generated once, in the scenario's dtype, and
// batches are assembled from them by copying.
#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/core/tensor.h"
#include "lib/workloads/batch_layout.h"

namespace nvdet {

class RowSource {
 public:
  RowSource(DType dtype, int64_t width, uint64_t seed, float stddev);

  // [sum over slots of tokens_per_request, width]: each slot's rows from its stream.
  HostTensor assemble(const BatchLayout& layout, int64_t tokens_per_request);

 private:
  const std::vector<std::byte>& rows_of(uint64_t stream, int64_t count);

  DType dtype_;
  int64_t width_;
  uint64_t seed_;
  float stddev_;
  // Looked up once per batch slot of every context: a flat hash map. rows_of's reference is used
  // before the next insertion (which may move the rows).
  absl::flat_hash_map<uint64_t, std::vector<std::byte>> cache_;
  size_t cached_bytes_ = 0;
};

// A tensor of `shape` whose elements are seeded normals rounded to `dtype`.
HostTensor seeded_tensor(DType dtype, std::vector<int64_t> shape, uint64_t seed, uint64_t stream,
                         float stddev, float mean = 0.0f);

}  // namespace nvdet
