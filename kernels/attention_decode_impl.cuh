#pragma once
// Device code of the decode partial kernel (see attention_decode.cu for the invariance argument).
//
// One CTA computes one work item (a query row over KV positions [kv_start, kv_end)) for one KV
// head and all the query heads of its GQA group, so each K and V vector is read once. There is no
// block-wide step inside the KV loop: each warp runs its own online softmax over its own keys and
// the warps' states are merged once at the end, so warps stream K and V independently.
//
// Reduction order inside an item (W warps, U keys per lane per step, kLpk = head_dim/8 lanes per
// key, kKps = 32/kLpk keys per warp instruction; R = kKps*U keys per warp step):
//  - warp w owns the steps starting at kv_start + w*R, + W*R, + 2*W*R, ... (in that order); in a
//    step, lane sub-group j (lanes j*kLpk .. j*kLpk+kLpk-1) owns keys base + u*kKps + j, u < U;
//  - score: 8-term partial dot product per lane in element order (fma from 0), xor butterfly over
//    the kLpk lanes, times scale;
//  - per step and head: step max over the R keys (exact), m' = max(m, step max),
//    alpha = exp(m - m'), p = exp(s - m'); the step's sum of p is the lane's keys in u order, then
//    an xor butterfly over the sub-groups; l = l*alpha + sum; acc = acc*alpha, then
//    acc += p*v per key in u order (fma per element), each sub-group its own accumulators;
//  - after the loop: sub-group accumulators added by an xor butterfly (offsets 16..kLpk), then the
//    W warp states merged in warp order 0..W-1: M = max m_w, L = sum l_w*exp(m_w - M),
//    O = sum o_w*exp(m_w - M) (sequential; fma for O).
// All of it is fixed by the template constants and the item's range, never by the grid.
#include <cuda_runtime.h>

#include <cmath>

#include "kernels/dtype_dispatch.cuh"
#include "kernels/fixed_order_reduce.cuh"
#include "kernels/split_kv_attention.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {
namespace decode {

// Sum / max over the lanes that share a dl (lane % kLpk): xor offsets 16, 8, ..., kLpk.
template <int kLpk>
__device__ __forceinline__ float across_subgroups_sum(float v) {
#pragma unroll
  for (int off = 16; off >= kLpk; off >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
template <int kLpk>
__device__ __forceinline__ float across_subgroups_max(float v) {
#pragma unroll
  for (int off = 16; off >= kLpk; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

template <class T, int kHD, int kG, int kWarps, int kU>
__global__ void __launch_bounds__(kWarps * 32)
    partial_kernel(const SplitKvAttentionParams a) {
  constexpr int kN = kVecElems<T>;
  constexpr int kLpk = kHD / kN;
  static_assert(kLpk >= 1 && kLpk <= 32 && 32 % kLpk == 0, "head_dim must be 8..256");
  constexpr int kKps = 32 / kLpk;
  constexpr int kStepKeys = kKps * kU;
  constexpr int kRoundKeys = kStepKeys * kWarps;

  __shared__ float s_o[kWarps][kG][kHD];
  __shared__ float s_m[kWarps][kG], s_l[kWarps][kG];

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
  float m[kG], l[kG], acc[kG][kN];
#pragma unroll
  for (int g = 0; g < kG; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < kN; ++e) acc[g][e] = 0.0f;
  }

  const int32_t* pages = a.page_table + static_cast<int64_t>(item.seq) * a.max_pages_per_seq;
  const int64_t token_stride = static_cast<int64_t>(a.num_kv_heads) * kHD;
  const int64_t head_off = static_cast<int64_t>(kvh) * kHD + dl * kN;
  const int page_size = a.page_size;
  const bool pow2 = (page_size & (page_size - 1)) == 0;
  const int shift = __ffs(page_size) - 1;
  const float scale = a.scale;

  for (int base = item.kv_start + warp * kStepKeys; base < item.kv_end; base += kRoundKeys) {
    uint4 kr[kU], vr[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int t = base + u * kKps + sub;
      if (t < item.kv_end) {
        const int page_index = pow2 ? (t >> shift) : (t / page_size);
        const int slot = pow2 ? (t & (page_size - 1)) : (t - page_index * page_size);
        const int64_t off =
            (static_cast<int64_t>(pages[page_index]) * page_size + slot) * token_stride + head_off;
        kr[u] = load_raw16_stream(k + off);
        vr[u] = load_raw16_stream(v + off);
      } else {
        kr[u] = make_uint4(0, 0, 0, 0);
        vr[u] = make_uint4(0, 0, 0, 0);
      }
    }
    float s[kU][kG];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const bool valid = base + u * kKps + sub < item.kv_end;
      float kf[kN];
      unpack16<T>(kr[u], kf);
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        float d = 0.0f;
#pragma unroll
        for (int e = 0; e < kN; ++e) d = fmaf(qf[g][e], kf[e], d);
        d = butterfly_sum<kLpk>(d);
        s[u][g] = valid ? __fmul_rn(d, scale) : -INFINITY;
      }
    }
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      float mx = s[0][g];
#pragma unroll
      for (int u = 1; u < kU; ++u) mx = fmaxf(mx, s[u][g]);
      mx = across_subgroups_max<kLpk>(mx);
      const float m_new = fmaxf(m[g], mx);  // finite: the step's first key is always valid
      const float alpha = exp_diff(m[g], m_new);
      float ps = 0.0f;
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        s[u][g] = exp_diff(s[u][g], m_new);
        ps = __fadd_rn(ps, s[u][g]);
      }
      ps = across_subgroups_sum<kLpk>(ps);
      l[g] = __fadd_rn(__fmul_rn(l[g], alpha), ps);
      m[g] = m_new;
#pragma unroll
      for (int e = 0; e < kN; ++e) acc[g][e] = __fmul_rn(acc[g][e], alpha);
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      float vf[kN];
      unpack16<T>(vr[u], vf);
#pragma unroll
      for (int g = 0; g < kG; ++g)
#pragma unroll
        for (int e = 0; e < kN; ++e) acc[g][e] = fmaf(s[u][g], vf[e], acc[g][e]);
    }
  }

  // Sub-group accumulators of this warp, then the warps in order.
#pragma unroll
  for (int g = 0; g < kG; ++g)
#pragma unroll
    for (int e = 0; e < kN; ++e) acc[g][e] = across_subgroups_sum<kLpk>(acc[g][e]);
  if (sub == 0) {
#pragma unroll
    for (int g = 0; g < kG; ++g)
#pragma unroll
      for (int e = 0; e < kN; ++e) s_o[warp][g][dl * kN + e] = acc[g][e];
  }
  if (lane < kG) {
    // m and l are the same on every lane of the warp; lane g publishes head g's.
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      if (g == lane) {
        s_m[warp][g] = m[g];
        s_l[warp][g] = l[g];
      }
    }
  }
  __syncthreads();

  const int64_t first = static_cast<int64_t>(blockIdx.x) * a.num_heads + kvh * group;
  float* part_o = a.workspace + first * kHD;
  float* part_ml = a.workspace + static_cast<int64_t>(a.num_items) * a.num_heads * kHD + 2 * first;
  for (int i = threadIdx.x; i < group * kHD; i += blockDim.x) {
    const int g = i / kHD, d = i % kHD;
    float mm = s_m[0][g];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) mm = fmaxf(mm, s_m[w][g]);
    float o = 0.0f, ll = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float c = exp_diff(s_m[w][g], mm);
      o = fmaf(s_o[w][g][d], c, o);
      ll = __fadd_rn(ll, __fmul_rn(s_l[w][g], c));
    }
    part_o[i] = o;
    if (d == 0) {
      part_ml[2 * g] = mm;
      part_ml[2 * g + 1] = ll;
    }
  }
}

template <int kWarps, int kU>
cudaError_t launch(const SplitKvAttentionParams& p, cudaStream_t stream) {
  if (p.num_items <= 0 || p.num_rows <= 0) return cudaSuccess;
  if (p.num_kv_heads <= 0 || p.num_heads % p.num_kv_heads != 0) return cudaErrorInvalidValue;
  const int group = p.num_heads / p.num_kv_heads;
  if (!split_kv_attention_supported(p.dtype, p.head_dim, group)) return cudaErrorInvalidValue;
  if (p.num_kv_heads > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(p.num_items), static_cast<unsigned>(p.num_kv_heads));
  auto by_group = [&](auto tag, auto hd_const) -> cudaError_t {
    using T = typename decltype(tag)::type;
    constexpr int kHD = decltype(hd_const)::value;
    if (group == 1) partial_kernel<T, kHD, 1, kWarps, kU><<<grid, kWarps * 32, 0, stream>>>(p);
    else if (group == 2) partial_kernel<T, kHD, 2, kWarps, kU><<<grid, kWarps * 32, 0, stream>>>(p);
    else if (group <= 4) partial_kernel<T, kHD, 4, kWarps, kU><<<grid, kWarps * 32, 0, stream>>>(p);
    else partial_kernel<T, kHD, 8, kWarps, kU><<<grid, kWarps * 32, 0, stream>>>(p);
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
  if (p.dtype == DType::kBF16) st = by_head_dim(TypeTag<__nv_bfloat16>{});
  if (p.dtype == DType::kFP16) st = by_head_dim(TypeTag<__half>{});
  if (st != cudaSuccess) return st;
  return launch_attention_merge(p, stream);
}

}  // namespace decode
}  // namespace nvdet::kernels
