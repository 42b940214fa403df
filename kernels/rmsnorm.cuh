#pragma once
// RMSNorm launchers: out[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight[:].
// See rmsnorm.cu for the invariance argument and the reduction orders.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

// The invariant kernel's block size: a function of the row length and dtype only.
int rmsnorm_invariant_block_threads(int64_t d, ElemType dtype);

// One block of `block_threads` threads (a multiple of 32, at most 1024) per row; no workspace.
// The invariant backend passes rmsnorm_invariant_block_threads(d); the vendor policy its own.
cudaError_t launch_rmsnorm_rows(ElemType dtype, ElemType out_dtype, const void* x,
                                const void* weight, void* out, int64_t rows, int64_t d, float eps,
                                int block_threads, cudaStream_t stream);

// Vendor-style split rows: each row is cut into `row_splits` parts whose sums of squares are
// written by separate blocks into `workspace` and then added in part order by a second kernel.
size_t rmsnorm_split_workspace_bytes(int64_t rows, int row_splits);
cudaError_t launch_rmsnorm_split_rows(ElemType dtype, ElemType out_dtype, const void* x,
                                      const void* weight, void* out, int64_t rows, int64_t d,
                                      float eps, int row_splits, int block_threads,
                                      float* workspace, cudaStream_t stream);

}  // namespace nvdet::kernels
