#pragma once
// Device memory for kernel-level GPU tests: every array is freed when the owner goes out of scope,
// also when an ASSERT leaves the test early. CUDA builds only.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace nvdet::testing {

class DeviceArrays {
 public:
  DeviceArrays() = default;
  DeviceArrays(const DeviceArrays&) = delete;
  DeviceArrays& operator=(const DeviceArrays&) = delete;
  ~DeviceArrays() {
    for (void* p : owned_) cudaFree(p);
  }
  // `bytes` of device memory (at least 16), uninitialised; null (and a test failure) if it fails.
  void* alloc(size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 16)), cudaSuccess);
    if (p) owned_.push_back(p);
    return p;
  }
  // A device copy of `bytes` of host memory.
  void* upload(const void* data, size_t bytes) {
    void* p = alloc(bytes);
    if (p) EXPECT_EQ(cudaMemcpy(p, data, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return p;
  }
  template <class V>
  void* upload(const std::vector<V>& host) {
    return upload(host.data(), host.size() * sizeof(V));
  }
  // `bytes` set to 0xFF: as floats, NaN wherever a kernel leaves an element unwritten.
  void* poisoned(size_t bytes) {
    void* p = alloc(bytes);
    if (p) EXPECT_EQ(cudaMemset(p, 0xFF, bytes), cudaSuccess);
    return p;
  }

 private:
  std::vector<void*> owned_;
};

}  // namespace nvdet::testing
