#pragma once
// The decoder's elementwise steps on the device: embedding / row gather, RoPE, the paged KV
// cache write, residual add, SwiGLU, the MoE combine and greedy argmax. See decode_elementwise.cu for why each
// one gives the host's bits (lib/model/host_ops.h computes the same steps on the host).
//
// This header includes nothing from lib/: element types are kernels/element_type.cuh's.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/element_type.cuh"
#include "kernels/fused_moe_combine.cuh"

namespace nvdet::kernels {

// out[i, :] = table[rows[i], :] for i < count; each row is row_bytes bytes (a bit copy).
cudaError_t launch_gather_rows(const void* table, const int32_t* rows, int64_t count,
                               int64_t row_bytes, void* out, cudaStream_t stream);

// Rotate-half RoPE in place over the first rotated_heads heads (Q then K) of each qkv row:
// x0' = x0 * cos - x1 * sin, x1' = x1 * cos + x0 * sin, i < head_dim / 2, with cos/sin given per
// row as [rows, head_dim / 2] fp32 tables (computed on the host, exactly as host_ops does).
cudaError_t launch_rope(ElemType t, void* qkv, int64_t rows, int64_t width, int32_t head_dim,
                        int32_t rotated_heads, const float* cos, const float* sin,
                        cudaStream_t stream);

// For each row r: K columns [q_dim, q_dim + kv_dim) and V columns [q_dim + kv_dim, q_dim +
// 2 kv_dim) of qkv row r are copied to slot slots[r] of the caches ([slots, kv_dim] each).
cudaError_t launch_kv_write(const void* qkv, int64_t rows, int64_t width, int64_t q_dim,
                            int64_t kv_dim, int64_t elem_bytes, const int64_t* slots, void* k,
                            void* v, cudaStream_t stream);

// x[i] = x[i] + y[i], fp32 then rounded to t.
cudaError_t launch_residual_add(ElemType t, void* x, const void* y, int64_t n,
                                cudaStream_t stream);

// out[r, j] = silu(g) * u, g = gate_up[r, j], u = gate_up[r, inter + j], silu(g) = g / (1 +
// exp(-g)) with portable_math.cuh's exp (the host's swiglu uses the same one).
cudaError_t launch_swiglu(ElemType t, const void* gate_up, void* out, int64_t rows,
                          int64_t inter, cudaStream_t stream);

// An MoE layer's combine: out[r, c] = sum over j = 0 .. k-1, in that order, of
// weight[r * k + j] * y[slot[r * k + j], c], accumulated in fp32 from 0 (each product and each
// sum rounded on its own), then rounded once to t; y holds the experts' output rows. The same
// arithmetic as lib/model/moe_combine.h's combine_experts.
// With Qwen2-MoE's shared expert (shared [rows, hidden] of type t, shared_gate [rows] fp32):
// sigmoid(g) = 1 / (1 + exp(-g)) (the portable exp) times shared[r, c] is added after the routed
// sum, before the rounding, as combine_experts adds it.
cudaError_t launch_moe_combine(ElemType t, const void* y, const int32_t* slot, const float* weight,
                               int64_t rows, int64_t k, int64_t hidden, void* out,
                               cudaStream_t stream, const void* shared = nullptr,
                               const float* shared_gate = nullptr);
// The same with y of one type and out of another (op moe: fp32 expert outputs, as
// lib/backend/moe_pipeline.h's combine reads them).
cudaError_t launch_moe_combine_typed(ElemType y_type, ElemType out_type, const void* y,
                                     const int32_t* slot, const float* weight, int64_t rows,
                                     int64_t k, int64_t hidden, void* out, cudaStream_t stream);

// cuda-vendor-policy's fused-MoE plan on the device (lib/cuda/moe_device_ops.cpp): its combine
// (kernels/fused_moe_combine.cuh, each weighted product rounded to act first; k <= 64) and the
// fixed tree that adds a split-K GEMM's fp32 parts (part s at parts + s * stride, elems each,
// count <= 8) before the one rounding to out_type.
cudaError_t launch_fused_moe_combine(ElemType act, ElemType out_type, FusedCombineRule rule,
                                     const float* y, const int32_t* slot, const float* weight,
                                     int64_t rows, int64_t k, int64_t hidden, void* out,
                                     cudaStream_t stream);
// dst[r, c] = src[r * src_ld + c] for c < cols: columns [0, cols) of a row-major matrix of
// 16-bit elements (a K part of a GEMM operand), into a dense [rows, cols].
cudaError_t launch_copy_columns16(const void* src, int64_t src_ld, int64_t rows, int64_t cols,
                                  void* dst, cudaStream_t stream);
cudaError_t launch_sum_k_parts(const float* parts, int count, int64_t elems, int64_t stride,
                               ElemType out_type, void* out, cudaStream_t stream);

// out[r] = index of the largest value of fp32 row r (lowest index on ties, NaN never wins, 0
// when the whole row is NaN), as lib/model/host_ops.h's argmax_row.
cudaError_t launch_argmax_rows(const float* logits, int64_t rows, int64_t cols, int32_t* out,
                               cudaStream_t stream);

}  // namespace nvdet::kernels
