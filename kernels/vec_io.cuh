#pragma once
// 16-byte vector loads and packed stores for bf16 / fp16 / fp32, converting to and from fp32.
// Conversions are exact on the way in and round to nearest even on the way out, as the host's
// lib/core/dtype.h does.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace nvdet::kernels {

template <class T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

// Elements of T per 16-byte vector.
template <class T>
constexpr int kVecElems = 16 / static_cast<int>(sizeof(T));

// Loads one 16-byte vector (read-only path) and widens it to floats.
template <class T>
__device__ __forceinline__ uint4 load_raw16(const T* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}
// Streaming variant for data read exactly once (KV cache): do not keep it in L1.
template <class T>
__device__ __forceinline__ uint4 load_raw16_stream(const T* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

template <class T>
__device__ __forceinline__ void unpack16(uint4 raw, float (&f)[kVecElems<T>]) {
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVecElems<T>; ++i) f[i] = to_float<T>(e[i]);
}

// Loads N consecutive elements (N == kVecElems<T>: one 16-byte load; N == 1: one scalar).
template <class T, int N>
struct alignas(sizeof(T) * N) PackedIn {
  T v[N];
};
template <class T, int N>
__device__ __forceinline__ PackedIn<T, N> load_packed(const T* p) {
  return *reinterpret_cast<const PackedIn<T, N>*>(p);
}
template <class T, int N>
__device__ __forceinline__ void widen(const PackedIn<T, N>& in, float (&f)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) f[i] = to_float<T>(in.v[i]);
}

// Stores N floats as N elements of TO at p (p aligned to N * sizeof(TO)).
template <class TO, int N>
struct alignas(sizeof(TO) * N) PackedOut {
  TO v[N];
};
template <class TO, int N>
__device__ __forceinline__ void store_packed(TO* p, const float (&f)[N]) {
  PackedOut<TO, N> o;
#pragma unroll
  for (int i = 0; i < N; ++i) o.v[i] = from_float<TO>(f[i]);
  *reinterpret_cast<PackedOut<TO, N>*>(p) = o;
}

// store_packed with the streaming (evict-first) cache hint, for outputs nobody reads back in the
// kernel: they then do not push the kernel's own inputs out of L2. Vectors of 16-byte multiples
// use st.global.cs; smaller ones are stored plainly.
template <class TO, int N>
__device__ __forceinline__ void store_packed_streaming(TO* p, const float (&f)[N]) {
  PackedOut<TO, N> o;
#pragma unroll
  for (int i = 0; i < N; ++i) o.v[i] = from_float<TO>(f[i]);
  if constexpr (sizeof(o) % 16 == 0) {
    const uint4* src = reinterpret_cast<const uint4*>(&o);
    uint4* dst = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(o) / 16); ++i) __stcs(dst + i, src[i]);
  } else {
    *reinterpret_cast<PackedOut<TO, N>*>(p) = o;
  }
}

// Two neighbouring values each rounded to a 16-bit T as from_float rounds them, packed in the
// order they lie in memory (lo at the lower address): one 32-bit word for a shared-memory store
// or a wgmma A operand.
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __halves2bfloat162(__float2bfloat16_rn(lo), __float2bfloat16_rn(hi));
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
  const __half2 v = __halves2half2(__float2half_rn(lo), __float2half_rn(hi));
  return *reinterpret_cast<const uint32_t*>(&v);
}

}  // namespace nvdet::kernels
