// Portable tensor-core path of the invariant GEMM: mma.sync m16n8k16 (bf16/fp16 in, fp32
// accumulate), ldmatrix from XOR-swizzled shared memory, a cp.async multi-stage pipeline.
//
// Invariance argument: every output element belongs to exactly one m16n8 accumulator fragment of
// one warp. For each chunk c (KC = tiles_per_chunk * 64 elements of K, fixed per type) that
// fragment starts at 0 and receives one mma.sync per 16-wide k step, in increasing k order, the
// k tail past K zero-filled in shared memory. The CTA tile's M extent (16, 64 or 128 rows) only
// changes how many fragments a CTA holds, not the instruction sequence of any fragment, and rows
// beyond M are zero-filled and never stored. Partials meet only through chunk_accumulate() (in
// CTA) or the chunk-ordered reduction kernel (split-chunks), which perform the same fp32 adds.
//
// Reduction order of one element: p_c = mma(... mma(mma(0, k0..k0+15), k0+16..k0+31) ...) over
// the chunk's k steps; out = round(((0 + p_0) + p_1) + ... + p_{C-1} + bias).
#include <cstdint>

#include "kernels/gemm_invariant_device.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kTileK = 64;  // one 128-byte shared-memory row per tile row (bf16/fp16)

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;  // 0: zero-fill, nothing is read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4],
                                          const uint32_t (&b)[2]);
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                         const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4],
                                                  const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Byte offset of 16-byte column group j of tile row r: rows are 128 bytes, groups XOR-swizzled by
// the row so that ldmatrix's 8 rows at one logical group hit 8 distinct bank groups.
__device__ __forceinline__ uint32_t swizzled(int r, int j) {
  return static_cast<uint32_t>(r * 128 + ((j ^ (r & 7)) << 4));
}

// Copies rows [row0, row0 + ROWS) x k [k0, k0 + 64) of a row-major 16-bit matrix into a swizzled
// shared tile, zero-filling rows >= rows_total and k >= k_total.
template <int ROWS, int THREADS>
__device__ __forceinline__ void load_tile(uint32_t dst, const uint16_t* src, long long ld,
                                          int row0, int rows_total, int k0, int k_total,
                                          bool vec16) {
  constexpr int kGroups = ROWS * 8;
  for (int i = threadIdx.x; i < kGroups; i += THREADS) {
    const int r = i >> 3, j = i & 7;
    const int grow = row0 + r, gk = k0 + j * 8;
    const uint32_t d = dst + swizzled(r, j);
    if (vec16) {
      // K is a multiple of 8 here, so a 16-byte group is either wholly inside or wholly past K.
      const bool valid = grow < rows_total && gk < k_total;
      const uint16_t* s = valid ? src + static_cast<long long>(grow) * ld + gk : src;
      cp_async_16(d, s, valid);
    } else {
      uint32_t v[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        uint32_t lo = 0, hi = 0;
        if (grow < rows_total) {
          const uint16_t* s = src + static_cast<long long>(grow) * ld;
          if (gk + 2 * e < k_total) lo = s[gk + 2 * e];
          if (gk + 2 * e + 1 < k_total) hi = s[gk + 2 * e + 1];
        }
        v[e] = lo | (hi << 16);
      }
      asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(d), "r"(v[0]), "r"(v[1]),
                   "r"(v[2]), "r"(v[3]));
    }
  }
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, bool SPLIT, class T>
__global__ void __launch_bounds__(WARPS_M* WARPS_N * 32, 1)
    mma_gemm_kernel(const GemmKernelParams p) {
  constexpr int kThreads = WARPS_M * WARPS_N * 32;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  constexpr int MI = WM / 16, NI = WN / 8;
  static_assert(MI >= 1 && NI >= 2 && NI % 2 == 0, "warp tile must hold m16 x n16 steps");
  constexpr int kABytes = BM * kTileK * 2, kWBytes = BN * kTileK * 2;
  constexpr int kStageBytes = kABytes + kWBytes;

  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t smem_base = smem_addr(smem);

  const CtaWork work = cta_work<SPLIT>(p);
  const int tm = work.tm, tn = work.tn, chunk = work.chunk;
  const int kt_begin = work.kt_begin, kt_end = work.kt_end;
  const int ntiles = kt_end - kt_begin;
  const uint16_t* a = static_cast<const uint16_t*>(p.a);
  const uint16_t* w = static_cast<const uint16_t*>(p.w);
  const bool vec16 = p.vec16 != 0;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;

  auto load_stage = [&](int stage, int kt) {
    const uint32_t sa = smem_base + stage * kStageBytes;
    const int k0 = kt * kTileK;
    load_tile<BM, kThreads>(sa, a, p.lda, tm * BM, p.m, k0, p.k, vec16);
    load_tile<BN, kThreads>(sa + kABytes, w, p.ldw, tn * BN, p.n, k0, p.k, vec16);
  };

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ntiles) load_stage(s, kt_begin + s);
    cp_async_commit();
  }

  float part[MI][NI][4];
  float acc[SPLIT ? 1 : MI][SPLIT ? 1 : NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) part[i][j][e] = 0.0f;
  if constexpr (!SPLIT) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  }

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // stage t landed for every thread; stage t-1 is free for reuse
    {
      const int nt = t + STAGES - 1;
      if (nt < ntiles) load_stage(nt % STAGES, kt_begin + nt);
      cp_async_commit();
    }
    const uint32_t sa = smem_base + (t % STAGES) * kStageBytes;
    const uint32_t sw = sa + kABytes;
#pragma unroll
    for (int kk = 0; kk < kTileK / 16; ++kk) {
      uint32_t af[MI][4], bf[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const int r = wm * WM + mi * 16 + (lane & 15);
        ldmatrix_x4(af[mi], sa + swizzled(r, kk * 2 + (lane >> 4)));
      }
#pragma unroll
      for (int nj = 0; nj < NI / 2; ++nj) {
        const int r = wn * WN + nj * 16 + (lane & 7) + ((lane >> 4) << 3);
        uint32_t q[4];
        ldmatrix_x4(q, sw + swizzled(r, kk * 2 + ((lane >> 3) & 1)));
        bf[2 * nj][0] = q[0];
        bf[2 * nj][1] = q[1];
        bf[2 * nj + 1][0] = q[2];
        bf[2 * nj + 1][1] = q[3];
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) mma_16816<T>(part[mi][ni], af[mi], bf[ni]);
    }
    if constexpr (!SPLIT) {
      const int kt = kt_begin + t;
      if ((kt + 1) % p.tiles_per_chunk == 0 || kt + 1 == kt_end) {  // chunk complete
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
          for (int j = 0; j < NI; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              acc[i][j][e] = chunk_accumulate(acc[i][j][e], part[i][j][e]);
              part[i][j][e] = 0.0f;
            }
      }
    }
  }
  cp_async_wait<0>();

  // Fragment element e of (mi, ni): row lane/4 (+8 for e >= 2), column 2*(lane%4) + (e & 1).
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = tm * BM + wm * WM + mi * 16 + (lane >> 2) + ((e >> 1) << 3);
        const int col = tn * BN + wn * WN + ni * 8 + ((lane & 3) << 1) + (e & 1);
        if (row >= p.m || col >= p.n) continue;
        if constexpr (SPLIT) {
          p.ws[(static_cast<long long>(chunk) * p.m + row) * p.n + col] = part[mi][ni][e];
        } else {
          finish_element(p, row, col, acc[mi][ni][e]);
        }
      }
    }
  }
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int STAGES, bool SPLIT, class T>
cudaError_t launch_config(const GemmKernelParams& p, cudaStream_t stream) {
  constexpr int kSmem = STAGES * (BM + BN) * kTileK * 2;
  auto kernel = mma_gemm_kernel<BM, BN, WARPS_M, WARPS_N, STAGES, SPLIT, T>;
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (attr != cudaSuccess) return attr;
  GemmKernelParams q = p;
  q.m_tiles = (p.m + BM - 1) / BM;
  q.n_tiles = (p.n + BN - 1) / BN;
  const dim3 grid(q.m_tiles * q.n_tiles, SPLIT ? p.chunks : 1);
  kernel<<<grid, WARPS_M * WARPS_N * 32, kSmem, stream>>>(q);
  return cudaGetLastError();
}

template <class T>
cudaError_t launch_typed(const GemmKernelParams& p, bool split, int tile_m, cudaStream_t stream) {
  if (!split) return launch_config<128, 128, 2, 4, 4, false, T>(p, stream);
  if (tile_m == 16) return launch_config<16, 128, 1, 8, 6, true, T>(p, stream);
  return launch_config<64, 128, 2, 4, 4, true, T>(p, stream);
}

}  // namespace

cudaError_t launch_mma_sync(const GemmKernelParams& p, bool split, int tile_m,
                            cudaStream_t stream) {
  if (p.tile_k != kTileK) return cudaErrorInvalidValue;
  if (p.in_type == static_cast<int>(GemmType::kBF16))
    return launch_typed<__nv_bfloat16>(p, split, tile_m, stream);
  if (p.in_type == static_cast<int>(GemmType::kFP16))
    return launch_typed<__half>(p, split, tile_m, stream);
  return cudaErrorInvalidValue;
}

}  // namespace nvdet::kernels
