#pragma once
// Owning handles for cuBLASLt's descriptors, shared by the GEMM paths that call cublasLtMatmul
// (gemm_ops.cpp: the 16/32-bit GEMM; gemm_fp8_ops.cpp: the FP8 GEMM).
#include <cublasLt.h>

#include <cstdint>
#include <memory>

#include "lib/cuda/device_context.h"

namespace nvdet::cuda {

struct LtDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
// Shared: a launch closure holds its descriptors for as long as the prepared call lives.
using LtDesc = std::shared_ptr<cublasLtMatmulDescOpaque_t>;
using LtLayout = std::shared_ptr<cublasLtMatrixLayoutOpaque_t>;
using LtPref = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDeleter>;

// A column-major rows x cols layout of `type` with leading dimension `ld`.
inline LtLayout make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t l = nullptr;
  check(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                   static_cast<uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  return LtLayout(l, LtDeleter{});
}

// A descriptor attribute, set or failed with the attribute's name.
template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value,
              const char* what) {
  check(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)), what);
}

// PreparedCall speaks cudaError_t; the closest codes keep a cuBLAS failure's nature visible.
inline cudaError_t lt_launch_status(cublasStatus_t st) {
  if (st == CUBLAS_STATUS_SUCCESS) return cudaSuccess;
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) return cudaErrorNotSupported;
  if (st == CUBLAS_STATUS_ALLOC_FAILED) return cudaErrorMemoryAllocation;
  return cudaErrorUnknown;
}

// The heuristic's choice, in every cuBLASLt GEMM's notes: algorithm, tile, stages, split-K and
// its reduction scheme, swizzling and workspace (what explains a divergence).
void describe_lt_algo(const cublasLtMatmulHeuristicResult_t& h, RunNotes& notes);

}  // namespace nvdet::cuda
