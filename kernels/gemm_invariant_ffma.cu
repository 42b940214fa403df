// fp32-input path of the invariant GEMM: plain FFMA on a shared-memory tiled kernel (no TF32,
// so results stay exact-fp32 products; speed is secondary here).
//
// Invariance argument: each output element is owned by one thread. For each chunk c of K (KC
// fixed for fp32), that thread starts p = 0 and applies p = fmaf(a[k], w[k], p) for k in
// increasing order over the chunk, k past K reading zeros (fmaf(0, 0, p) == p for p != -0, and
// the zero tail depends only on K). The CTA's M extent and the row's place in it never change
// that sequence. Partials meet only through chunk_accumulate() in CTA or the chunk-ordered
// reduction kernel (split-chunks), which perform the same fp32 adds.
//
// Reduction order of one element: p_c = fma(a[k_last], w[k_last], ... fma(a[k0], w[k0], 0));
// out = round(((0 + p_0) + p_1) + ... + p_{C-1} + bias).
#include "kernels/gemm_invariant_device.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16;
constexpr int kThreads = 256;  // 16 x 16 threads, 4 x 4 outputs each (strided by 16)

template <bool SPLIT>
__global__ void __launch_bounds__(kThreads) ffma_gemm_kernel(const GemmKernelParams p) {
  __shared__ float as[kBK][kBM + 1];
  __shared__ float ws[kBK][kBN + 1];
  const float* a = static_cast<const float*>(p.a);
  const float* w = static_cast<const float*>(p.w);

  const CtaWork work = cta_work<SPLIT>(p);
  const int tm = work.tm, tn = work.tn, chunk = work.chunk;
  const int kt_begin = work.kt_begin, kt_end = work.kt_end;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;

  float part[4][4], acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) part[i][j] = acc[i][j] = 0.0f;

  for (int kt = kt_begin; kt < kt_end; ++kt) {
    const int k0 = kt * kBK;
    // 64 x 16 elements of each operand, 4 per thread; zeros past M, N and K.
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int idx = threadIdx.x + e * kThreads;
      const int r = idx / kBK, kk = idx % kBK;
      const int ga = tm * kBM + r, gw = tn * kBN + r, gk = k0 + kk;
      as[kk][r] = (ga < p.m && gk < p.k) ? a[static_cast<long long>(ga) * p.lda + gk] : 0.0f;
      ws[kk][r] = (gw < p.n && gk < p.k) ? w[static_cast<long long>(gw) * p.ldw + gk] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float av[4], wv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) wv[j] = ws[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) part[i][j] = __fmaf_rn(av[i], wv[j], part[i][j]);
    }
    __syncthreads();
    if constexpr (!SPLIT) {
      if ((kt + 1) % p.tiles_per_chunk == 0 || kt + 1 == kt_end) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            acc[i][j] = chunk_accumulate(acc[i][j], part[i][j]);
            part[i][j] = 0.0f;
          }
      }
    }
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = tm * kBM + ty + 16 * i, col = tn * kBN + tx + 16 * j;
      if (row >= p.m || col >= p.n) continue;
      if constexpr (SPLIT) {
        p.ws[(static_cast<long long>(chunk) * p.m + row) * p.n + col] = part[i][j];
      } else {
        finish_element(p, row, col, acc[i][j]);
      }
    }
  }
}

}  // namespace

cudaError_t launch_ffma(const GemmKernelParams& p, bool split, cudaStream_t stream) {
  if (p.tile_k != kBK) return cudaErrorInvalidValue;
  GemmKernelParams q = p;
  q.m_tiles = (p.m + kBM - 1) / kBM;
  q.n_tiles = (p.n + kBN - 1) / kBN;
  const dim3 grid(q.m_tiles * q.n_tiles, split ? p.chunks : 1);
  if (split) {
    ffma_gemm_kernel<true><<<grid, kThreads, 0, stream>>>(q);
  } else {
    ffma_gemm_kernel<false><<<grid, kThreads, 0, stream>>>(q);
  }
  return cudaGetLastError();
}

}  // namespace nvdet::kernels
