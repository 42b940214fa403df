// sm_90a path of the invariant GEMM (wgmma + TMA). Not available in this build yet: the planner
// falls back to the mma.sync path, which is invariant on its own.
#include "kernels/gemm_invariant_device.cuh"

namespace nvdet_kernels {

bool wgmma_available() { return false; }

cudaError_t launch_wgmma(const GemmKernelParams&, bool, cudaStream_t) {
  return cudaErrorNotSupported;
}

}  // namespace nvdet_kernels
