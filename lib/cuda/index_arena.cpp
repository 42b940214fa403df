#include "lib/cuda/index_arena.h"

#include <algorithm>
#include <cstring>

#include "lib/core/error.h"

namespace nvdet::cuda {
namespace {
constexpr size_t kAlign = 256;  // a whole cache line of the device for every array
constexpr size_t kFirstCapacity = size_t{1} << 20;
}  // namespace

IndexArena::~IndexArena() {
  if (host_) cudaFreeHost(host_);
}

void IndexArena::reset() {
  used_ = 0;
  staged_.clear();
}

void IndexArena::grow(size_t at_least, cudaStream_t stream) {
  // What was handed out may still be read or copied by enqueued work: let it finish first.
  check(cudaStreamSynchronize(stream), "the calls reading staged index arrays");
  reset();
  if (at_least <= capacity_) return;
  const size_t capacity = std::max({at_least, 2 * capacity_, kFirstCapacity});
  if (host_) cudaFreeHost(host_);
  host_ = nullptr;
  capacity_ = 0;
  device_ = DeviceBuffer();
  void* h = nullptr;
  check(cudaMallocHost(&h, capacity), "allocating pinned memory for index arrays");
  host_ = static_cast<std::byte*>(h);
  device_ = DeviceBuffer(capacity);
  capacity_ = capacity;
}

const void* IndexArena::put(const void* data, size_t bytes, cudaStream_t stream) {
  const size_t size = std::max<size_t>((bytes + kAlign - 1) / kAlign * kAlign, kAlign);
  for (auto it = staged_.rbegin(); it != staged_.rend(); ++it) {
    if (it->bytes == bytes && (bytes == 0 || std::memcmp(host_ + it->offset, data, bytes) == 0)) {
      return static_cast<std::byte*>(device_.get()) + it->offset;
    }
  }
  if (used_ + size > capacity_) grow(size, stream);
  std::byte* device = static_cast<std::byte*>(device_.get()) + used_;
  if (bytes) {
    std::memcpy(host_ + used_, data, bytes);
    check(cudaMemcpyAsync(device, host_ + used_, bytes, cudaMemcpyHostToDevice, stream),
          "copying an index array to the device");
  }
  staged_.push_back({used_, bytes});
  used_ += size;
  return device;
}

}  // namespace nvdet::cuda
