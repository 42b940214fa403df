#pragma once
// The element types the kernels understand. Kernel-side on purpose: kernels/ includes nothing
// from lib/, so the host glue (lib/cuda/elem_type.h) converts nvdet::DType into these at the
// launcher boundary. The values are the same as nvdet::DType's order, but nothing relies on it.
namespace nvdet::kernels {

enum class ElemType : int { kBF16 = 0, kFP16 = 1, kFP32 = 2 };

}  // namespace nvdet::kernels
