#pragma once
// log-softmax launchers: out[r, :] = x[r, :] - max - log(sum(exp(x[r, :] - max))).
// See log_softmax.cu for the invariance argument and the reduction orders.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

// The invariant kernel's block size: a function of the row length and dtype only.
int log_softmax_invariant_block_threads(int64_t v, ElemType dtype);

// Dynamic shared memory worth giving the rows kernel on the current device to stage a row
// between its two passes: the SM's shared memory divided among the blocks of `block_threads`
// that fit on it, capped by the row's size; 0 when the row fits in registers (or on error).
// Staging changes only where the second pass reads from, never a result bit.
size_t log_softmax_stage_bytes(ElemType dtype, ElemType out_dtype, int64_t v, int block_threads);

// One block of `block_threads` threads (a multiple of 32, at most 1024) per row; no workspace.
// `stage_bytes` of dynamic shared memory (0: none) keep the row's head for the output pass.
cudaError_t launch_log_softmax_rows(ElemType dtype, ElemType out_dtype, const void* x, void* out,
                                    int64_t rows, int64_t v, int block_threads,
                                    size_t stage_bytes, cudaStream_t stream);

// Vendor-style split rows: `row_splits` blocks per row each compute (max, sum exp) of one part
// into `workspace`; a second kernel merges the parts in part order and writes the output.
size_t log_softmax_split_workspace_bytes(int64_t rows, int row_splits);
cudaError_t launch_log_softmax_split_rows(ElemType dtype, ElemType out_dtype, const void* x,
                                          void* out, int64_t rows, int64_t v, int row_splits,
                                          int block_threads, float* workspace,
                                          cudaStream_t stream);

}  // namespace nvdet::kernels
