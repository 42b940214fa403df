// The swapped-operand probe of attention_tc_swap_probe.cuh: one tile of S = Q K^T and of
// O = o_init + P V, each computed in the tensor-core attention kernel's form (attention_tc.cu: the
// same shared-memory layouts, descriptors, instructions and k order) and in the swapped form a
// decode kernel would use (the keys or head_dim on wgmma's 64-row side, 8 query rows on its N
// side, m64n8k16). Nothing else: the test compares the two bit for bit.
#include "kernels/attention_tc_swap_probe.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/attention_tc_copy.cuh"
#include "kernels/attention_tc_wgmma.cuh"
#include "kernels/gemm_wgmma_instr.cuh"
#include "kernels/kernel_image.cuh"
#include "kernels/sm90_async.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kHd = kSwapProbeHeadDim, kKeys = kSwapProbeKeys, kRows = kSwapProbeRows;
constexpr int kNarrow = kSwapProbeSwappedRows;
// Shared memory, each part 1024-aligned (128-byte swizzle atoms): Q [64][hd], K and V [128][hd],
// then P's first 8 rows [8][128] in the input type (the swapped P V's B operand).
constexpr uint32_t kQOff = 0;
constexpr uint32_t kKOff = kQOff + kRows * kHd * 2;
constexpr uint32_t kVOff = kKOff + kKeys * kHd * 2;
constexpr uint32_t kPOff = kVOff + kKeys * kHd * 2;
constexpr uint32_t kSmemBytes = kPOff + kNarrow * kKeys * 2;

// Calls f(i, row, col) for each register i of this thread's part of a wgmma m64nN accumulator
// (register 4 jb + 2 h + e: row row0 + 8 h of the 64, column 8 jb + 2 quad + e of the N).
template <int N, class F>
__device__ __forceinline__ void for_each_fragment(int row0, int quad, F&& f) {
#pragma unroll
  for (int jb = 0; jb < N / 8; ++jb) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int e = 0; e < 2; ++e) f(4 * jb + 2 * h + e, row0 + 8 * h, 8 * jb + 2 * quad + e);
    }
  }
}

// A [rows][hd] tile of T from global memory into the kernel's swizzled layout.
template <class T>
__device__ void load_tile(const T* src, int rows, unsigned char* smem, uint32_t off) {
  constexpr int kChunks = kHd / 8;
  for (int i = threadIdx.x; i < rows * kChunks; i += blockDim.x) {
    const int r = i / kChunks, c = i % kChunks;
    const uint4 v = *reinterpret_cast<const uint4*>(src + r * kHd + c * 8);
    *reinterpret_cast<uint4*>(smem + off + tc_swizzled_offset(r, c, rows)) = v;
  }
}

template <class T>
__global__ void __launch_bounds__(128, 1)
    swap_probe_kernel(const T* q, const T* k, const T* v, const float* p, const float* o_init,
                      float* s_std, float* s_swap, float* o_std, float* o_swap) {
#ifdef NVDET_SM90A_DEVICE
  extern __shared__ __align__(1024) unsigned char smem[];
  const uint32_t base = smem_addr(smem);
  if ((base & 1023u) != 0) __trap();
  load_tile(q, kRows, smem, kQOff);
  load_tile(k, kKeys, smem, kKOff);
  load_tile(v, kKeys, smem, kVOff);
  // P's first 8 rows in T, rounded as the kernel's pack2 rounds P, K-major [8][128] swizzled.
  for (int i = threadIdx.x; i < kNarrow * (kKeys / 8); i += blockDim.x) {
    const int r = i / (kKeys / 8), c = i % (kKeys / 8);
    uint32_t w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      w[j] = pack2<T>(p[r * kKeys + 8 * c + 2 * j], p[r * kKeys + 8 * c + 2 * j + 1]);
    }
    *reinterpret_cast<uint4*>(smem + kPOff + tc_swizzled_offset(r, c, kNarrow)) =
        make_uint4(w[0], w[1], w[2], w[3]);
  }
  fence_proxy_async();  // the generic writes above, before wgmma reads them
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, quad = lane & 3;
  const int row0 = warp * 16 + lane / 4;  // the accumulator fragment's first row

  // ---- S = Q K^T as the kernel computes it.
  {
    float s[kKeys / 2];
    zero_accumulators(s);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kHd / 16; ++kk) {
      const uint64_t dq = smem_desc(base + kQOff + (kk / 4) * (kRows * 128) + (kk % 4) * 32);
      const uint64_t dk = smem_desc(base + kKOff + (kk / 4) * (kKeys * 128) + (kk % 4) * 32);
      Wgmma<kKeys, T>::mma(s, dq, dk);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(s);
    for_each_fragment<kKeys>(row0, quad,
                             [&](int i, int r, int key) { s_std[r * kKeys + key] = s[i]; });
  }
  // ---- S^T = K Q^T: the keys on the 64-row side, Q's first 8 rows on the N side.
#pragma unroll
  for (int half = 0; half < kKeys / 64; ++half) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kHd / 16; ++kk) {
      const uint64_t dk = smem_desc(base + kKOff + half * 64 * 128 + (kk / 4) * (kKeys * 128) +
                                    (kk % 4) * 32);
      const uint64_t dq = smem_desc(base + kQOff + (kk / 4) * (kRows * 128) + (kk % 4) * 32);
      WgmmaN8<T, false>::mma(acc, dk, dq);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(acc);
    // The keys are the fragment's rows, the query rows its columns.
    for_each_fragment<kNarrow>(row0, quad, [&](int i, int key, int r) {
      s_swap[r * kKeys + half * 64 + key] = acc[i];
    });
  }
  // ---- O = o_init + P V as the kernel computes it (P from registers in the S fragment order).
  {
    float o[kHd / 2];
    for_each_fragment<kHd>(row0, quad, [&](int i, int r, int d) { o[i] = o_init[r * kHd + d]; });
    float ps[kKeys / 2];
    for_each_fragment<kKeys>(row0, quad,
                             [&](int i, int r, int key) { ps[i] = p[r * kKeys + key]; });
    uint32_t pa[kKeys / 16][4];
    tc_pack_p<T, kKeys>(ps, pa);
    fence_operands(o);
    wgmma_fence();
#pragma unroll
    for (int kc = 0; kc < kKeys / 16; ++kc) {
      const uint64_t dv = smem_desc_sw128(base + kVOff + kc * 16 * 128, kKeys * 128, 1024);
      WgmmaRegA<kHd, T>::mma(o, pa[kc], dv);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(o);
    for_each_fragment<kHd>(row0, quad, [&](int i, int r, int d) { o_std[r * kHd + d] = o[i]; });
  }
  // ---- O^T = o_init^T + V^T P^T: head_dim on the 64-row side (V read transposed), P's first 8
  // rows on the N side.
#pragma unroll
  for (int half = 0; half < kHd / 64; ++half) {
    float acc[4];
    // head_dim is the fragment's rows, the query rows its columns.
    for_each_fragment<kNarrow>(row0, quad, [&](int i, int d, int r) {
      acc[i] = o_init[r * kHd + half * 64 + d];
    });
    fence_operands(acc);
    wgmma_fence();
#pragma unroll
    for (int kc = 0; kc < kKeys / 16; ++kc) {
      const uint64_t dv =
          smem_desc_sw128(base + kVOff + half * (kKeys * 128) + kc * 16 * 128, kKeys * 128, 1024);
      const uint64_t dp = smem_desc(base + kPOff + (kc / 4) * (kNarrow * 128) + (kc % 4) * 32);
      WgmmaN8<T, true>::mma(acc, dv, dp);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(acc);
    for_each_fragment<kNarrow>(row0, quad, [&](int i, int d, int r) {
      o_swap[r * kHd + half * 64 + d] = acc[i];
    });
  }
#else
  (void)q, (void)k, (void)v, (void)p, (void)o_init;
  (void)s_std, (void)s_swap, (void)o_std, (void)o_swap;
  __trap();  // never launched: attention_tc_swap_probe_available() is false without sm_90a code
#endif
}

template <class T>
cudaError_t launch_probe(const void* q, const void* k, const void* v, const float* p,
                         const float* o_init, float* s_std, float* s_swap, float* o_std,
                         float* o_swap, cudaStream_t stream) {
  static const cudaError_t attr = cudaFuncSetAttribute(
      swap_probe_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  if (attr != cudaSuccess) return attr;
  swap_probe_kernel<T><<<1, 128, kSmemBytes, stream>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), p, o_init,
      s_std, s_swap, o_std, o_swap);
  return cudaGetLastError();
}

}  // namespace

bool attention_tc_swap_probe_available() {
  static const bool available = [] {
    const KernelImage& img = kernel_image();
    if (!img.ok || !img.arch_specific || img.device_arch != 90) return false;
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, swap_probe_kernel<__nv_bfloat16>) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return attr.binaryVersion == 90;
  }();
  return available;
}

cudaError_t attention_tc_swap_probe(ElemType dtype, const void* q, const void* k, const void* v,
                                    const float* p, const float* o_init, float* s_std,
                                    float* s_swap, float* o_std, float* o_swap,
                                    cudaStream_t stream) {
  if (!attention_tc_swap_probe_available()) return cudaErrorNotSupported;
  if (dtype == ElemType::kBF16) {
    return launch_probe<__nv_bfloat16>(q, k, v, p, o_init, s_std, s_swap, o_std, o_swap, stream);
  }
  if (dtype == ElemType::kFP16) {
    return launch_probe<__half>(q, k, v, p, o_init, s_std, s_swap, o_std, o_swap, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace nvdet::kernels
