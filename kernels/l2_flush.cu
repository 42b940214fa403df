// See l2_flush.cuh. Each thread reads 16-byte words a grid apart and xors them; the grid fills
// the SMs a few CTAs deep so that the read runs at the memory's rate.
#include "kernels/l2_flush.cuh"

#include <cstdint>

namespace nvdet::kernels {
namespace {

constexpr int kThreads = 512;
constexpr unsigned kNeverFolded = 0x9e3779b9u;  // launch_l2_flush's sink sentinel

__global__ void __launch_bounds__(kThreads) l2_flush_kernel(const uint4* __restrict__ words,
                                                            size_t count, unsigned* sink) {
  unsigned folded = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const uint4 w = words[i];
    folded ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (folded == kNeverFolded) *sink = folded;
}

}  // namespace

cudaError_t launch_l2_flush(const void* buffer, size_t bytes, unsigned* sink, int sm_count,
                            cudaStream_t stream) {
  if (buffer == nullptr || sink == nullptr || bytes % sizeof(uint4) != 0 || sm_count <= 0) {
    return cudaErrorInvalidValue;
  }
  const size_t count = bytes / sizeof(uint4);
  l2_flush_kernel<<<4 * sm_count, kThreads, 0, stream>>>(static_cast<const uint4*>(buffer), count,
                                                         sink);
  return cudaGetLastError();
}

}  // namespace nvdet::kernels
