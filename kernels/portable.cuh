#pragma once
// Launchers of cuda-portable, the GPU half of the portable invariant backends: IEEE fp32 CUDA-core
// arithmetic only (kernels/portable_ops.cuh), so that every output is bitwise equal to
// cpu-portable's and to cuda-portable's on any other GPU. kernels/portable.cu states how each
// kernel maps the fixed reduction orders onto threads.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

using PortableType = ElemType;  // kernels/element_type.cuh

// out[m, n] = a[m, k] · w[n, k]^T (+ bias[n]); row-major, contiguous.
cudaError_t launch_portable_gemm(PortableType in, PortableType out_type, const void* a,
                                 const void* w, const void* bias, void* out, int64_t m, int64_t n,
                                 int64_t k, cudaStream_t stream);

// One warp per row; rows and row lengths below 2^31.
cudaError_t launch_portable_rmsnorm(PortableType in, PortableType out_type, const void* x,
                                    const void* weight, void* out, int64_t rows, int64_t d,
                                    float eps, cudaStream_t stream);
cudaError_t launch_portable_log_softmax(PortableType in, PortableType out_type, const void* x,
                                        void* out, int64_t rows, int64_t v, cudaStream_t stream);

// A paged KV cache on the device (the layout of nvdet::PagedKv).
struct PortableAttention {
  PortableType dtype = PortableType::kBF16, out_type = PortableType::kFP32;
  const void* q = nullptr;  // [rows, heads, head_dim]
  const void* k = nullptr;  // [pages, page_size, kv_heads, head_dim]
  const void* v = nullptr;
  const int32_t* page_table = nullptr;  // [seqs * max_pages_per_seq]
  const int32_t* kv_lens = nullptr;     // [seqs]
  const int32_t* q_start = nullptr;     // prefill: [seqs + 1]
  int32_t max_pages_per_seq = 0, page_size = 0;
  int32_t seqs = 0, rows = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 0.0f;
  void* out = nullptr;  // [rows, heads, head_dim]
};

// Largest head_dim the attention kernels take (q and the accumulator live in shared memory).
inline constexpr int32_t kPortableMaxHeadDim = 1024;

// Decode: splits of `split` KV tokens, each folded by one block into `workspace`, then merged in
// split order. `max_splits` = ceil(max kv_len / split) (at least 1).
size_t portable_decode_workspace_bytes(const PortableAttention& p, int32_t max_splits);
cudaError_t launch_portable_attention_decode(const PortableAttention& p, int32_t split,
                                             int32_t max_splits, float* workspace,
                                             cudaStream_t stream);
// Prefill: one block per (new token, head) at position p, folding the decode plan of
// kv_len = p + 1 (splits of `split` tokens, merged in split order): a token's prefill row equals
// its decode row bit for bit.
cudaError_t launch_portable_attention_prefill(const PortableAttention& p, int32_t split,
                                              cudaStream_t stream);

}  // namespace nvdet::kernels
