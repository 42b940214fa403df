#pragma once
// A probe of the tensor cores behind the attention kernel's swapped form (attention_tc.cuh). A
// decode block holds one query token's GQA heads (4 of Llama-3-8B's 32), so each m64n128k16 of
// the 64-row form (S = Q K^T and O += P V, 16 a key tile) computes 64 rows of which 4 are used.
// The swapped form puts the keys (S^T = K Q^T) and head_dim (O^T += V^T P^T) on wgmma's 64-row
// side and the block's 8 rows on its N side (m64n8k16: an eighth of the work). It keeps the
// plan's bits only if every element comes out of the swapped instructions with the bits of the
// unswapped ones; this probe computes one tile both ways from the shared-memory layouts the
// kernel uses, for a test to compare instruction against instruction (the plan tests compare the
// kernel's two forms end to end).
//
//   q [64][hd], k [128][hd], v [128][hd] (dtype T), p [64][128] (fp32, rounded to T as the kernel
//   rounds P), o_init [64][hd] (fp32, the running O a tile starts from), hd = 128;
//   s_std [64][128]: Q K^T, the kernel's form (wgmma m64n128k16, Q as A, K as B, k steps of 16
//     dims ascending from 0);
//   s_swap [8][128]: rows 0-7 of it from (K Q^T)^T (m64n8k16, K as A in two 64-key halves, the
//     first 8 rows of Q as B);
//   o_std [64][hd]: o_init + P V, the kernel's form (m64n128k16, P from registers, V as B
//     transposed, k steps of 16 keys ascending);
//   o_swap [8][hd]: rows 0-7 of it from (V^T P^T)^T + o_init (m64n8k16, V as A transposed in two
//     64-dim halves, P's first 8 rows as B from shared memory).
// One CTA of 128 threads; cudaErrorNotSupported where the sm_90a code is absent.
#include <cuda_runtime.h>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

inline constexpr int kSwapProbeHeadDim = 128;
inline constexpr int kSwapProbeKeys = 128;
inline constexpr int kSwapProbeRows = 64;
inline constexpr int kSwapProbeSwappedRows = 8;

bool attention_tc_swap_probe_available();

cudaError_t attention_tc_swap_probe(ElemType dtype, const void* q, const void* k, const void* v,
                                    const float* p, const float* o_init, float* s_std,
                                    float* s_swap, float* o_std, float* o_swap,
                                    cudaStream_t stream);

}  // namespace nvdet::kernels
