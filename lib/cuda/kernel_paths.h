#pragma once
// What code the GPU backends run on the current device, for `nvdet info`: the kernel image the
// CUDA runtime picked (machine code or JIT-compiled PTX) and the path each GPU backend takes.
// CUDA builds only (NVDET_WITH_CUDA).
#include <string>
#include <utility>
#include <vector>

namespace nvdet::cuda {

// "sm_90a machine code", "compute_90 PTX, JIT-compiled by the driver for sm_100", or why none
// runs. `architectures` is the build's CMAKE_CUDA_ARCHITECTURES, comma separated.
std::string kernel_image_description(const std::string& architectures);

// (backend, its path on this device) for every GPU backend.
std::vector<std::pair<std::string, std::string>> gpu_backend_paths();

}  // namespace nvdet::cuda
