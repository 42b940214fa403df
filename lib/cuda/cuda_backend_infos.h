#pragma once
// Names and descriptions of the CUDA backends, shared by the real registrations and the
// CPU-only build (which lists them but cannot create them).
#include <vector>

#include "lib/backend/backend.h"

namespace nvdet {

inline std::vector<BackendInfo> cuda_backend_infos() {
  const std::map<std::string, std::string> vendor_policy_stands_for = {
      {"rmsnorm", "a serving-stack RMSNorm whose block size and split follow the token count"},
      {"log_softmax", "a log-softmax that splits each row across blocks for small batches"},
      {"attention_decode",
       "FlashDecoding's split-KV heuristic (splits from batch, heads and SM count) with "
       "FlashInfer-style load-balanced split sizes from the batch's KV lengths"},
      {"attention_prefill",
       "chunked-prefill / cascade attention that splits the KV reduction at the prefix and chunk "
       "boundaries and merges the partial states"},
  };
  std::map<std::string, std::string> cublas_stands_for = vendor_policy_stands_for;
  cublas_stands_for["gemm"] = "cuBLASLt default heuristic (what torch.mm calls)";
  std::map<std::string, std::string> nosplit_stands_for = vendor_policy_stands_for;
  nosplit_stands_for["gemm"] =
      "cuBLASLt with CUBLASLT_REDUCTION_SCHEME_NONE (serving stacks' 'deterministic' setting)";
  std::map<std::string, std::string> ws1k_stands_for = vendor_policy_stands_for;
  ws1k_stands_for["gemm"] =
      "cuBLASLt default heuristic limited to a 1 KiB workspace (vLLM batch-invariant mode: "
      "CUBLASLT_WORKSPACE_SIZE=1, which PyTorch reads in KiB)";
  std::map<std::string, std::string> vendor_stands_for = vendor_policy_stands_for;
  vendor_stands_for["gemm"] = cublas_stands_for["gemm"];
  return {
      {"cublas", "cuBLAS/cuBLASLt GEMM with default heuristics; other ops as cuda-vendor-policy",
       true, false, cublas_stands_for},
      {"cublaslt-nosplit",
       "cuBLASLt GEMM restricted to reduction scheme NONE; other ops as cuda-vendor-policy", true,
       false, nosplit_stands_for},
      {"cublaslt-ws1k",
       "cuBLASLt GEMM, default heuristic with a 1 KiB workspace; other ops as cuda-vendor-policy",
       true, false, ws1k_stands_for},
      {"cuda-vendor-policy",
       "attention and norm kernels whose split counts follow the batch, as serving schedulers do",
       true, false, vendor_stands_for},
      {"cuda-invariant", "nvdet's batch-invariant CUDA kernels (fixed reduction plans)", true, true,
       {}},
      {"cuda-portable",
       "IEEE fp32 CUDA-core kernels, bitwise equal to cpu-portable on the CPU and on any GPU", true,
       true, {}},
  };
}

}  // namespace nvdet
