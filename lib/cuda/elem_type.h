#pragma once
// nvdet's DType as the kernels' ElemType: the one conversion at the launcher boundary
// (kernels/ includes nothing from lib/, so the kernels have their own element type enum).
#include <library_types.h>

#include "kernels/element_type.cuh"
#include "lib/core/dtype.h"

namespace nvdet::cuda {

inline kernels::ElemType elem_type(DType t) {
  switch (t) {
    case DType::kBF16: return kernels::ElemType::kBF16;
    case DType::kFP16: return kernels::ElemType::kFP16;
    case DType::kFP32: return kernels::ElemType::kFP32;
  }
  return kernels::ElemType::kFP32;
}

// The same type as cuBLAS names it (cuBLASLt layouts, the grouped GEMM).
inline cudaDataType_t cuda_data_type(DType t) {
  switch (t) {
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kFP16: return CUDA_R_16F;
    case DType::kFP32: break;
  }
  return CUDA_R_32F;
}

}  // namespace nvdet::cuda
