#pragma once
// Device code of the split-KV attention partial kernel (included by attention_decode.cu and
// attention_prefill.cu, which fix the tile size: 128 keys for decode, 64 for prefill).
//
// One CTA computes one work item (a query row over KV positions [kv_start, kv_end)) for one KV
// head and ALL the query heads that share it (GQA group), so each K and V vector is read once.
// The item's range is walked in tiles of kTile keys aligned to kv_start; per tile:
//  0. the tile's page-table lookups go to shared memory (no arithmetic, only addresses);
//  1. scores: warp w owns keys [w*kTile/W, (w+1)*kTile/W) of the tile; a key's head vector is
//     spread over kLpk = head_dim/8 lanes, 8 elements (one 16-byte load) per lane. Each lane
//     forms its 8-term partial dot product in element order (fma from 0), the kLpk lanes are
//     added by an xor butterfly (offsets kLpk/2..1), and the sum is multiplied by `scale`.
//  2. per head: tile max m_t (exact; order-free), m' = max(m, m_t), p = exp(s - m'); the tile's
//     sum of p is per-lane sequential over keys lane, lane+32, ... then a butterfly;
//     alpha = exp(m - m'), l = l*alpha + sum, m = m'.
//  3. values: each lane scales its accumulators by alpha and adds p * v for the keys it owns
//     (the same key ownership as in 1), in key order, fma per element.
// At the end the kWarps * 32/kLpk key groups' accumulators are added in group order 0, 1, ...
// into shared memory, and (m, l, o) are written as the item's partial state.
// Every choice above depends only on the template constants and the item's range, never on the
// grid (how many items, sequences or heads are launched), so an item's partial state is a pure
// function of its query, its KV range and the tile size. Invariance of a whole op therefore
// reduces to the op's plan producing the same items for a request in every batch.
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/dtype_dispatch.cuh"
#include "kernels/fixed_order_reduce.cuh"
#include "kernels/split_kv_attention.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {

// Up to 4 query heads per KV head: registers capped so that 4 CTAs of 4 warps share an SM.
template <class T, int kHD, int kG, int kTile, int kWarps, int kUnroll>
__global__ void __launch_bounds__(kWarps * 32, (kG <= 4 && kWarps == 4) ? 4 : 1)
    partial_kernel(const SplitKvAttentionParams a) {
  constexpr int kN = kVecElems<T>;          // elements per 16-byte load
  constexpr int kLpk = kHD / kN;            // lanes per key
  static_assert(kLpk >= 1 && kLpk <= 32 && 32 % kLpk == 0, "head_dim must be 8..256");
  constexpr int kKps = 32 / kLpk;           // keys per warp step
  constexpr int kKeysPerWarp = kTile / kWarps;
  constexpr int kSteps = kKeysPerWarp / kKps;
  constexpr int kU = kUnroll < kSteps ? kUnroll : kSteps;
  static_assert(kKeysPerWarp % kKps == 0 && kSteps % kU == 0, "tile shape");
  constexpr int kGroups = kWarps * kKps;    // key groups whose accumulators are added at the end

  __shared__ float s_p[kG][kTile];
  __shared__ float s_o[kG][kHD];
  __shared__ float s_m[kG], s_l[kG], s_alpha[kG];

  const AttentionWorkItem item = a.items[blockIdx.x];
  const int kvh = blockIdx.y;
  const int group = a.num_heads / a.num_kv_heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int sub = lane / kLpk, dl = lane % kLpk;

  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);

  float qf[kG][kN];
#pragma unroll
  for (int g = 0; g < kG; ++g) {
    if (g < group) {
      const int64_t off =
          (static_cast<int64_t>(item.q_row) * a.num_heads + kvh * group + g) * kHD + dl * kN;
      widen(load_packed<T, kN>(q + off), qf[g]);
    } else {
#pragma unroll
      for (int e = 0; e < kN; ++e) qf[g][e] = 0.0f;
    }
  }
  if (threadIdx.x < kG) {
    s_m[threadIdx.x] = -INFINITY;
    s_l[threadIdx.x] = 0.0f;
  }
  float acc[kG][kN];
#pragma unroll
  for (int g = 0; g < kG; ++g)
#pragma unroll
    for (int e = 0; e < kN; ++e) acc[g][e] = 0.0f;

  const int32_t* pages = a.page_table + static_cast<int64_t>(item.seq) * a.max_pages_per_seq;
  const int64_t token_stride = static_cast<int64_t>(a.num_kv_heads) * kHD;
  const int64_t head_off = static_cast<int64_t>(kvh) * kHD + dl * kN;
  const int page_size = a.page_size;
  const bool pow2 = (page_size & (page_size - 1)) == 0;
  const int shift = __ffs(page_size) - 1;
  __shared__ int64_t s_row[kTile];  // element offset of each key of the tile (head 0, dim 0)

  const float scale = a.scale;
  for (int t0 = item.kv_start; t0 < item.kv_end; t0 += kTile) {
    const int n = min(kTile, item.kv_end - t0);
    // 0. the tile's page-table lookups, once, so the K and V loads below depend on nothing else
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const int t = t0 + i;
      const int page_index = pow2 ? (t >> shift) : (t / page_size);
      const int slot = pow2 ? (t & (page_size - 1)) : (t - page_index * page_size);
      s_row[i] = (static_cast<int64_t>(pages[page_index]) * page_size + slot) * token_stride;
    }
    __syncthreads();
    // 1. scores
    for (int s0 = 0; s0 < kSteps; s0 += kU) {
      if (warp * kKeysPerWarp + s0 * kKps >= n) break;  // warp-uniform
      uint4 raw[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int key = warp * kKeysPerWarp + (s0 + u) * kKps + sub;
        raw[u] = key < n ? load_raw16_stream(k + s_row[key] + head_off) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int key = warp * kKeysPerWarp + (s0 + u) * kKps + sub;
        float kf[kN];
        unpack16<T>(raw[u], kf);
#pragma unroll
        for (int g = 0; g < kG; ++g) {
          float d = 0.0f;
#pragma unroll
          for (int e = 0; e < kN; ++e) d = fmaf(qf[g][e], kf[e], d);
          d = butterfly_sum<kLpk>(d);
          if (dl == 0 && key < n) s_p[g][key] = __fmul_rn(d, scale);
        }
      }
    }
    // The first V loads go out now, so they are in flight during the softmax step.
    uint4 vraw[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int key = warp * kKeysPerWarp + u * kKps + sub;
      vraw[u] = key < n ? load_raw16_stream(v + s_row[key] + head_off) : make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
    // 2. softmax statistics per head
    for (int g = warp; g < kG; g += kWarps) {
      float mx = -INFINITY;
      for (int i = lane; i < n; i += 32) mx = fmaxf(mx, s_p[g][i]);
      mx = butterfly_max(mx);
      const float m_old = s_m[g];
      const float m_new = fmaxf(m_old, mx);
      float sum = 0.0f;
      for (int i = lane; i < n; i += 32) {
        const float p = expf(s_p[g][i] - m_new);
        s_p[g][i] = p;
        sum = __fadd_rn(sum, p);
      }
      sum = butterfly_sum(sum);
      __syncwarp();
      if (lane == 0) {
        const float alpha = exp_diff(m_old, m_new);
        s_alpha[g] = alpha;
        s_l[g] = __fadd_rn(__fmul_rn(s_l[g], alpha), sum);
        s_m[g] = m_new;
      }
    }
    __syncthreads();
    // 3. values
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      const float alpha = s_alpha[g];
#pragma unroll
      for (int e = 0; e < kN; ++e) acc[g][e] = __fmul_rn(acc[g][e], alpha);
    }
    for (int s0 = 0; s0 < kSteps; s0 += kU) {
      if (warp * kKeysPerWarp + s0 * kKps >= n) break;
      if (s0 > 0) {
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int key = warp * kKeysPerWarp + (s0 + u) * kKps + sub;
          vraw[u] = key < n ? load_raw16_stream(v + s_row[key] + head_off) : make_uint4(0, 0, 0, 0);
        }
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int key = warp * kKeysPerWarp + (s0 + u) * kKps + sub;
        if (key < n) {
          float vf[kN];
          unpack16<T>(vraw[u], vf);
#pragma unroll
          for (int g = 0; g < kG; ++g) {
            const float p = s_p[g][key];
#pragma unroll
            for (int e = 0; e < kN; ++e) acc[g][e] = fmaf(p, vf[e], acc[g][e]);
          }
        }
      }
    }
    __syncthreads();
  }

  // Add the key groups' accumulators in group order.
  const int my_group = warp * kKps + sub;
  for (int grp = 0; grp < kGroups; ++grp) {
    if (my_group == grp) {
#pragma unroll
      for (int g = 0; g < kG; ++g)
#pragma unroll
        for (int e = 0; e < kN; ++e) {
          float* dst = &s_o[g][dl * kN + e];
          *dst = grp == 0 ? acc[g][e] : __fadd_rn(*dst, acc[g][e]);
        }
    }
    __syncthreads();
  }
  const int64_t first = static_cast<int64_t>(blockIdx.x) * a.num_heads + kvh * group;
  float* part_o = a.workspace + first * kHD;
  for (int i = threadIdx.x; i < group * kHD; i += blockDim.x) part_o[i] = s_o[i / kHD][i % kHD];
  float* part_ml = a.workspace + static_cast<int64_t>(a.num_items) * a.num_heads * kHD + 2 * first;
  if (threadIdx.x < group) {
    part_ml[2 * threadIdx.x] = s_m[threadIdx.x];
    part_ml[2 * threadIdx.x + 1] = s_l[threadIdx.x];
  }
}

// Launches the partial kernel for the params' dtype, head_dim and group, then the merge.
template <int kTile, int kWarps, int kUnroll>
cudaError_t launch_split_kv_attention(const SplitKvAttentionParams& p, cudaStream_t stream) {
  if (p.num_items <= 0 || p.num_rows <= 0) return cudaSuccess;
  if (p.num_kv_heads <= 0 || p.num_heads % p.num_kv_heads != 0) return cudaErrorInvalidValue;
  const int group = p.num_heads / p.num_kv_heads;
  if (!split_kv_attention_supported(p.dtype, p.head_dim, group)) return cudaErrorInvalidValue;
  if (p.num_kv_heads > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(p.num_items), static_cast<unsigned>(p.num_kv_heads));
  auto by_group = [&](auto tag, auto hd_const) -> cudaError_t {
    using T = typename decltype(tag)::type;
    constexpr int kHD = decltype(hd_const)::value;
    if (group == 1) partial_kernel<T, kHD, 1, kTile, kWarps, kUnroll><<<grid, kWarps * 32, 0, stream>>>(p);
    else if (group == 2) partial_kernel<T, kHD, 2, kTile, kWarps, kUnroll><<<grid, kWarps * 32, 0, stream>>>(p);
    else if (group <= 4) partial_kernel<T, kHD, 4, kTile, kWarps, kUnroll><<<grid, kWarps * 32, 0, stream>>>(p);
    else partial_kernel<T, kHD, 8, kTile, kWarps, kUnroll><<<grid, kWarps * 32, 0, stream>>>(p);
    return cudaGetLastError();
  };
  auto by_head_dim = [&](auto tag) -> cudaError_t {
    switch (p.head_dim) {
      case 64: return by_group(tag, std::integral_constant<int, 64>{});
      case 128: return by_group(tag, std::integral_constant<int, 128>{});
      case 256: return by_group(tag, std::integral_constant<int, 256>{});
    }
    return cudaErrorInvalidValue;
  };
  cudaError_t st = cudaErrorInvalidValue;
  if (p.dtype == ElemType::kBF16) st = by_head_dim(TypeTag<__nv_bfloat16>{});
  if (p.dtype == ElemType::kFP16) st = by_head_dim(TypeTag<__half>{});
  if (st != cudaSuccess) return st;
  return launch_attention_merge(p, stream);
}

}  // namespace nvdet::kernels
