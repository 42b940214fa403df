#include "lib/cuda/kernel_paths.h"

#include <absl/strings/str_split.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kernels/attention_tc.cuh"
#include "kernels/gemm_invariant.cuh"
#include "kernels/kernel_image.cuh"
#include "lib/cuda/cuda_factories.h"

namespace nvdet::cuda {
namespace {

// True when `architectures` holds machine code for sm_<arch> (an entry "90", "90-real",
// "90a" or "90a-real"; "-virtual" entries are PTX only). CMake's "native" and "all" sets are
// taken to hold it.
bool has_machine_code(const std::string& architectures, int arch) {
  const std::string number = std::to_string(arch);
  for (const std::string& entry : std::vector<std::string>(absl::StrSplit(architectures, ','))) {
    if (entry.ends_with("-virtual")) continue;
    if (entry == "native" || entry == "all" || entry == "all-major") return true;  // CMake's sets
    const std::string base = entry.substr(0, entry.find('-'));
    if (base == number || base == number + "a" || base == number + "f") return true;
  }
  return false;
}

}  // namespace

std::string kernel_image_description(const std::string& architectures) {
  const kernels::KernelImage& img = kernels::kernel_image();
  if (!img.ok) {
    return std::string("no kernel image runs on this device (") + cudaGetErrorString(img.error) +
           ")";
  }
  const std::string device = "sm_" + std::to_string(img.device_arch);
  if (img.binary_version != img.code_arch || !has_machine_code(architectures, img.code_arch)) {
    return "compute_" + std::to_string(img.code_arch) + (img.arch_specific ? "a" : "") +
           " PTX, JIT-compiled by the driver for " + device;
  }
  std::string s =
      "sm_" + std::to_string(img.code_arch) + (img.arch_specific ? "a" : "") + " machine code";
  if (img.device_arch != img.code_arch) s += " on an " + device + " device";
  return s;
}

std::string invariant_kernel_path() {
  int device = 0;
  cudaDeviceProp props{};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&props, device) != cudaSuccess) {
    cudaGetLastError();
    return "unknown (no CUDA device answers)";
  }
  // The invariant GEMM's own choice for a 16-byte-aligned bf16 problem (pointers are only
  // inspected for alignment, never read).
  nvdet::kernels::GemmProblem prob;
  prob.a = prob.w = reinterpret_cast<const void*>(uintptr_t{256});
  prob.m = 1;
  prob.n = prob.k = 4096;
  prob.lda = prob.ldw = prob.ldo = 4096;
  nvdet::kernels::GemmDevice dev;
  dev.cc_major = props.major;
  dev.cc_minor = props.minor;
  dev.sm_count = props.multiProcessorCount;
  const std::string invariant_gemm =
      nvdet::kernels::gemm_path_name(nvdet::kernels::gemm_invariant_plan(prob, dev).path);
  const std::string attention = nvdet::kernels::attention_tc_available()
                                    ? "tensor cores (wgmma)"
                                    : "CUDA cores (no sm_90a image for this device)";
  return "GEMM bf16/fp16: " + invariant_gemm +
         ", fp32: " + nvdet::kernels::gemm_path_name(nvdet::kernels::GemmPath::kFfma) +
         "; attention: " + attention +
         ", one split plan for decode and prefill; other ops: " + kCudaCoresPath;
}

}  // namespace nvdet::cuda
