// The bandwidth ceiling that memory-bound kernels are judged against: a device-to-device copy
// large enough to stream through HBM rather than L2, timed like any op (CUDA events, median).
#include <cuda_runtime.h>

#include "lib/cuda/cuda_ops.h"

namespace nvdet::cuda {

namespace {
// 256 MiB each way: four times an H200's 60 MiB L2, so the copy measures HBM, not cache.
constexpr size_t kCopyBytes = size_t{256} << 20;
}  // namespace

double measure_copy_bandwidth_gbps(DeviceContext& ctx, const TimingOptions& opts) {
  PreparedCall call;
  call.owned.emplace_back(kCopyBytes);
  call.owned.emplace_back(kCopyBytes);
  void* dst = call.owned[0].get();
  const void* src = call.owned[1].get();
  check(cudaMemsetAsync(call.owned[1].get(), 0x5a, kCopyBytes, ctx.stream()), "cudaMemsetAsync");
  call.launch = [=](cudaStream_t s) {
    return cudaMemcpyAsync(dst, src, kCopyBytes, cudaMemcpyDeviceToDevice, s);
  };
  // The run's warm-up, repetitions and launch mode; never an L2 flush (the copy is 4x the L2).
  TimingOptions copy_opts = opts;
  copy_opts.flush_l2 = false;
  const Timing t = time_prepared(ctx, call, copy_opts);
  return 2.0 * static_cast<double>(kCopyBytes) / (t.median_us * 1e-6) / 1e9;  // read + write
}

}  // namespace nvdet::cuda
