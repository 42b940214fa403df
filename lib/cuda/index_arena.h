#pragma once
// The small index arrays (page tables, attention work items) of a run of stream-ordered calls,
// put on the device without waiting: each is copied into pinned host memory and from there, in
// stream order, into a device arena at the same offset. Nothing staged is overwritten until
// reset(), which the owner calls once it has waited for the stream. An array equal to one staged
// since the last reset is not copied again: every layer of a decode step has the same page table
// and plan.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "lib/cuda/device_context.h"

namespace nvdet::cuda {

class IndexArena {
 public:
  IndexArena() = default;
  ~IndexArena();
  IndexArena(const IndexArena&) = delete;
  IndexArena& operator=(const IndexArena&) = delete;

  // The device address of `bytes` bytes equal to `data`, valid for work enqueued on `stream`
  // until reset(). Waits for the stream only when the arena has to grow.
  const void* put(const void* data, size_t bytes, cudaStream_t stream);
  // Forgets what was staged; only once the stream's work that reads it has finished.
  void reset();

 private:
  void grow(size_t at_least, cudaStream_t stream);

  struct Staged {
    size_t offset, bytes;
  };
  std::byte* host_ = nullptr;  // pinned, capacity_ bytes
  DeviceBuffer device_;
  size_t capacity_ = 0, used_ = 0;
  std::vector<Staged> staged_;
};

}  // namespace nvdet::cuda
