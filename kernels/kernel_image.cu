// The kernel-image probe (kernel_image.cuh): one thread writes the __CUDA_ARCH__ it was compiled
// for and whether the arch-specific sm_90a feature set was on. No reduction, no invariance
// argument needed: it computes no data.
#include "kernels/kernel_image.cuh"

namespace nvdet::kernels {
namespace {

__global__ void kernel_image_probe(int* out) {
#if defined(__CUDA_ARCH__)
  out[0] = __CUDA_ARCH__ / 10;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  out[1] = 1;
#else
  out[1] = 0;
#endif
#endif
}

KernelImage probe() {
  KernelImage img;
  int device = 0;
  cudaDeviceProp props{};
  if ((img.error = cudaGetDevice(&device)) != cudaSuccess ||
      (img.error = cudaGetDeviceProperties(&props, device)) != cudaSuccess) {
    cudaGetLastError();
    return img;
  }
  img.device_arch = props.major * 10 + props.minor;
  cudaFuncAttributes attr{};
  if ((img.error = cudaFuncGetAttributes(&attr, kernel_image_probe)) != cudaSuccess) {
    cudaGetLastError();
    return img;
  }
  img.binary_version = attr.binaryVersion;
  img.ptx_version = attr.ptxVersion;
  int* d = nullptr;
  int h[2] = {0, 0};
  if ((img.error = cudaMalloc(&d, sizeof(h))) != cudaSuccess) {
    cudaGetLastError();
    return img;
  }
  kernel_image_probe<<<1, 1>>>(d);
  img.error = cudaGetLastError();
  if (img.error == cudaSuccess) img.error = cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (img.error != cudaSuccess) {
    cudaGetLastError();
    return img;
  }
  img.code_arch = h[0];
  img.arch_specific = h[1] != 0;
  img.ok = true;
  return img;
}

}  // namespace

const KernelImage& kernel_image() {
  static const KernelImage image = probe();
  return image;
}

}  // namespace nvdet::kernels
