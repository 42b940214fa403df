#pragma once
// Turns a runtime ElemType (kernels/element_type.cuh) into the CUDA element type for a templated
// launcher.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

template <class T>
struct TypeTag {
  using type = T;
};

template <class F>
cudaError_t with_elem_type(ElemType t, F&& f) {
  switch (t) {
    case ElemType::kBF16: return f(TypeTag<__nv_bfloat16>{});
    case ElemType::kFP16: return f(TypeTag<__half>{});
    case ElemType::kFP32: return f(TypeTag<float>{});
  }
  return cudaErrorInvalidValue;
}

}  // namespace nvdet::kernels
