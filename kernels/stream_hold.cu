// See stream_hold.cuh. One thread of one CTA: the hold occupies a sliver of one SM, and only
// until the host releases it, before the first timed event.
#include "kernels/stream_hold.cuh"

namespace nvdet::kernels {
namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stream_hold_kernel(const volatile unsigned* release, unsigned generation,
                                   unsigned long long timeout_ns, unsigned* timed_out) {
  const unsigned long long start = global_ns();
  // Signed distance, so that a generation counter that wrapped still compares as reached.
  while (static_cast<int>(*release - generation) < 0) {
    if (global_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(500);  // a read of host memory crosses the bus: no need to ask more often
  }
}

}  // namespace

cudaError_t launch_stream_hold(const volatile unsigned* release, unsigned generation,
                               unsigned long long timeout_ns, unsigned* timed_out,
                               cudaStream_t stream) {
  if (release == nullptr || timed_out == nullptr) return cudaErrorInvalidValue;
  stream_hold_kernel<<<1, 1, 0, stream>>>(release, generation, timeout_ns, timed_out);
  return cudaGetLastError();
}

}  // namespace nvdet::kernels
