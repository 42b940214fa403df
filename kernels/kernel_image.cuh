#pragma once
// Which code the CUDA runtime actually runs for nvdet's kernels on the current device: machine
// code compiled for it, machine code of an older compatible architecture, or PTX that the driver
// JIT-compiled. Every kernel file is built for the same architecture list, so the runtime makes
// the same choice for each of them as for the probe kernel in kernel_image.cu.
#include <cuda_runtime.h>

namespace nvdet::kernels {

struct KernelImage {
  bool ok = false;  // false: the probe could not run (no device, no image for it)
  cudaError_t error = cudaSuccess;
  int device_arch = 0;         // the device, as 10 * major + minor (90 for sm_90)
  int code_arch = 0;           // __CUDA_ARCH__ / 10 of the code that ran (80, 90, ...)
  bool arch_specific = false;  // compiled for an `a` target (sm_90a features: wgmma, setmaxnreg)
  int binary_version = 0;      // cudaFuncAttributes::binaryVersion of the probe
  int ptx_version = 0;         // cudaFuncAttributes::ptxVersion of the probe
};

// Runs a one-thread probe once per process on the current device (cached).
const KernelImage& kernel_image();

}  // namespace nvdet::kernels
