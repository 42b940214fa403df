#pragma once
// Turns a runtime nvdet::DType into the CUDA element type for a templated launcher.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "lib/core/dtype.h"

namespace nvdet::kernels {

template <class T>
struct TypeTag {
  using type = T;
};

template <class F>
cudaError_t with_elem_type(DType t, F&& f) {
  switch (t) {
    case DType::kBF16: return f(TypeTag<__nv_bfloat16>{});
    case DType::kFP16: return f(TypeTag<__half>{});
    case DType::kFP32: return f(TypeTag<float>{});
  }
  return cudaErrorInvalidValue;
}

}  // namespace nvdet::kernels
