#include "lib/workloads/row_source.h"

#include <cstring>
#include <span>
#include <string>

#include "lib/core/host_memory.h"

namespace nvdet {
namespace {
// Past this many cached bytes the cache starts over: rows are cheap to regenerate, memory is not.
constexpr size_t kCacheLimitBytes = size_t{6} << 30;
}  // namespace

HostTensor seeded_tensor(DType dtype, std::vector<int64_t> shape, uint64_t seed, uint64_t stream,
                         float stddev, float mean) {
  HostTensor t(dtype, std::move(shape));
  std::vector<float> f;
  try {
    f.resize(static_cast<size_t>(t.numel()));
  } catch (const std::bad_alloc&) {
    throw HostAllocationError("the fp32 values of a seeded " + std::string(dtype_name(dtype)) +
                                  " tensor of " + std::to_string(t.numel()) + " elements",
                              static_cast<uint64_t>(t.numel()) * sizeof(float));
  }
  fill_normal(std::span<float>(f), seed, stream, stddev);
  if (mean != 0.0f) {
    for (float& x : f) x += mean;
  }
  floats_to_dtype(f.data(), t.numel(), dtype, t.mutable_data());
  return t;
}

RowSource::RowSource(DType dtype, int64_t width, uint64_t seed, float stddev)
    : dtype_(dtype), width_(width), seed_(seed), stddev_(stddev) {}

const std::vector<std::byte>& RowSource::rows_of(uint64_t stream, int64_t count) {
  auto it = cache_.find(stream);
  const size_t bytes = static_cast<size_t>(count * width_) * dtype_size(dtype_);
  if (it != cache_.end() && it->second.size() == bytes) return it->second;
  if (cached_bytes_ + bytes > kCacheLimitBytes) {
    cache_.clear();
    cached_bytes_ = 0;
  }
  std::vector<float> f(static_cast<size_t>(count * width_));
  fill_normal(std::span<float>(f), seed_, stream, stddev_);
  std::vector<std::byte> b(bytes);
  floats_to_dtype(f.data(), count * width_, dtype_, b.data());
  cached_bytes_ += bytes;
  auto& slot = cache_[stream];
  slot = std::move(b);
  return slot;
}

HostTensor RowSource::assemble(const BatchLayout& layout, int64_t tokens) {
  const int64_t batch = static_cast<int64_t>(layout.slots.size());
  HostTensor t(dtype_, {batch * tokens, width_});
  std::byte* dst = t.mutable_data();
  const size_t block = static_cast<size_t>(tokens * width_) * dtype_size(dtype_);
  for (int64_t s = 0; s < batch; ++s) {
    const BatchSlot& slot = layout.slots[s];
    const uint64_t stream =
        slot.probed ? request_stream(slot.request) : filler_stream(slot.request);
    std::memcpy(dst + s * block, rows_of(stream, tokens).data(), block);
  }
  return t;
}

}  // namespace nvdet
