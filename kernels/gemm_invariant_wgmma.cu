// sm_90a path of the invariant GEMM: wgmma.mma_async m64n128k16 (bf16/fp16 in, fp32 accumulate)
// fed by TMA (cp.async.bulk.tensor, 128-byte swizzle) through an mbarrier pipeline, one producer
// warpgroup and one (split-chunks, 64-row tile) or two (in-CTA, 128-row tile) consumer warpgroups.
//
// Invariance argument: every output element belongs to one accumulator register of one consumer
// warpgroup. For each chunk c (KC = tiles_per_chunk * 64 elements of K, fixed per type) that
// register starts at 0 and receives one wgmma m64n128k16 per 16-wide k step, in increasing k
// order; TMA zero-fills rows past M or N and k past K, identically whatever M is. Both schedules
// issue the same instruction (m64n128k16) with the same k steps; they differ only in how many
// warpgroups a CTA holds and in whether the chunk partials are summed in registers
// (chunk_accumulate) or by the chunk-ordered reduction kernel — the same fp32 adds.
//
// Reduction order of one element: p_c = wgmma(... wgmma(wgmma(0, k0..k0+15), k0+16..k0+31) ...)
// over the chunk's k steps; out = round(((0 + p_0) + p_1) + ... + p_{C-1} + bias).
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>

#include "kernels/gemm_invariant_device.cuh"
#include "kernels/kernel_image.cuh"

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define NVDET_WGMMA_DEVICE 1
#endif

namespace nvdet_kernels {
namespace {

constexpr int kTileN = 128;
constexpr int kTileK = 64;  // 128 bytes: one swizzle atom row
constexpr int kWBytes = kTileN * kTileK * 2;

template <int CONSUMERS, int STAGES>
struct WgmmaShape {
  static constexpr int kTileM = 64 * CONSUMERS;
  static constexpr int kABytes = kTileM * kTileK * 2;
  static constexpr int kStageBytes = kABytes + kWBytes;
  static constexpr int kStages = STAGES;
  static constexpr int kThreads = 128 * (CONSUMERS + 1);
  // Tiles, then the barriers; +1024 so the tiles can be aligned to the 128B-swizzle atom.
  static constexpr int kSmemBytes = kStages * kStageBytes + 2 * kStages * 8 + 1024;
};

#ifdef NVDET_WGMMA_DEVICE

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, "
      "{%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// Shared-memory matrix descriptor: K-major operand in 128-byte-swizzled 8-row atoms (1024 bytes
// apart), starting at `addr` (the atom base plus the k offset within the 128-byte row).
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>(1) << 16;            // leading byte offset (unused when swizzled)
  d |= static_cast<uint64_t>(1024 >> 4) << 32;    // stride byte offset: next 8-row atom
  d |= static_cast<uint64_t>(1) << 62;            // 128-byte swizzle
  return d;
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Pins the accumulator registers in program order around wgmma fences and waits: the compiler
// sees wgmma's outputs as ready at issue, so without this it could read them before the wait.
__device__ __forceinline__ void fence_operands(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

#define NVDET_WGMMA_REGS8(i)                                                          \
  "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]),      \
      "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])

#define NVDET_WGMMA_ASM(TYPE)                                                                   \
  asm volatile(                                                                                 \
      "{\n"                                                                                     \
      ".reg .pred p;\n"                                                                         \
      "setp.ne.b32 p, %66, 0;\n"                                                                \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE                              \
      " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
      "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "   \
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "   \
      "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n"       \
      "}\n"                                                                                     \
      : NVDET_WGMMA_REGS8(0), NVDET_WGMMA_REGS8(8), NVDET_WGMMA_REGS8(16),                      \
        NVDET_WGMMA_REGS8(24), NVDET_WGMMA_REGS8(32), NVDET_WGMMA_REGS8(40),                    \
        NVDET_WGMMA_REGS8(48), NVDET_WGMMA_REGS8(56)                                            \
      : "l"(desc_a), "l"(desc_b), "r"(1))

// d += A[64 x 16] · B[128 x 16]^T, both K-major in shared memory (scale-d is always 1: the
// partial is zeroed by register writes before its chunk, in both schedules).
template <class T>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a,
                                                 uint64_t desc_b);
template <>
__device__ __forceinline__ void wgmma_m64n128k16<__nv_bfloat16>(float (&d)[64], uint64_t desc_a,
                                                                uint64_t desc_b) {
  NVDET_WGMMA_ASM("bf16");
}
template <>
__device__ __forceinline__ void wgmma_m64n128k16<__half>(float (&d)[64], uint64_t desc_a,
                                                         uint64_t desc_b) {
  NVDET_WGMMA_ASM("f16");
}

#endif  // NVDET_WGMMA_DEVICE

template <int CONSUMERS, int STAGES, bool SPLIT, class T>
__global__ void __launch_bounds__(WgmmaShape<CONSUMERS, STAGES>::kThreads, 1)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_w, const GemmKernelParams p) {
#ifdef NVDET_WGMMA_DEVICE
  using S = WgmmaShape<CONSUMERS, STAGES>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t tiles = (raw + 1023) & ~1023u;
  const uint32_t bars = tiles + S::kStages * S::kStageBytes;
  auto full_bar = [&](int s) { return bars + 8 * s; };
  auto empty_bar = [&](int s) { return bars + 8 * (S::kStages + s); };
  auto stage_a = [&](int s) { return tiles + s * S::kStageBytes; };
  auto stage_w = [&](int s) { return tiles + s * S::kStageBytes + S::kABytes; };

  const CtaWork work = cta_work<SPLIT>(p);
  const int tm = work.tm, tn = work.tn, chunk = work.chunk;
  const int kt_begin = work.kt_begin, kt_end = work.kt_end;
  const int ntiles = kt_end - kt_begin;
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < S::kStages; ++s) {
      mbar_init(full_bar(s), 1);
      mbar_init(empty_bar(s), 128 * CONSUMERS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warpgroup == 0) {
    // Producer: one thread streams the A and W tiles of every k tile through the stages.
    if (threadIdx.x == 0) {
      for (int t = 0; t < ntiles; ++t) {
        const int s = t % S::kStages;
        mbar_wait(empty_bar(s), ((t / S::kStages) & 1) ^ 1);
        mbar_expect_tx(full_bar(s), S::kStageBytes);
        const int k0 = (kt_begin + t) * kTileK;
        tma_load_2d(stage_a(s), &map_a, full_bar(s), k0, tm * S::kTileM);
        tma_load_2d(stage_w(s), &map_w, full_bar(s), k0, tn * kTileN);
      }
    }
    return;
  }

  const int wg = warpgroup - 1;  // consumer index: rows [wg * 64, wg * 64 + 64) of the tile
  float part[64];
  float acc[SPLIT ? 1 : 64];
  if constexpr (!SPLIT) {
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
  }

  // One pass per chunk: the partial is zeroed at the top (never conditionally inside the k loop,
  // which would make the compiler copy accumulators while wgmmas are in flight).
  int t = 0;  // k tiles consumed so far: picks the stage and its barrier phase
  for (int kc = kt_begin; kc < kt_end; kc += p.tiles_per_chunk) {
    const int kc_end = min(kc + p.tiles_per_chunk, kt_end);
#pragma unroll
    for (int i = 0; i < 64; ++i) part[i] = 0.0f;
    int pending = -1;  // stage whose wgmmas may still read shared memory
    for (int kt = kc; kt < kc_end; ++kt, ++t) {
      const int s = t % S::kStages;
      mbar_wait(full_bar(s), (t / S::kStages) & 1);
      fence_operands(part);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kTileK / 16; ++kk) {
        const uint64_t da = smem_desc(stage_a(s) + wg * 64 * 128 + kk * 32);
        const uint64_t dw = smem_desc(stage_w(s) + kk * 32);
        wgmma_m64n128k16<T>(part, da, dw);
      }
      wgmma_commit();
      wgmma_wait<1>();  // the previous stage's wgmmas are done with shared memory
      if (pending >= 0) mbar_arrive(empty_bar(pending));
      pending = s;
    }
    wgmma_wait<0>();
    fence_operands(part);
    if (pending >= 0) mbar_arrive(empty_bar(pending));
    if constexpr (!SPLIT) {
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = chunk_accumulate(acc[i], part[i]);
    }
  }

  // Accumulator register 4j + e: row 16 * warp + lane / 4 (+8 for e >= 2),
  // column 8j + 2 * (lane % 4) + (e & 1).
  const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
  const int row_base = tm * S::kTileM + wg * 64 + warp * 16 + (lane >> 2);
  const int col_base = tn * kTileN + ((lane & 3) << 1);
#pragma unroll
  for (int j = 0; j < 16; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = row_base + ((e >> 1) << 3);
      const int col = col_base + 8 * j + (e & 1);
      if (row >= p.m || col >= p.n) continue;
      if constexpr (SPLIT) {
        p.ws[(static_cast<long long>(chunk) * p.m + row) * p.n + col] = part[4 * j + e];
      } else {
        finish_element(p, row, col, acc[4 * j + e]);
      }
    }
  }
#else
  __trap();  // never launched: wgmma_available() is false without sm_90a code
#endif
}

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  }();
  return fn;
}

// A row-major [rows, k] 16-bit matrix as a TMA map with a box of box_rows x 64 elements.
bool make_map(CUtensorMap* map, const void* base, int rows, int k, long long ld, int box_rows,
              CUtensorMapDataType type) {
  auto fn = encode_fn();
  if (!fn) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * 2};
  const cuuint32_t box[2] = {kTileK, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_strides[2] = {1, 1};
  return fn(map, type, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <int CONSUMERS, int STAGES, bool SPLIT, class T>
cudaError_t launch_config(const GemmKernelParams& p, CUtensorMapDataType type,
                          cudaStream_t stream) {
  using S = WgmmaShape<CONSUMERS, STAGES>;
  auto kernel = wgmma_gemm_kernel<CONSUMERS, STAGES, SPLIT, T>;
  static const cudaError_t attr = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes);
  if (attr != cudaSuccess) return attr;
  CUtensorMap map_a, map_w;
  if (!make_map(&map_a, p.a, p.m, p.k, p.lda, S::kTileM, type) ||
      !make_map(&map_w, p.w, p.n, p.k, p.ldw, kTileN, type)) {
    return cudaErrorInvalidValue;
  }
  GemmKernelParams q = p;
  q.m_tiles = (p.m + S::kTileM - 1) / S::kTileM;
  q.n_tiles = (p.n + kTileN - 1) / kTileN;
  const dim3 grid(q.m_tiles * q.n_tiles, SPLIT ? p.chunks : 1);
  kernel<<<grid, S::kThreads, S::kSmemBytes, stream>>>(map_a, map_w, q);
  return cudaGetLastError();
}

// Split-chunks: one consumer warpgroup, 4 stages (two CTAs per SM). In CTA: two consumer
// warpgroups, 5 stages. (On the H200, 7 split stages and 4 or 6 in-CTA stages measured within
// noise of these.) The stage count only changes prefetch depth, never the instruction sequence.
template <class T>
cudaError_t launch_typed(const GemmKernelParams& p, bool split, int stages,
                         CUtensorMapDataType type, cudaStream_t stream) {
  if (split && stages == 4) return launch_config<1, 4, true, T>(p, type, stream);
  if (!split && stages == 5) return launch_config<2, 5, false, T>(p, type, stream);
  return cudaErrorInvalidValue;
}

}  // namespace

bool wgmma_available() {
  static const bool available = [] {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, wgmma_gemm_kernel<2, 5, false, __nv_bfloat16>) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    // A compute_90 PTX image JIT-compiled on sm_90 also reports binaryVersion 90, but its wgmma
    // kernel is the __trap() fallback: require the sm_90a image (kernels/kernel_image.cuh).
    return attr.binaryVersion == 90 && nvdet::kernels::kernel_image().arch_specific &&
           encode_fn() != nullptr;
  }();
  return available;
}

cudaError_t launch_wgmma(const GemmKernelParams& p, bool split, int stages, cudaStream_t stream) {
  if (p.tile_k != kTileK || !p.vec16) return cudaErrorInvalidValue;
  if (p.in_type == static_cast<int>(GemmType::kBF16))
    return launch_typed<__nv_bfloat16>(p, split, stages, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, stream);
  if (p.in_type == static_cast<int>(GemmType::kFP16))
    return launch_typed<__half>(p, split, stages, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, stream);
  return cudaErrorInvalidValue;
}

}  // namespace nvdet_kernels
