// The invariant FP8 GEMM (kernels/gemm_fp8.cuh): a persistent, warp-specialized sm_90a kernel in
// the manner of the 16-bit one (gemm_invariant_wgmma.cu). One producer warpgroup (one thread
// issues the TMA loads, 128-byte swizzle, 128 e4m3 codes of K per stage row) runs ahead through an
// mbarrier ring; one or two consumer warpgroups of 64 rows each compute a 128-wide K group per
// stage: four wgmma m64nNk32 into a partial (the first from zero), then, promoted, add it into the
// fp32 total with the group's scales. Two partials take turns: group g + 1's wgmma run while
// group g is waited for and promoted, so the tensor cores do not idle through the promotion.
//
// Invariance: as the header says, each output element is one accumulator register of one consumer
// thread, which sees the same sequence (zero, four k32 steps per group in increasing k, one
// promotion per group in increasing g, the epilogue) whatever the tile, the CTA count or M.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>

#include "kernels/gemm_fp8.cuh"
#include "kernels/gemm_fp8_wgmma_instr.cuh"
#include "kernels/gemm_invariant_device.cuh"
#include "kernels/kernel_image.cuh"
#include "kernels/sm90_async.cuh"
#include "kernels/tensor_map.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kGroupK = 128;  // e4m3 codes per K group: one 128-byte swizzle row

template <int CONSUMERS, int TILE_N, int STAGES>
struct Fp8Shape {
  static constexpr int kTileM = 64 * CONSUMERS;
  static constexpr int kABytes = kTileM * kGroupK;  // one K group of A (at most kTileM rows)
  static constexpr int kWBytes = TILE_N * kGroupK;
  static constexpr int kStageBytes = kABytes + kWBytes;
  static constexpr int kThreads = 128 * (CONSUMERS + 1);
  static constexpr int kRegs = TILE_N / 2;
  static_assert(kRegs == WgmmaE4m3<TILE_N>::kRegs, "one accumulator per 2 columns");
  // Tiles, then the barriers; +1024 so the tiles can be aligned to the 128B-swizzle atom.
  static constexpr int kSmemBytes = STAGES * kStageBytes + 2 * STAGES * 8 + 1024;
};

struct Fp8KernelParams {
  Fp8GemmProblem p;
  int m_tiles, n_tiles, k_groups;
  int a_box_rows;  // rows of A per TMA load
  int pair_out;    // out and ldo allow storing two neighbouring columns at once
};

#ifdef NVDET_SM90A_DEVICE

// One value rounded to the output type (round to nearest even), as store_from_float rounds it.
template <typename Out>
__device__ __forceinline__ Out to_out(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 to_out<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half to_out<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ float to_out<float>(float v) {
  return v;
}

// The tile's epilogue for one output type. Accumulator register 4j + e holds row row_base +
// 8 (e >> 1), column col_base + 8j + (e & 1). Each element: the scales (when they are not per K
// group) as t = sa[row] * (sw[col] * t), + bias[col], one rounding: the same operations in the
// same order for every element, whatever the tile. The row scales are read once a tile and the
// column scales and bias once a column (rows past M read the last valid scale, never stored), so
// the loop is loads-free per element and has no run-time type switch.
template <typename Out, bool PER_GROUP, int R>
__device__ __forceinline__ void store_fp8_tile_as(const Fp8KernelParams& kp, const float (&acc)[R],
                                                  int row_base, int col_base) {
  const Fp8GemmProblem& p = kp.p;
  Out* const out = static_cast<Out*>(p.out);
  constexpr bool scaled = !PER_GROUP;
  const int bias_type = static_cast<int>(p.bias_type);
  float sa[2] = {1.0f, 1.0f};
  if (scaled) {
#pragma unroll
    for (int h = 0; h < 2; ++h) sa[h] = p.a_scale[min(row_base + 8 * h, p.m - 1)];
  }
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    const int col = col_base + 8 * j;
    if (col >= p.n) break;  // columns only grow with j
    const bool second = col + 1 < p.n;
    const int col1 = second ? col + 1 : col;  // a column past N: its value is never stored
    float sw[2] = {1.0f, 1.0f}, b[2] = {0.0f, 0.0f};
    if (scaled) {
      sw[0] = p.w_scale[col];
      sw[1] = p.w_scale[col1];
    }
    if (p.bias) {
      b[0] = load_as_float(p.bias, col, bias_type);
      b[1] = load_as_float(p.bias, col1, bias_type);
    }
    const bool pair = kp.pair_out && second;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row_base + 8 * h;
      if (row >= p.m) continue;
      float v[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float t = acc[4 * j + 2 * h + e];
        if (scaled) t = __fmul_rn(sa[h], __fmul_rn(sw[e], t));
        if (p.bias) t = __fadd_rn(t, b[e]);
        v[e] = t;
      }
      Out* const at = out + static_cast<long long>(row) * p.ldo + col;
      if (pair) {
        store2(at, v[0], v[1]);
      } else {
        at[0] = to_out<Out>(v[0]);
        if (second) at[1] = to_out<Out>(v[1]);
      }
    }
  }
}

// The tile's epilogue: the output type chosen once, outside the element loops.
template <bool PER_GROUP, int R>
__device__ __forceinline__ void store_fp8_tile(const Fp8KernelParams& kp, const float (&acc)[R],
                                               int row_base, int col_base) {
  if (kp.p.out_type == ElemType::kBF16) {
    store_fp8_tile_as<__nv_bfloat16, PER_GROUP>(kp, acc, row_base, col_base);
  } else if (kp.p.out_type == ElemType::kFP16) {
    store_fp8_tile_as<__half, PER_GROUP>(kp, acc, row_base, col_base);
  } else {
    store_fp8_tile_as<float, PER_GROUP>(kp, acc, row_base, col_base);
  }
}

// Promotion of group g's partial into the total: T = T + P_g * (sa[i, g] * sw[j, g]) with scales
// per K group, else T = T + P_g; each operation rounded on its own (no contraction).
template <bool PER_GROUP, int R>
__device__ __forceinline__ void promote(const Fp8KernelParams& kp, float (&acc)[R],
                                        const float (&part)[R], int g, int row_base,
                                        int col_base) {
  const Fp8GemmProblem& p = kp.p;
  if constexpr (!PER_GROUP) {
#pragma unroll
    for (int i = 0; i < R; ++i) acc[i] = __fadd_rn(acc[i], part[i]);
    return;
  }
  // Rows and columns past the output read the last valid scale (never stored).
  const float* sa = p.a_scale + static_cast<long long>(g) * p.m;
  const float* sw = p.w_scale + static_cast<long long>(g) * p.n;
  const float sa0 = sa[min(row_base, p.m - 1)];
  const float sa1 = sa[min(row_base + 8, p.m - 1)];
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    const int col = col_base + 8 * j;
    const float sw0 = sw[min(col, p.n - 1)];
    const float sw1 = sw[min(col + 1, p.n - 1)];
    acc[4 * j + 0] = __fadd_rn(acc[4 * j + 0], __fmul_rn(part[4 * j + 0], __fmul_rn(sa0, sw0)));
    acc[4 * j + 1] = __fadd_rn(acc[4 * j + 1], __fmul_rn(part[4 * j + 1], __fmul_rn(sa0, sw1)));
    acc[4 * j + 2] = __fadd_rn(acc[4 * j + 2], __fmul_rn(part[4 * j + 2], __fmul_rn(sa1, sw0)));
    acc[4 * j + 3] = __fadd_rn(acc[4 * j + 3], __fmul_rn(part[4 * j + 3], __fmul_rn(sa1, sw1)));
  }
}

// One K group's four wgmma m64nNk32 into d, k ascending, committed as one group and left
// running: the first from zero when `from_zero` (a promoted group's partial), else all adding to
// d (fast accumulation).
template <int TILE_N, int R>
__device__ __forceinline__ void issue_group_mma(float (&d)[R], uint32_t a_rows, uint32_t w_rows,
                                                bool from_zero) {
  fence_operands(d);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kGroupK / 32; ++kk) {
    WgmmaE4m3<TILE_N>::mma(d, smem_desc(a_rows + kk * 32), smem_desc(w_rows + kk * 32),
                           from_zero && kk == 0 ? 0 : 1);
  }
  wgmma_commit();
}

// Waits until at most PENDING committed wgmma groups are still running, then pins d's registers
// after the wait (d: the registers the finished group wrote).
template <int PENDING, int R>
__device__ __forceinline__ void wait_group_mma(float (&d)[R]) {
  wgmma_wait<PENDING>();
  fence_operands(d);
}

#endif  // NVDET_SM90A_DEVICE

// PER_GROUP: the scales change along K (applied at each promotion; promoted only), as a template
// parameter so that each kernel holds one promotion and one epilogue, not both behind a branch.
template <int CONSUMERS, int TILE_N, int STAGES, bool PROMOTED, bool PER_GROUP>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    fp8_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                    const __grid_constant__ CUtensorMap map_w, const Fp8KernelParams kp) {
#ifdef NVDET_SM90A_DEVICE
  using S = Fp8Shape<CONSUMERS, TILE_N, STAGES>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t tiles = (raw + 1023) & ~1023u;
  const uint32_t bars = tiles + STAGES * S::kStageBytes;
  auto full_bar = [&](int s) { return bars + 8 * s; };
  auto empty_bar = [&](int s) { return bars + 8 * (STAGES + s); };
  auto stage_a = [&](int s) { return tiles + s * S::kStageBytes; };
  auto stage_w = [&](int s) { return tiles + s * S::kStageBytes + S::kABytes; };

  const int total_tiles = kp.m_tiles * kp.n_tiles;
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar(s), 1);
      mbar_init(empty_bar(s), 128 * CONSUMERS);
    }
    mbar_init_fence();
  }
  __syncthreads();

  // Ring slot s holds K group t (of some output tile), s = t % STAGES, t counting the groups this
  // CTA has streamed over all its tiles. A's rows past a_box_rows hold stale data that reaches
  // only output rows past M, never stored (rows of an MMA do not mix).
  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      int t = 0;
      for (int tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {
        int tm, tn;
        grouped_tile(tile, kp.m_tiles, kp.n_tiles, 8, &tm, &tn);
        for (int g = 0; g < kp.k_groups; ++g, ++t) {
          const int s = t % STAGES;
          mbar_wait(empty_bar(s), ((t / STAGES) & 1) ^ 1);
          mbar_expect_tx(full_bar(s), kp.a_box_rows * kGroupK + S::kWBytes);
          tma_load_2d(stage_a(s), &map_a, full_bar(s), g * kGroupK, tm * S::kTileM);
          tma_load_2d(stage_w(s), &map_w, full_bar(s), g * kGroupK, tn * TILE_N);
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int wg = warpgroup - 1;  // consumer index: rows [wg * 64, wg * 64 + 64) of the tile
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    float acc[S::kRegs];
    // Promoted: two partials, so that group g + 1's wgmma run while group g is promoted (the
    // promotion order, and so every bit, is the same as waiting for each group in turn).
    float part0[S::kRegs], part1[S::kRegs];
    zero_accumulators(part0);  // scale_d 0 ignores them; set once so they are never undefined
    zero_accumulators(part1);
    int t = 0;
    for (int tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {
      int tm, tn;
      grouped_tile(tile, kp.m_tiles, kp.n_tiles, 8, &tm, &tn);
      const int row_base = tm * S::kTileM + wg * 64 + warp * 16 + (lane >> 2);
      const int col_base = tn * TILE_N + ((lane & 3) << 1);
      zero_accumulators(acc);
      if constexpr (PROMOTED) {
        // Group g, read from stage t - 1, once done (the last group: nothing else running): its
        // stage goes back to the producer and its partial is promoted.
        auto retire = [&](float(&part)[S::kRegs], int g, bool last) {
          if (last) {
            wait_group_mma<0>(part);
          } else {
            wait_group_mma<1>(part);
          }
          mbar_arrive(empty_bar((t - 1) % STAGES));
          promote<PER_GROUP>(kp, acc, part, g, row_base, col_base);
        };
        // Group g into `cur` while group g - 1 (in `prev`) finishes and is promoted.
        auto step = [&](float(&cur)[S::kRegs], float(&prev)[S::kRegs], int g) {
          const int s = t % STAGES;
          mbar_wait(full_bar(s), (t / STAGES) & 1);
          issue_group_mma<TILE_N>(cur, stage_a(s) + wg * 64 * kGroupK, stage_w(s), true);
          if (g > 0) retire(prev, g - 1, false);
        };
        for (int g = 0; g < kp.k_groups; ++g, ++t) {
          if (g & 1) {
            step(part1, part0, g);
          } else {
            step(part0, part1, g);
          }
        }
        const int last = kp.k_groups - 1;
        if (last & 1) {
          retire(part1, last, true);
        } else {
          retire(part0, last, true);
        }
      } else {
        // Fast accumulation: one chain over the whole of K in the tensor cores' accumulator, one
        // group left running while the next is issued.
        for (int g = 0; g < kp.k_groups; ++g, ++t) {
          const int s = t % STAGES;
          mbar_wait(full_bar(s), (t / STAGES) & 1);
          issue_group_mma<TILE_N>(acc, stage_a(s) + wg * 64 * kGroupK, stage_w(s), false);
          if (g > 0) {
            wait_group_mma<1>(acc);
            mbar_arrive(empty_bar((t - 1) % STAGES));
          }
        }
        wait_group_mma<0>(acc);
        mbar_arrive(empty_bar((t - 1) % STAGES));
      }
      store_fp8_tile<PER_GROUP>(kp, acc, row_base, col_base);
    }
  }
#else
  __trap();  // never launched: fp8_gemm_available() is false without sm_90a code
#endif
}

// A row-major [rows, k] matrix of bytes as a TMA map with a box of box_rows x 128 bytes.
bool make_byte_map(CUtensorMap* map, const void* base, int rows, int k, long long ld,
                   int box_rows) {
  return encode_swizzled_tile_map(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, base,
                                  static_cast<uint64_t>(rows), static_cast<uint64_t>(k),
                                  static_cast<uint64_t>(ld), kGroupK,
                                  static_cast<uint32_t>(box_rows));
}

template <int CONSUMERS, int TILE_N, int STAGES, bool PROMOTED, bool PER_GROUP>
cudaError_t launch_fp8_config(const Fp8GemmProblem& p, int ctas, cudaStream_t stream) {
  using S = Fp8Shape<CONSUMERS, TILE_N, STAGES>;
  auto kernel = fp8_gemm_kernel<CONSUMERS, TILE_N, STAGES, PROMOTED, PER_GROUP>;
  static const cudaError_t attr =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes);
  if (attr != cudaSuccess) return attr;
  Fp8KernelParams kp{};
  kp.p = p;
  // A's box: the tile's rows, or M rounded up to 8 when M is smaller (decode sizes move less).
  kp.a_box_rows = p.m >= S::kTileM ? S::kTileM : ((p.m + 7) / 8) * 8;
  kp.m_tiles = (p.m + S::kTileM - 1) / S::kTileM;
  kp.n_tiles = (p.n + TILE_N - 1) / TILE_N;
  kp.k_groups = (p.k + kGroupK - 1) / kGroupK;
  const size_t out_bytes = p.out_type == ElemType::kFP32 ? 4 : 2;
  kp.pair_out = (p.ldo % 2 == 0) &&
                (reinterpret_cast<uintptr_t>(p.out) % (2 * out_bytes) == 0);
  CUtensorMap map_a, map_w;
  if (!make_byte_map(&map_a, p.a, p.m, p.k, p.lda, kp.a_box_rows) ||
      !make_byte_map(&map_w, p.w, p.n, p.k, p.ldw, TILE_N)) {
    return cudaErrorInvalidValue;
  }
  const long long total = static_cast<long long>(kp.m_tiles) * kp.n_tiles;
  if (total > INT32_MAX) return cudaErrorInvalidValue;
  const int grid = static_cast<int>(std::min<long long>(total, ctas));
  kernel<<<grid, S::kThreads, S::kSmemBytes, stream>>>(map_a, map_w, kp);
  return cudaGetLastError();
}

constexpr bool fp8_config_is(int i, int consumers, int tile_n, int stages) {
  return kFp8GemmConfigs[i].tile_m == 64 * consumers && kFp8GemmConfigs[i].tile_n == tile_n &&
         kFp8GemmConfigs[i].stages == stages;
}
static_assert(kFp8GemmConfigCount == 4 && fp8_config_is(0, 2, 128, 6) &&
                  fp8_config_is(1, 1, 128, 8) && fp8_config_is(2, 1, 64, 12) &&
                  fp8_config_is(3, 1, 32, 16),
              "launch_fp8's instantiations must follow kFp8GemmConfigs");

template <bool PROMOTED, bool PER_GROUP>
cudaError_t launch_fp8(const Fp8GemmProblem& p, int config, int ctas, cudaStream_t stream) {
  switch (config) {
    case 0: return launch_fp8_config<2, 128, 6, PROMOTED, PER_GROUP>(p, ctas, stream);
    case 1: return launch_fp8_config<1, 128, 8, PROMOTED, PER_GROUP>(p, ctas, stream);
    case 2: return launch_fp8_config<1, 64, 12, PROMOTED, PER_GROUP>(p, ctas, stream);
    case 3: return launch_fp8_config<1, 32, 16, PROMOTED, PER_GROUP>(p, ctas, stream);
    default: break;
  }
  return cudaErrorInvalidValue;
}

int ceil_div_int(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

}  // namespace

bool fp8_gemm_available() {
  static const bool available = [] {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, fp8_gemm_kernel<2, 128, 6, true, false>) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    // A compute_90 PTX image JIT-compiled on sm_90 reports binaryVersion 90 too, but its kernel is
    // the __trap() fallback: require the sm_90a image (kernels/kernel_image.cuh).
    return attr.binaryVersion == 90 && kernel_image().arch_specific &&
           tensor_map_encoder() != nullptr;
  }();
  return available;
}

const char* fp8_gemm_unsupported(const Fp8GemmProblem& p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return "the FP8 GEMM needs m, n and k of at least 1";
  if (p.k % 16 != 0) return "the invariant FP8 GEMM needs k a multiple of 16 (TMA row strides)";
  if (p.lda % 16 != 0 || p.ldw % 16 != 0 || reinterpret_cast<uintptr_t>(p.a) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(p.w) % 16 != 0) {
    return "the invariant FP8 GEMM needs 16-byte aligned code rows";
  }
  if (p.per_group && !p.promoted) {
    return "fast accumulation cannot apply scales that change along K (group_128 activations, "
           "block_128x128 weights): they are applied when a group is promoted";
  }
  if (!p.a_scale || !p.w_scale || !p.out) return "the FP8 GEMM needs its scales and output";
  return nullptr;
}

Fp8GemmPlan fp8_gemm_plan(const Fp8GemmProblem& p, int sm_count, int force_config,
                          int force_ctas) {
  Fp8GemmPlan plan;
  const int sms = std::max(sm_count, 1);
  if (force_config >= 0 && force_config < kFp8GemmConfigCount) {
    plan.config = force_config;
  } else {
    double best_cost = 0.0;
    for (int i = 0; i < kFp8GemmConfigCount; ++i) {
      const Fp8GemmConfig& c = kFp8GemmConfigs[i];
      const long long tiles =
          static_cast<long long>(ceil_div_int(p.m, c.tile_m)) * ceil_div_int(p.n, c.tile_n);
      const long long waves = (tiles + sms - 1) / sms;
      const double cost = double(waves) * c.tile_m * c.tile_n / c.efficiency_pct;
      if (i == 0 || cost < best_cost) {
        plan.config = i;
        best_cost = cost;
      }
    }
  }
  const Fp8GemmConfig& c = kFp8GemmConfigs[plan.config];
  const long long tiles =
      static_cast<long long>(ceil_div_int(p.m, c.tile_m)) * ceil_div_int(p.n, c.tile_n);
  const long long ctas = force_ctas > 0 ? force_ctas : sms;
  plan.ctas = static_cast<int>(std::max<long long>(1, std::min(tiles, ctas)));
  return plan;
}

cudaError_t fp8_gemm_launch(const Fp8GemmProblem& p, const Fp8GemmPlan& plan,
                            cudaStream_t stream) {
  if (fp8_gemm_unsupported(p) != nullptr || plan.ctas <= 0) return cudaErrorInvalidValue;
  // fp8_gemm_unsupported refuses scales per K group with fast accumulation.
  if (!p.promoted) return launch_fp8<false, false>(p, plan.config, plan.ctas, stream);
  return p.per_group ? launch_fp8<true, true>(p, plan.config, plan.ctas, stream)
                     : launch_fp8<true, false>(p, plan.config, plan.ctas, stream);
}

}  // namespace nvdet::kernels
