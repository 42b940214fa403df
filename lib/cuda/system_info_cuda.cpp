// CUDA build: driver, runtime, cuBLAS and every visible GPU.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "lib/core/host_info.h"
#include "lib/core/system_info.h"
#include "lib/cuda/device_context.h"

namespace nvdet {
namespace {
std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

SystemInfo collect_system_info() {
  SystemInfo s;
  s.nvdet_version = NVDET_VERSION;
  s.host = host_cpu_description();
  s.cuda_built = true;
  s.compiled_architectures = NVDET_CUDA_ARCHITECTURES;
  s.cuda_fp_flags = NVDET_CUDA_FP_FLAGS;
  s.cxx_fp_flags = NVDET_CXX_FP_FLAGS;
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) s.cuda_runtime_version = cuda_version_string(v);
  v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) {
    // The kernel module's version names the driver; the CUDA version it supports follows.
    const std::string module = nvidia_driver_version();
    s.driver_version = module.empty() ? "CUDA " + cuda_version_string(v)
                                      : module + " (CUDA " + cuda_version_string(v) + ")";
  }
  const size_t cublas = cublasGetCudartVersion();  // runtime cuBLAS was built against
  (void)cublas;
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    s.cublas_version =
        std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  }
  int count = 0;
  const cudaError_t st = cudaGetDeviceCount(&count);
  if (st != cudaSuccess || count == 0) {
    cudaGetLastError();
    s.device_error = st == cudaSuccess ? "no CUDA device found" : cuda::no_device_reason(st);
    return s;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    GpuInfo g;
    g.index = i;
    g.name = p.name;
    g.sm_count = p.multiProcessorCount;
    g.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
    g.memory_bytes = p.totalGlobalMem;
    g.l2_bytes = static_cast<size_t>(p.l2CacheSize);
    s.gpus.push_back(g);
  }
  return s;
}

std::optional<uint64_t> device_free_bytes() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return std::nullopt;
  }
  size_t free = 0, total = 0;
  if (cudaSetDevice(0) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  return static_cast<uint64_t>(free);
}

}  // namespace nvdet
