#pragma once
// How the GPU backends are created: the factories the registries (cuda_registrations.cpp, and
// lib/cudnn/cudnn_registration.cpp) name. Free of CUDA headers, so that the registries compile in
// every build; the factories themselves exist only in CUDA builds.
#include <memory>
#include <string>

#include "lib/backend/backend.h"

namespace nvdet::cuda {

enum class CudaFlavor {
  kCublas,  // GEMM: cuBLASLt default heuristic (as PyTorch calls it); other ops: vendor policy
  kCublasLtNoSplit,  // GEMM: cuBLASLt with reduction scheme NONE; other ops: vendor policy
  kInvariant,        // this project's batch-invariant kernels for every op
  kVendorPolicy,     // attention/norm kernels whose splits follow the batch; GEMM: as kCublas
  kCublasLtSmallWorkspace,  // GEMM: cuBLASLt default heuristic with a 1 KiB workspace (vLLM's
                            // batch-invariant setting); other ops: vendor policy
};

// A GPU backend's factory: in a CUDA build the expression, in a CPU-only one a runtime failure
// that says why (the factories are not compiled there). `info` is the record's BackendInfo.
#if NVDET_WITH_CUDA
#define NVDET_GPU_FACTORY(info, ...) [=]() -> std::unique_ptr<Backend> { return __VA_ARGS__; }
#else
#define NVDET_GPU_FACTORY(info, ...)                                       \
  [name = (info).name]() -> std::unique_ptr<Backend> {                     \
    throw_runtime_error("backend '" + name +                               \
                        "' needs a GPU, but this nvdet was built without " \
                        "CUDA (configure with -DNVDET_CUDA=ON)");          \
  }
#endif

// Every GPU backend launches kernels built for compute capability 8.0 and newer (README,
// "Supported GPUs"): "" when device 0 is one, else the clause saying what it is.
std::string needs_sm80(const DeviceFacts& d);

// The ops other than GEMM of every flavor but cuda-portable, in `nvdet info`'s path lines.
inline constexpr const char* kCudaCoresPath = "CUDA cores (fp32 accumulation)";

// cuda-invariant's path on the current device (the invariant GEMM's plan for a bf16 problem),
// for `nvdet info` (lib/cuda/kernel_paths.cpp; CUDA builds only).
std::string invariant_kernel_path();

// cublas's answer to an FP8 scheme (README "FP8"): "" for what cuBLASLt's FP8 GEMM computes
// (e4m3; act_scale static or dynamic_tensor with weight_scale tensor, dynamic_token with channel,
// group_128 with block_128x128, the last promoted only; op gemm and the MoE block's expert
// GEMMs), else the clause saying what it does not compute.
std::string cublas_fp8_refusal(OpKind op, const Fp8Scheme& scheme);

// cuda-invariant's answer to an FP8 scheme: its wgmma e4m3 GEMM (kernels/gemm_fp8.cuh) computes
// op gemm, the MoE block's GEMMs and FP8 checkpoints' GEMMs (on the host engine) for every
// activation and weight scale, promoted or fast (fast only with scales that do not change along
// K); "" then, else the clause saying what not.
std::string invariant_fp8_refusal(OpKind op, const Fp8Scheme& scheme);

std::unique_ptr<Backend> make_cuda_backend(const BackendInfo& info, CudaFlavor flavor);
std::unique_ptr<Backend> make_portable_backend(const BackendInfo& info);
// cublas-grouped: the MoE block through cublasGemmGroupedBatchedEx (grouped_moe_backend.cpp).
std::unique_ptr<Backend> make_grouped_moe_backend(const BackendInfo& info);

}  // namespace nvdet::cuda
