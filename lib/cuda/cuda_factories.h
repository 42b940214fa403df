#pragma once
// How the GPU backends are created: the factories the registry (cuda_registrations.cpp) names.
// Free of CUDA headers, so that the registry compiles in every build; the factories themselves
// exist only in CUDA builds.
#include <memory>

#include "lib/backend/backend.h"

namespace nvdet::cuda {

enum class CudaFlavor {
  kCublas,           // GEMM: cuBLASLt default heuristic (as PyTorch calls it); other ops: vendor policy
  kCublasLtNoSplit,  // GEMM: cuBLASLt with reduction scheme NONE; other ops: vendor policy
  kInvariant,        // this project's batch-invariant kernels for every op
  kVendorPolicy,     // attention/norm kernels whose splits follow the batch; GEMM: as kCublas
  kCublasLtSmallWorkspace,  // GEMM: cuBLASLt default heuristic with a 1 KiB workspace (vLLM's
                            // batch-invariant setting); other ops: vendor policy
};

std::unique_ptr<Backend> make_cuda_backend(const BackendInfo& info, CudaFlavor flavor);
std::unique_ptr<Backend> make_portable_backend(const BackendInfo& info);
// cublas-grouped: the MoE block through cublasGemmGroupedBatchedEx (grouped_moe_backend.cpp).
std::unique_ptr<Backend> make_grouped_moe_backend(const BackendInfo& info);

}  // namespace nvdet::cuda
