#pragma once
// Device-side pieces shared by the invariant GEMM paths: the parameter block, the fixed
// arithmetic steps the paths share (chunk accumulation and the epilogue), tile ordering,
// and the per-path launchers the dispatcher (gemm_invariant.cu) calls.
//
// The arithmetic that makes the paths invariant lives here on purpose: chunk_accumulate() and
// finish_element() are the only places where partials meet, so the split-chunks reduction kernel
// and the in-CTA epilogue cannot drift apart.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/gemm_grouped_tiles.cuh"
#include "kernels/gemm_invariant.cuh"

namespace nvdet::kernels {

struct GemmKernelParams {
  const void* a;
  const void* w;
  const void* bias;
  void* out;
  float* ws;  // split-chunks: partials [chunks][m][n]
  int m, n, k;
  long long lda, ldw, ldo;
  int in_type, out_type;
  int tile_k;           // k elements per pipeline stage
  int tiles_per_chunk;  // KC / tile_k
  int k_tiles;          // ceil(K / tile_k): stage tiles over the whole K
  int chunks;
  int m_tiles, n_tiles;
  int vec16;  // rows and bases 16-byte aligned: cp.async 16 B, else element loads
  int pair_out;  // out and ldo allow storing two neighbouring columns at once
  int a_box_rows;  // wgmma path: rows of A per TMA load
  // wgmma path: A's columns in memory where fewer than k (a single row read in place while the
  // kernel walks a staged k: TMA zero-fills the columns past them); 0: k.
  int a_cols;
  int staged_out;  // wgmma path: the epilogue stages tiles in shared memory for TMA stores
  // wgmma path: ring stages of several k tiles load an operand with one 3-d copy where its map
  // allows (encode_swizzled_stage_map): bit 0 the map_a side, bit 1 the map_w side. The host asks
  // with any non-zero value, and launch_config keeps the bits whose maps it made.
  int stage_boxes;
  // Grouped (wgmma path, groups > 0): group g's rows [group_rows[g], group_rows[g + 1]) of A and
  // out take W rows [g * n, (g + 1) * n) of a stacked W; group_rows is a device array of
  // groups + 1 entries that the kernel reads (the host need not know the counts); m bounds them.
  const int* group_rows;
  int groups;
};


// Running sum over chunks: acc = acc + p, rounded to nearest. __fadd_rn is never contracted
// or reassociated by the compiler, so both schedules perform exactly this operation.
__device__ __forceinline__ float chunk_accumulate(float acc, float part) {
  return __fadd_rn(acc, part);
}

__device__ __forceinline__ float load_as_float(const void* p, long long i, int type) {
  if (type == static_cast<int>(GemmType::kBF16))
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  if (type == static_cast<int>(GemmType::kFP16))
    return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

__device__ __forceinline__ void store_from_float(void* p, long long i, float v, int type) {
  if (type == static_cast<int>(GemmType::kBF16)) {
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  } else if (type == static_cast<int>(GemmType::kFP16)) {
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  } else {
    static_cast<float*>(p)[i] = v;
  }
}

// Two neighbouring output columns in one store (the wgmma epilogues' pair path).
__device__ __forceinline__ void store2(__nv_bfloat16* o, float v0, float v1) {
  *reinterpret_cast<__nv_bfloat162*>(o) =
      __halves2bfloat162(__float2bfloat16_rn(v0), __float2bfloat16_rn(v1));
}
__device__ __forceinline__ void store2(__half* o, float v0, float v1) {
  *reinterpret_cast<__half2*>(o) = __halves2half2(__float2half_rn(v0), __float2half_rn(v1));
}
__device__ __forceinline__ void store2(float* o, float v0, float v1) {
  *reinterpret_cast<float2*>(o) = make_float2(v0, v1);
}

// The last step of every element, in every path and schedule: + bias (when present), then one
// rounding to the output type.
__device__ __forceinline__ void finish_element(const GemmKernelParams& p, int row, int col,
                                               float acc) {
  if (p.bias) acc = __fadd_rn(acc, load_as_float(p.bias, col, p.in_type));
  store_from_float(p.out, static_cast<long long>(row) * p.ldo + col, acc, p.out_type);
}

// The output tile (tm, tn) and the K tiles [kt_begin, kt_end) that one CTA computes. Split-chunks
// schedule: blockIdx.x is the tile, blockIdx.y the K chunk. In-CTA schedule: grouped tile order,
// the whole of K. Shared by every kernel path so that they all cut the work the same way.
struct CtaWork {
  int tm, tn, chunk, kt_begin, kt_end;
};
template <bool SPLIT>
__device__ __forceinline__ CtaWork cta_work(const GemmKernelParams& p) {
  CtaWork w{0, 0, 0, 0, p.k_tiles};
  if constexpr (SPLIT) {
    w.tm = blockIdx.x / p.n_tiles;
    w.tn = blockIdx.x % p.n_tiles;
    w.chunk = blockIdx.y;
    w.kt_begin = w.chunk * p.tiles_per_chunk;
    w.kt_end = min(w.kt_begin + p.tiles_per_chunk, p.k_tiles);
  } else {
    grouped_tile(blockIdx.x, p.m_tiles, p.n_tiles, 8, &w.tm, &w.tn);
  }
  return w;
}

// Split-chunks second pass: out = finish(((0 + p_0) + p_1) + ...).
cudaError_t launch_chunk_reduce(const GemmKernelParams& p, cudaStream_t stream);

// dst[r, c] = src[r, c] for c < k, 0 for k <= c < dst_ld (16-bit elements): staging of operands
// TMA cannot address. A copy: no arithmetic.
cudaError_t launch_stage_rows(const void* src, long long src_ld, int rows, int k, void* dst,
                              int dst_ld, cudaStream_t stream);

// Per-path launchers (each for one schedule); `tile_m` picks the CTA tile's M extent.
cudaError_t launch_mma_sync(const GemmKernelParams& p, bool split, int tile_m,
                            cudaStream_t stream);
cudaError_t launch_ffma(const GemmKernelParams& p, bool split, cudaStream_t stream);
// Persistent wgmma kernel with kGemmWgmmaConfigs[config] and `ctas` CTAs.
cudaError_t launch_wgmma(const GemmKernelParams& p, int config, int ctas, cudaStream_t stream);
// The grouped form (p.groups > 0, p.group_rows set): any configuration.
cudaError_t launch_wgmma_grouped(const GemmKernelParams& p, int config, int ctas,
                                 cudaStream_t stream);
// True when this binary holds sm_90a code for the wgmma kernels and the current device runs it.
bool wgmma_available();

}  // namespace nvdet::kernels
