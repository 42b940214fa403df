#pragma once
// The driver's cuTensorMapEncodeTiled, found once through the runtime (no link against libcuda):
// the TMA descriptors of the invariant GEMM and the tensor-core attention. Null when the driver
// does not offer it.
#include <cuda.h>
#include <cudaTypedefs.h>

namespace nvdet::kernels {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder();

}  // namespace nvdet::kernels
