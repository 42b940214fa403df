#pragma once
// What code the GPU backends run on the current device, for `nvdet info`: the kernel image the
// CUDA runtime picked (machine code or JIT-compiled PTX). Each backend's path is its registry
// record's kernel_path (cuda-invariant's: invariant_kernel_path(), lib/cuda/cuda_factories.h).
// CUDA builds only (NVDET_WITH_CUDA).
#include <string>

namespace nvdet::cuda {

// "sm_90a machine code", "compute_90 PTX, JIT-compiled by the driver for sm_100", or why none
// runs. `architectures` is the build's CMAKE_CUDA_ARCHITECTURES, comma separated.
std::string kernel_image_description(const std::string& architectures);


}  // namespace nvdet::cuda
