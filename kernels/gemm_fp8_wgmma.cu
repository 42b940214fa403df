// The invariant FP8 GEMM (kernels/gemm_fp8.cuh): a persistent, warp-specialized sm_90a kernel in
// the manner of the 16-bit one (gemm_invariant_wgmma.cu). One producer warpgroup (one thread
// issues the TMA loads, 128-byte swizzle, 128 e4m3 codes of K per stage row) runs ahead through an
// mbarrier ring (with scales per K group, two of its warps copy the groups' scales into a ring of
// the same slots); one or two consumer warpgroups of 64 rows each compute a 128-wide K group per
// stage: four wgmma m64nNk32 into a partial (the first from zero), then, promoted, add it into the
// fp32 total with the group's scales (one fma per element where the scales change along K). Two
// partials take turns: group g + 1's wgmma run while group g is waited for and promoted, so the
// tensor cores do not idle through the promotion.
//
// Clusters (entries with cluster_m = CLUSTER > 1): CLUSTER CTAs take CLUSTER vertically adjacent
// tiles of one tile column together (rank r the r-th), so they need the same W tile at every K
// group; each producer loads 1/CLUSTER of it and multicasts that part into the same ring slot of
// every CTA of the cluster, so W crosses from L2 once per cluster. A slot is then written by
// every producer of the cluster: each CTA's empty barrier counts the consumer warps of all of
// them. A tile past M (an odd count of row tiles) reads A's first rows and stores nothing. The
// shared-memory tile a consumer reads holds the same values whichever CTA loaded it.
//
// Invariance: as the header says, each output element is one accumulator register of one consumer
// thread, which sees the same sequence (zero, four k32 steps per group in increasing k, one
// promotion per group in increasing g, the epilogue) whatever the tile, the CTA count or M.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cluster_launch.cuh"
#include "kernels/gemm_fp8.cuh"
#include "kernels/gemm_grouped_tiles.cuh"
#include "kernels/gemm_fp8_wgmma_instr.cuh"
#include "kernels/gemm_invariant_device.cuh"
#include "kernels/kernel_image.cuh"
#include "kernels/sm90_async.cuh"
#include "kernels/tensor_map.cuh"
#include "kernels/vec_io.cuh"

namespace nvdet::kernels {
namespace {

constexpr int kGroupK = 128;  // e4m3 codes per K group: one 128-byte swizzle row

// GSUB: K groups a ring stage holds (GSUB A sub-tiles, then GSUB W sub-tiles). ROWS: the tile's
// rows of A, 64 a consumer, or a short tile of fewer with one consumer (kFp8GemmConfigs), whose
// wgmma reads 64 rows all the same: those past ROWS read the shared memory that follows (the
// stage's next sub-tiles, past the ring's end kOverreadBytes of padding) and are never stored.
// Short tiles and several groups a stage: one scale per row and column along K only (the scale
// ring holds one K group a slot, for the tile's 64-row multiple of rows).
template <int CONSUMERS, int TILE_N, int STAGES, int CLUSTER, bool PER_GROUP, int GSUB = 1,
          int ROWS = 64 * CONSUMERS>
struct Fp8Shape {
  static_assert(ROWS == 64 * CONSUMERS ||
                    (CONSUMERS == 1 && CLUSTER == 1 && ROWS % 8 == 0 && ROWS < 64),
                "fewer rows than the wgmma's 64 only with one consumer, in whole swizzle atoms");
  static_assert((GSUB == 1 && ROWS == 64 * CONSUMERS) || !PER_GROUP,
                "scales per K group: one group a stage, whole 64-row tiles");
  static_assert(GSUB == 1 || CLUSTER == 1, "several groups a stage: no cluster");
  static constexpr int kTileM = ROWS;
  static constexpr int kABytes = kTileM * kGroupK;  // one K group of A (at most kTileM rows)
  static constexpr int kWBytes = TILE_N * kGroupK;
  static constexpr int kStageBytes = GSUB * (kABytes + kWBytes);
  // Bytes a short tile's wgmma reads past the last stage (a multiple of 1024: the staging buffer
  // after it stays aligned).
  static constexpr int kOverreadBytes = (64 - ROWS % 64) % 64 * kGroupK;
  // The part of the W tile one CTA of a cluster loads: whole 8-row swizzle atoms (1024 bytes), so
  // the 128-byte swizzle of each part is the one a single box would give.
  static constexpr int kWPartRows = TILE_N / CLUSTER;
  static_assert(kWPartRows % 8 == 0, "W parts of whole swizzle atoms");
  static constexpr int kThreads = 128 * (CONSUMERS + 1);
  static constexpr int kRegs = TILE_N / 2;
  static_assert(kRegs == WgmmaE4m3<TILE_N>::kRegs, "one accumulator per 2 columns");
  // The epilogue's staging buffer for TMA stores of 16-bit outputs (tiles at least 64 wide):
  // each consumer's 64 rows x TILE_N columns.
  static constexpr bool kStagedStores = TILE_N >= 64 && ROWS == 64 * CONSUMERS;
  static constexpr int kOutConsumerBytes = kStagedStores ? 64 * TILE_N * 2 : 0;
  // Scales per K group (PER_GROUP): a ring of its own beside the tiles' (same slots, same
  // barriers), each slot the group's scales of the tile's rows of A, then of its columns of W,
  // written by the producer's two scale warps.
  static constexpr int kScaleSlotBytes = PER_GROUP ? (kTileM + TILE_N) * 4 : 0;
  // Tiles, the staging buffer, the scales, then the barriers; +1024 so the tiles can be aligned
  // to the 128B-swizzle atom.
  static constexpr int kSmemBytes = STAGES * kStageBytes + kOverreadBytes +
                                    CONSUMERS * kOutConsumerBytes + STAGES * kScaleSlotBytes +
                                    2 * STAGES * 8 + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "an sm_90 CTA's shared memory");
};

struct Fp8KernelParams {
  Fp8GemmProblem p;
  int m_tiles, n_tiles, k_groups;
  int a_box_rows;  // rows of A per TMA load
  int pair_out;    // out and ldo allow storing two neighbouring columns at once
  int staged_out;  // the epilogue stages the tile in shared memory and TMA stores it (map_out)
  // Several K groups a stage: the operands whose maps are 3-d stage maps, one copy a stage
  // (bit 0 A, bit 1 W); the others one copy a group.
  int stage_boxes;
};

#ifdef NVDET_SM90A_DEVICE

// What a thread's epilogue applies to its accumulators: finish(acc, j, h, e) is element
// 4j + 2h + e with the scales (when they are not per K group) as t = sa[row] * (sw[col] * t),
// then + bias[col]: the same operations in the same order for every element, whatever the tile
// or the way it is stored (the rounding is the store's). Every scale and bias value is loaded at
// construction, all at once: loaded inside the column loop, whose exit at N the loads could not
// be hoisted over, each column waited out its own global-memory round trip (ncu, H100). Rows and
// columns past the output read the last valid value (never stored).
template <bool PER_GROUP, int COLS>
struct EpilogueValues {
  static constexpr bool kScaled = !PER_GROUP;
  bool has_bias;
  float sa[2] = {1.0f, 1.0f};
  float sw[COLS][2], b[COLS][2];
  __device__ __forceinline__ EpilogueValues(const Fp8GemmProblem& p, int row_base, int col_base)
      : has_bias(p.bias != nullptr) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (kScaled) sa[h] = p.a_scale[min(row_base + 8 * h, p.m - 1)];
    }
#pragma unroll
    for (int j = 0; j < COLS; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        sw[j][e] = kScaled ? p.w_scale[min(col_base + 8 * j + e, p.n - 1)] : 1.0f;
        b[j][e] = 0.0f;
      }
    }
    if (has_bias) {
      const int bias_type = static_cast<int>(p.bias_type);
#pragma unroll
      for (int j = 0; j < COLS; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          b[j][e] = load_as_float(p.bias, min(col_base + 8 * j + e, p.n - 1), bias_type);
        }
      }
    }
  }
  template <int R>
  __device__ __forceinline__ float finish(const float (&acc)[R], int j, int h, int e) const {
    float t = acc[4 * j + 2 * h + e];
    if (kScaled) t = __fmul_rn(sa[h], __fmul_rn(sw[j][e], t));
    if (has_bias) t = __fadd_rn(t, b[j][e]);
    return t;
  }
};

// The tile's epilogue for one output type, stored from the registers (fp32 outputs, the 64x32
// tile, and outputs whose rows TMA cannot address). Accumulator register 4j + e holds row
// row_base + 8 (e >> 1), column col_base + 8j + (e & 1).
template <typename Out, bool PER_GROUP, int R>
__device__ __forceinline__ void store_fp8_tile_as(const Fp8KernelParams& kp, const float (&acc)[R],
                                                  int row_base, int col_base, int row_end) {
  const Fp8GemmProblem& p = kp.p;
  Out* const out = static_cast<Out*>(p.out);
  const EpilogueValues<PER_GROUP, R / 4> ev(p, row_base, col_base);
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    const int col = col_base + 8 * j;
    if (col >= p.n) break;  // columns only grow with j
    const bool second = col + 1 < p.n;
    const bool pair = kp.pair_out && second;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row_base + 8 * h;
      if (row >= row_end) continue;
      const float v0 = ev.finish(acc, j, h, 0), v1 = ev.finish(acc, j, h, 1);
      Out* const at = out + static_cast<long long>(row) * p.ldo + col;
      if (pair) {
        store2(at, v0, v1);
      } else {
        at[0] = from_float<Out>(v0);
        if (second) at[1] = from_float<Out>(v1);
      }
    }
  }
}

// The same values, rounded as store2 rounds them, written into this consumer's staging buffer
// for TMA to store (16-bit outputs, tiles at least 64 wide): the buffer holds the consumer's 64
// rows as TILE_N / 64 boxes of 64 rows x 128 bytes, each 128-byte swizzled as the output's map
// reads it (16-byte chunk c of row r at chunk c ^ (r % 8)), so that a warp's stores of one
// column pair fall in 32 different banks. The global stores that this replaces (32 per thread and
// tile, 4 bytes each, over 8 rows) filled the memory pipeline's queue while the tensor cores
// idled (ncu, H100: the epilogue was about a sixth of the consumers' time).
template <typename Out, bool PER_GROUP, int R>
__device__ __forceinline__ void stage_fp8_tile_as(const Fp8KernelParams& kp, const float (&acc)[R],
                                                  int row_base, int col_base, uint32_t buffer,
                                                  int warp, int lane) {
  const EpilogueValues<PER_GROUP, R / 4> ev(kp.p, row_base, col_base);
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp * 16 + (lane >> 2) + 8 * h;  // row within the consumer's 64
      const uint32_t at = buffer + (j / 8) * 64 * 128 + r * 128 + (((j % 8) ^ (r % 8)) << 4) +
                          ((lane & 3) << 2);
      st_shared_u32(at, pack2<Out>(ev.finish(acc, j, h, 0), ev.finish(acc, j, h, 1)));
    }
  }
}

// The tile's staging for TMA stores, for the 16-bit output types (staged_out is never set for
// fp32).
template <bool PER_GROUP, int R>
__device__ __forceinline__ void stage_fp8_tile(const Fp8KernelParams& kp, const float (&acc)[R],
                                               int row_base, int col_base, uint32_t buffer,
                                               int warp, int lane) {
  if (kp.p.out_type == ElemType::kBF16) {
    stage_fp8_tile_as<__nv_bfloat16, PER_GROUP>(kp, acc, row_base, col_base, buffer, warp, lane);
  } else {
    stage_fp8_tile_as<__half, PER_GROUP>(kp, acc, row_base, col_base, buffer, warp, lane);
  }
}

// The tile's epilogue: the output type chosen once, outside the element loops. Rows from row_end
// on are not stored (past M, or past a short tile's rows).
template <bool PER_GROUP, int R>
__device__ __forceinline__ void store_fp8_tile(const Fp8KernelParams& kp, const float (&acc)[R],
                                               int row_base, int col_base, int row_end) {
  if (kp.p.out_type == ElemType::kBF16) {
    store_fp8_tile_as<__nv_bfloat16, PER_GROUP>(kp, acc, row_base, col_base, row_end);
  } else if (kp.p.out_type == ElemType::kFP16) {
    store_fp8_tile_as<__half, PER_GROUP>(kp, acc, row_base, col_base, row_end);
  } else {
    store_fp8_tile_as<float, PER_GROUP>(kp, acc, row_base, col_base, row_end);
  }
}

// Promotion of group g's partial into the total: T = fma(P_g, sa[i, g] * sw[j, g], T) with scales
// per K group (one fused multiply-add, as the Hopper block-scaled GEMMs of the serving stacks
// promote: half the instructions of a multiply then an add, which the consumers issue between
// their wgmma), else T = T + P_g; no other contraction. The group's scales come from its slot of
// the scale ring: sa of the tile's rows, then sw of its columns (row_in_tile and col_in_tile: the
// thread's first row and column there).
// W_BLOCK: every column of the tile has the same weight scale in each group (block_128x128 or
// tensor-wide weights; a tile is at most 128 wide and aligned to its width, so it lies in one
// 128-column block): the products sa * sw are formed once per row rather than once per element.
// They are the same values, so the bits are those of the general form.
// Quad j of a thread's accumulators (rows r and r + 8, columns c and c + 1): each element's fma
// with its scale, s_rc for row r (0) or r + 8 (1) and column c (0) or c + 1 (1).
template <int R>
__device__ __forceinline__ void promote_quad(float (&acc)[R], const float (&part)[R], int j,
                                             float s00, float s01, float s10, float s11) {
  acc[4 * j + 0] = __fmaf_rn(part[4 * j + 0], s00, acc[4 * j + 0]);
  acc[4 * j + 1] = __fmaf_rn(part[4 * j + 1], s01, acc[4 * j + 1]);
  acc[4 * j + 2] = __fmaf_rn(part[4 * j + 2], s10, acc[4 * j + 2]);
  acc[4 * j + 3] = __fmaf_rn(part[4 * j + 3], s11, acc[4 * j + 3]);
}

template <bool PER_GROUP, bool W_BLOCK, int R>
__device__ __forceinline__ void promote(float (&acc)[R], const float (&part)[R],
                                        const float* scales, int row_in_tile, int tile_m,
                                        int col_in_tile) {
  if constexpr (!PER_GROUP) {
#pragma unroll
    for (int i = 0; i < R; ++i) acc[i] = __fadd_rn(acc[i], part[i]);
    return;
  }
  const float sa0 = scales[row_in_tile];
  const float sa1 = scales[row_in_tile + 8];
  if constexpr (W_BLOCK) {
    const float sw = scales[tile_m + col_in_tile];
    const float s0 = __fmul_rn(sa0, sw);
    const float s1 = __fmul_rn(sa1, sw);
#pragma unroll
    for (int j = 0; j < R / 4; ++j) promote_quad(acc, part, j, s0, s0, s1, s1);
    return;
  }
  // Columns col and col + 1 side by side (col is even, the slot 16-byte aligned): one 8-byte load.
  const float2* sw = reinterpret_cast<const float2*>(scales + tile_m + col_in_tile);
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    const float2 w = sw[4 * j];  // columns col_in_tile + 8 j, + 1
    promote_quad(acc, part, j, __fmul_rn(sa0, w.x), __fmul_rn(sa0, w.y), __fmul_rn(sa1, w.x),
                 __fmul_rn(sa1, w.y));
  }
}

// One K group's four wgmma m64nNk32 into d, k ascending (32 bytes of K: 2 address units each),
// committed as one group and left running: the first from zero when `from_zero` (a promoted
// group's partial), else all adding to d (fast accumulation).
template <int TILE_N, int R>
__device__ __forceinline__ void issue_group_mma(float (&d)[R], uint64_t desc_a, uint64_t desc_w,
                                                bool from_zero) {
  fence_operands(d);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kGroupK / 32; ++kk) {
    WgmmaE4m3<TILE_N>::mma(d, desc_advance(desc_a, 2 * kk), desc_advance(desc_w, 2 * kk),
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
// CLUSTER: the launch's cluster size (1: none; else gridDim.x a multiple of it and the W map's box
// kWPartRows rows). W_BLOCK: see promote. GSUB, ROWS: Fp8Shape (the launch takes GSUB > 1 only
// where it divides the K groups).
template <int CONSUMERS, int TILE_N, int STAGES, int CLUSTER, bool PROMOTED, bool PER_GROUP,
          bool W_BLOCK, int GSUB = 1, int ROWS = 64 * CONSUMERS>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
    fp8_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                    const __grid_constant__ CUtensorMap map_w,
                    // The output as 64 x 64 boxes (128-byte swizzle), where kp.staged_out.
                    const __grid_constant__ CUtensorMap map_out,
                    // __grid_constant__: the epilogue takes kp by reference, and a by-value
                    // parameter is then copied to local memory (as in gemm_invariant_wgmma.cu).
                    const __grid_constant__ Fp8KernelParams kp) {
#ifdef NVDET_SM90A_DEVICE
  using S = Fp8Shape<CONSUMERS, TILE_N, STAGES, CLUSTER, PER_GROUP, GSUB, ROWS>;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t tiles = (raw + 1023) & ~1023u;
  // The staging buffer follows the ring (and a short tile's overread): 1024-aligned, as every
  // stage is a multiple of 1024 bytes.
  const uint32_t out_stage = tiles + STAGES * S::kStageBytes + S::kOverreadBytes;
  const uint32_t scale_ring = out_stage + CONSUMERS * S::kOutConsumerBytes;
  const uint32_t bars = scale_ring + STAGES * S::kScaleSlotBytes;
  // Slot s of the scale ring, as a generic pointer (written and read by ordinary instructions).
  auto scale_slot = [&](int s) {
    return reinterpret_cast<float*>(smem_raw + (scale_ring - raw) + s * S::kScaleSlotBytes);
  };
  auto full_bar = [&](int s) { return bars + 8 * s; };
  auto empty_bar = [&](int s) { return bars + 8 * (STAGES + s); };
  // Stage s: its GSUB K groups of A (kTileM rows of 128 bytes each), then of W.
  auto stage_a = [&](int s, int sub = 0) { return tiles + s * S::kStageBytes + sub * S::kABytes; };
  auto stage_w = [&](int s, int sub = 0) {
    return tiles + s * S::kStageBytes + GSUB * S::kABytes + sub * S::kWBytes;
  };
  const int k_stages = kp.k_groups / GSUB;

  // With clusters, `tile` counts groups of CLUSTER vertically adjacent tiles, walked by clusters
  // (a 1-D grid's clusters are runs of CLUSTER consecutive CTAs, ranked in blockIdx order).
  const int total_tiles =
      static_cast<int>(cluster_tile_groups(kp.m_tiles, kp.n_tiles, CLUSTER, false));
  const int rank = static_cast<int>(blockIdx.x % CLUSTER);
  const int first_tile = blockIdx.x / CLUSTER, tile_step = gridDim.x / CLUSTER;
  auto tile_at = [&](int tile, int* tm, int* tn) {
    if constexpr (CLUSTER > 1) {
      cluster_tile(tile, kp.m_tiles, kp.n_tiles, CLUSTER, rank, tm, tn);
    } else {
      grouped_tile(tile, kp.m_tiles, kp.n_tiles, 8, tm, tn);
    }
  };
  const int warpgroup = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    // The descriptors' loads overlap the barriers' set-up (the copies' first use waited for them).
    tma_prefetch_map(&map_a);
    tma_prefetch_map(&map_w);
    if (kp.staged_out) tma_prefetch_map(&map_out);
    for (int s = 0; s < STAGES; ++s) {
      // The TMA thread's arrival, and with scales per K group each lane of the two scale warps'.
      mbar_init(full_bar(s), PER_GROUP ? 1 + 64 : 1);
      // One arrival per consumer warp of every CTA whose producer writes the slot (per-thread
      // arrivals put 128 shared-memory atomics on one barrier per consumer and K group); with
      // scales per K group one per consumer thread, each after its own reads of the scale slot.
      mbar_init(empty_bar(s), (PER_GROUP ? 128 : 4) * CONSUMERS * CLUSTER);
    }
    mbar_init_fence();
  }
  // With clusters, no CTA may signal or multicast into another before its barriers exist.
  if constexpr (CLUSTER > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }

  // The ring's slots hold the K groups this CTA streams, over all its tiles, in turn (producer and
  // consumers walk the same sequence with their own RingCursor). A's rows past a_box_rows hold
  // stale data that reaches only output rows past M, never stored (rows of an MMA do not mix).
  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      RingCursor<STAGES> ring;
      for (int tile = first_tile; tile < total_tiles; tile += tile_step) {
        int tm, tn;
        tile_at(tile, &tm, &tn);
        const int a_row = tm < kp.m_tiles ? tm * S::kTileM : 0;  // past M: rows that exist
        for (int ks = 0; ks < k_stages; ++ks, ring.advance()) {
          const int s = ring.slot;
          mbar_wait(empty_bar(s), ring.phase ^ 1u);
          // The whole W tile arrives on every CTA's barrier, from every producer of the cluster.
          mbar_expect_tx(full_bar(s), GSUB * (kp.a_box_rows * kGroupK + S::kWBytes));
          // Each operand whose map holds whole stages (the launch): its groups in one copy.
          if (GSUB > 1 && (kp.stage_boxes & 1)) {
            tma_load_3d(stage_a(s), &map_a, full_bar(s), 0, a_row, ks * GSUB);
          }
          if (GSUB > 1 && (kp.stage_boxes & 2)) {
            tma_load_3d(stage_w(s), &map_w, full_bar(s), 0, tn * TILE_N, ks * GSUB);
          }
#pragma unroll
          for (int sub = 0; sub < GSUB; ++sub) {
            const int k0 = (ks * GSUB + sub) * kGroupK;
            if (!(GSUB > 1 && (kp.stage_boxes & 1))) {
              tma_load_2d(stage_a(s, sub), &map_a, full_bar(s), k0, a_row);
            }
            if (GSUB > 1 && (kp.stage_boxes & 2)) {
              // Loaded whole above.
            } else if constexpr (CLUSTER > 1) {
              tma_load_2d_multicast(stage_w(s) + rank * S::kWPartRows * kGroupK, &map_w,
                                    full_bar(s), k0, tn * TILE_N + rank * S::kWPartRows,
                                    static_cast<uint16_t>((1u << CLUSTER) - 1));
            } else {
              tma_load_2d(stage_w(s, sub), &map_w, full_bar(s), k0, tn * TILE_N);
            }
          }
        }
      }
    } else if (PER_GROUP && (threadIdx.x / 32 == 1 || threadIdx.x / 32 == 2)) {
      // The scale warps: each K group's scales copied (cp.async) into the group's slot of the
      // scale ring, warp 1 those of the tile's rows of A, warp 2 those of its columns of W; each
      // lane arrives on the slot's full barrier once its copies have landed, so the warps run
      // ahead by the ring's depth with the copies of several groups in flight. (One warp loading
      // them into registers and storing them waited out a round trip to memory every group; the
      // ring's first form, which brought the promotion's reads into shared memory, took 4096 x
      // 4096 at m = 4096 from 359.8 to 167.6 us on an H100.) Rows and columns past the output
      // take the last valid scale (never stored).
      const Fp8GemmProblem& p = kp.p;
      const int lane = threadIdx.x % 32;
      const bool rows = threadIdx.x / 32 == 1;
      // Warp 1: kTileM values of a_scale (m per group) from the tile's first row; warp 2: TILE_N
      // of w_scale (n per group) from its first column, after the rows in the slot.
      constexpr int kRowCopies = S::kTileM / 32, kColCopies = TILE_N / 32;
      const float* const scales = rows ? p.a_scale : p.w_scale;
      const long long per_group = rows ? p.m : p.n;
      const uint32_t slot_lane = scale_ring + 4 * (rows ? lane : S::kTileM + lane);
      RingCursor<STAGES> ring;
      for (int tile = first_tile; tile < total_tiles; tile += tile_step) {
        int tm, tn;
        tile_at(tile, &tm, &tn);
        const int first = rows ? tm * S::kTileM : tn * TILE_N;
        for (int g = 0; g < kp.k_groups; ++g, ring.advance()) {
          const int s = ring.slot;
          const float* const src = scales + g * per_group;
          const uint32_t dst = slot_lane + s * S::kScaleSlotBytes;
          mbar_wait(empty_bar(s), ring.phase ^ 1u);
#pragma unroll
          for (int i = 0; i < (kRowCopies > kColCopies ? kRowCopies : kColCopies); ++i) {
            if (i < (rows ? kRowCopies : kColCopies)) {
              cp_async4(dst + 4 * 32 * i, src + min(first + 32 * i + lane, int(per_group) - 1));
            }
          }
          cp_async_arrive(full_bar(s));
        }
      }
      cp_async_wait_all();  // no copy of this warp still in flight when it leaves
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    // Consumer index: rows [wg * 64, wg * 64 + 64) of the tile. Read through a shuffle so that the
    // compiler sees it warp-uniform and keeps the descriptors built from it in uniform registers.
    const int wg = __shfl_sync(0xffffffffu, warpgroup - 1, 0);
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    const int k_groups = kp.k_groups;
    // Slot 0's descriptors of this consumer's 64 rows of A and of W; slot s is s stages on.
    const uint64_t desc_a0 = smem_desc(stage_a(0) + wg * 64 * kGroupK);
    const uint64_t desc_w0 = smem_desc(stage_w(0));
    constexpr uint32_t kStageUnits = S::kStageBytes >> 4;
    RingCursor<STAGES> ring;  // the slot of the next group to issue
    // The slots of the last two groups issued: `newest`, and `older` (issued before it); with
    // several groups a stage, whether each was its slot's last (the slot is handed back then).
    int newest = 0, older = 0;
    bool newest_ends = true, older_ends = true;
    int sub = 0;  // the next group's place in its stage (GSUB > 1)
    // Waits for the next group's slot to fill (at a stage's first group), then issues its four
    // wgmma into d.
    auto issue = [&](float(&d)[S::kRegs], bool from_zero) {
      if (GSUB == 1 || sub == 0) mbar_wait(full_bar(ring.slot), ring.phase);
      const uint32_t units = static_cast<uint32_t>(ring.slot) * kStageUnits;
      const uint32_t a_units = GSUB > 1 ? units + sub * (S::kABytes >> 4) : units;
      const uint32_t w_units = GSUB > 1 ? units + sub * (S::kWBytes >> 4) : units;
      issue_group_mma<TILE_N>(d, desc_advance(desc_a0, a_units), desc_advance(desc_w0, w_units),
                              from_zero);
      older = newest;
      newest = ring.slot;
      if constexpr (GSUB > 1) {
        older_ends = newest_ends;
        newest_ends = sub == GSUB - 1;
        if (++sub < GSUB) return;
        sub = 0;
      }
      ring.advance();
    };
    // One thread's arrival on ring slot s's empty barrier: this CTA's producer's, and with
    // clusters every producer's that writes the slot.
    auto release_lane = [&](int s) {
      mbar_arrive(empty_bar(s));
      if constexpr (CLUSTER > 1) {
#pragma unroll
        for (int r = 1; r < CLUSTER; ++r) mbar_arrive_cluster(empty_bar(s), (rank + r) % CLUSTER);
      }
    };
    // Hands slot s back once per warp, after the whole warp's wait (wait_group is warp-aligned).
    auto release = [&](int s) {
      if (lane == 0) release_lane(s);
    };
    float acc[S::kRegs];
    for (int tile = first_tile; tile < total_tiles; tile += tile_step) {
      int tm, tn;
      tile_at(tile, &tm, &tn);
      // A tile past M (clusters) gets rows past M: computed, never stored.
      const int row_base = tm * S::kTileM + wg * 64 + warp * 16 + (lane >> 2);
      const int col_base = tn * TILE_N + ((lane & 3) << 1);
      zero_accumulators(acc);
      if constexpr (PROMOTED) {
        // Two partials, so that group g + 1's wgmma run while group g is promoted (the promotion
        // order, and so every bit, is the same as waiting for each group in turn). Set per tile
        // (scale_d 0 ignores them; set so they are never undefined): declared for the whole
        // kernel they stayed live through the epilogue, whose loads then spilled.
        float part0[S::kRegs], part1[S::kRegs];
        zero_accumulators(part0);
        zero_accumulators(part1);
        // Group g once done, its slot `s` handed back and its partial promoted. The last group:
        // nothing else is running.
        // With scales per K group, each thread hands the slot back after its promotion has read
        // them: one arrival per thread, none ordered through another lane. (Lane 0 arriving for
        // the warp after __syncwarp is as correct, but compute-sanitizer's racecheck does not
        // follow that ordering and reported every reuse of a slot as a hazard; the per-thread
        // arrivals were also 0.5-3% faster on an H100, reports/h100/fp8-fma-promotion-2026-12-07.)
        auto retire = [&](float(&part)[S::kRegs], int s, bool ends, bool last) {
          if (last) {
            wait_group_mma<0>(part);
          } else {
            wait_group_mma<1>(part);
          }
          if constexpr (!PER_GROUP) {
            if (ends) release(s);
          }
          promote<PER_GROUP, W_BLOCK>(acc, part, scale_slot(s), row_base - tm * S::kTileM, S::kTileM,
                             col_base - tn * TILE_N);
          if constexpr (PER_GROUP) release_lane(s);
        };
        issue(part0, true);
        for (int g = 1; g < k_groups; ++g) {
          // Group g into one partial while group g - 1 (the other) finishes and is promoted.
          if (g & 1) {
            issue(part1, true);
            retire(part0, older, older_ends, false);
          } else {
            issue(part0, true);
            retire(part1, older, older_ends, false);
          }
        }
        // A tile's last group ends its stage (the launch takes GSUB dividing the groups).
        if ((k_groups - 1) & 1) {
          retire(part1, newest, true, true);
        } else {
          retire(part0, newest, true, true);
        }
      } else {
        // Fast accumulation: one chain over the whole of K in the tensor cores' accumulator, one
        // group left running while the next is issued.
        issue(acc, false);
        for (int g = 1; g < k_groups; ++g) {
          issue(acc, false);
          wait_group_mma<1>(acc);
          if (older_ends) release(older);
        }
        wait_group_mma<0>(acc);
        release(newest);
      }
      if constexpr (S::kStagedStores) {
        if (kp.staged_out) {
          // This consumer's rows through its staging buffer: the previous tile's TMA stores must
          // have read it (one thread issues them and waits), then every thread writes its values,
          // orders them before the async proxy, and one thread stores the boxes and moves on
          // without waiting for the writes (the next tile's main loop overlaps them).
          const uint32_t buffer = out_stage + wg * S::kOutConsumerBytes;
          const bool issuer = warp == 0 && lane == 0;
          if (issuer) bulk_wait_read<0>();
          __syncwarp();  // the barrier is warp-aligned
          named_barrier(1 + wg, 128);
          stage_fp8_tile<PER_GROUP>(kp, acc, row_base, col_base, buffer, warp, lane);
          fence_proxy_async();
          named_barrier(1 + wg, 128);
          if (issuer) {
#pragma unroll
            for (int b = 0; b < TILE_N / 64; ++b) {
              tma_store_2d(&map_out, buffer + b * 64 * 128, tn * TILE_N + 64 * b,
                           tm * S::kTileM + wg * 64);
            }
            bulk_commit();
          }
          continue;
        }
      }
      // A short tile stores its own rows only: the wgmma's others read no row of A.
      store_fp8_tile<PER_GROUP>(kp, acc, row_base, col_base,
                                min(kp.p.m, tm * S::kTileM + S::kTileM));
    }
  }
  // The last TMA stores read this CTA's shared memory: they finish before it exits.
  if (S::kStagedStores && kp.staged_out && threadIdx.x % 128 == 0) bulk_wait<0>();
  // Other CTAs of the cluster may still arrive on this CTA's empty barriers: none exits first.
  if constexpr (CLUSTER > 1) cluster_sync();
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

template <int CONSUMERS, int TILE_N, int STAGES, int CLUSTER, bool PROMOTED, bool PER_GROUP,
          bool W_BLOCK, int GSUB = 1, int ROWS = 64 * CONSUMERS>
cudaError_t launch_fp8_config(const Fp8GemmProblem& p, int ctas, bool stage_boxes,
                              cudaStream_t stream) {
  static_assert(128 % TILE_N == 0, "a tile in one 128-column block of weight scales (W_BLOCK)");
  using S = Fp8Shape<CONSUMERS, TILE_N, STAGES, CLUSTER, PER_GROUP, GSUB, ROWS>;
  auto kernel = fp8_gemm_kernel<CONSUMERS, TILE_N, STAGES, CLUSTER, PROMOTED, PER_GROUP, W_BLOCK,
                                GSUB, ROWS>;
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
  if (kp.k_groups % GSUB != 0) return cudaErrorInvalidValue;  // launch_fp8_short falls back
  const size_t out_bytes = p.out_type == ElemType::kFP32 ? 4 : 2;
  kp.pair_out = (p.ldo % 2 == 0) &&
                (reinterpret_cast<uintptr_t>(p.out) % (2 * out_bytes) == 0);
  CUtensorMap map_a, map_w, map_out{};
  // TMA stores of the tile: 16-bit outputs whose rows are 16-byte aligned (TMA's strides), else
  // the registers' stores.
  const bool out16 = p.out_type == ElemType::kBF16 || p.out_type == ElemType::kFP16;
  kp.staged_out = S::kStagedStores && out16 && (p.ldo * 2) % 16 == 0 &&
                  reinterpret_cast<uintptr_t>(p.out) % 16 == 0 &&
                  encode_swizzled_tile_map(
                      &map_out,
                      p.out_type == ElemType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                      p.out, static_cast<uint64_t>(p.m), static_cast<uint64_t>(p.n),
                      static_cast<uint64_t>(p.ldo) * 2, 64, 64);
  if (!make_byte_map(&map_a, p.a, p.m, p.k, p.lda, kp.a_box_rows) ||
      !make_byte_map(&map_w, p.w, p.n, p.k, p.ldw, S::kWPartRows)) {
    return cudaErrorInvalidValue;
  }
  // One copy a stage per operand where K is whole groups (a 3-d view would read past a row's K
  // where the 2-d map zero-fills): A where its box is the tile's rows (so that the stage's groups
  // are the box's rows apart); W always (no cluster with several groups a stage). The same bytes
  // land in the same places as one copy a group, so the consumers and the bits are unchanged.
  kp.stage_boxes = 0;
  if (GSUB > 1 && stage_boxes && p.k % kGroupK == 0) {
    const uint64_t groups = static_cast<uint64_t>(kp.k_groups);
    CUtensorMap stage_a_map, stage_w_map;
    if (kp.a_box_rows == S::kTileM &&
        encode_swizzled_stage_map(&stage_a_map, CU_TENSOR_MAP_DATA_TYPE_UINT8, p.a,
                                  static_cast<uint64_t>(p.m), groups,
                                  static_cast<uint64_t>(p.lda), S::kTileM, GSUB)) {
      map_a = stage_a_map;
      kp.stage_boxes |= 1;
    }
    if (encode_swizzled_stage_map(&stage_w_map, CU_TENSOR_MAP_DATA_TYPE_UINT8, p.w,
                                  static_cast<uint64_t>(p.n), groups,
                                  static_cast<uint64_t>(p.ldw), TILE_N, GSUB)) {
      map_w = stage_w_map;
      kp.stage_boxes |= 2;
    }
  }
  // Tiles, or with clusters groups of CLUSTER row tiles.
  const long long total = cluster_tile_groups(kp.m_tiles, kp.n_tiles, CLUSTER, false);
  if (total > INT32_MAX) return cudaErrorInvalidValue;
  if constexpr (CLUSTER == 1) {
    const int grid = static_cast<int>(std::min<long long>(total, ctas));
    kernel<<<grid, S::kThreads, S::kSmemBytes, stream>>>(map_a, map_w, map_out, kp);
    return cudaGetLastError();
  } else {
    // Whole clusters: no more than the groups of tiles, the CTAs asked for, or the clusters the
    // device holds at once.
    static const int resident = max_active_clusters(kernel, CLUSTER, S::kThreads, S::kSmemBytes);
    if (resident <= 0) return cudaErrorInvalidConfiguration;
    const long long clusters = std::max(
        1LL, std::min({total, static_cast<long long>(ctas / CLUSTER),
                       static_cast<long long>(resident)}));
    const ClusterLaunch launch(static_cast<int>(clusters * CLUSTER), CLUSTER, S::kThreads,
                               S::kSmemBytes, stream);
    return cudaLaunchKernelEx(&launch.cfg, kernel, map_a, map_w, map_out, kp);
  }
}

constexpr bool fp8_config_is(int i, int consumers, int tile_n, int stages, int cluster = 1) {
  return kFp8GemmConfigs[i].tile_m == 64 * consumers && kFp8GemmConfigs[i].tile_n == tile_n &&
         kFp8GemmConfigs[i].stages == stages && kFp8GemmConfigs[i].cluster_m == cluster &&
         kFp8GemmConfigs[i].groups_per_stage == 1;
}
// A decode entry: rows of A (one consumer), 32 columns, four K groups a stage.
constexpr bool fp8_short_is(int i, int rows, int stages) {
  return kFp8GemmConfigs[i].tile_m == rows && kFp8GemmConfigs[i].tile_n == 32 &&
         kFp8GemmConfigs[i].stages == stages && kFp8GemmConfigs[i].cluster_m == 1 &&
         kFp8GemmConfigs[i].groups_per_stage == 4;
}
static_assert(kFp8GemmConfigCount == 9 && fp8_config_is(0, 2, 128, 6) &&
                  fp8_config_is(1, 1, 128, 8) && fp8_config_is(2, 1, 64, 12) &&
                  fp8_config_is(3, 1, 32, 16) && fp8_config_is(4, 2, 128, 6, 2) &&
                  fp8_short_is(5, 8, 9) && fp8_short_is(6, 16, 8) && fp8_short_is(7, 32, 6) &&
                  fp8_short_is(8, 64, 4),
              "launch_fp8's instantiations must follow kFp8GemmConfigs");

// A decode entry (ROWS rows of A, 32 columns, four K groups a stage) where the groups divide K's,
// else the same ring bytes one group a stage; scales per K group take entry 3's ring (Fp8Shape).
template <int ROWS, int STAGES, bool PROMOTED, bool PER_GROUP, bool W_BLOCK>
cudaError_t launch_fp8_short(const Fp8GemmProblem& p, int ctas, bool stage_boxes,
                             cudaStream_t stream) {
  if constexpr (PER_GROUP) {
    return launch_fp8_config<1, 32, 16, 1, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, stage_boxes,
                                                                        stream);
  } else {
    const int k_groups = (p.k + kGroupK - 1) / kGroupK;
    return k_groups % 4 == 0
               ? launch_fp8_config<1, 32, STAGES, 1, PROMOTED, false, W_BLOCK, 4, ROWS>(
                     p, ctas, stage_boxes, stream)
               : launch_fp8_config<1, 32, STAGES * 4, 1, PROMOTED, false, W_BLOCK, 1, ROWS>(
                     p, ctas, stage_boxes, stream);
  }
}

template <bool PROMOTED, bool PER_GROUP, bool W_BLOCK = false>
cudaError_t launch_fp8(const Fp8GemmProblem& p, int config, int ctas, bool boxes,
                       cudaStream_t stream) {
  switch (config) {
    // The 128-row tiles' rings hold a stage fewer with scales per K group (the scale ring does not
    // fit beside six).
    case 0: return launch_fp8_config<2, 128, PER_GROUP ? 5 : 6, 1, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    case 1: return launch_fp8_config<1, 128, 8, 1, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    case 2: return launch_fp8_config<1, 64, 12, 1, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    case 3: return launch_fp8_config<1, 32, 16, 1, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    case 4: return launch_fp8_config<2, 128, PER_GROUP ? 5 : 6, 2, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    case 5: return launch_fp8_short<8, 9, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    case 6: return launch_fp8_short<16, 8, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    case 7: return launch_fp8_short<32, 6, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    case 8: return launch_fp8_short<64, 4, PROMOTED, PER_GROUP, W_BLOCK>(p, ctas, boxes, stream);
    default: break;
  }
  return cudaErrorInvalidValue;
}

int ceil_div_int(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

}  // namespace

bool fp8_gemm_available() {
  static const bool available = [] {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, fp8_gemm_kernel<2, 128, 6, 1, true, false, false>) != cudaSuccess) {
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
      if (!c.auto_pick) continue;
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
  const bool boxes = plan.stage_boxes;
  if (!p.promoted) return launch_fp8<false, false>(p, plan.config, plan.ctas, boxes, stream);
  if (!p.per_group) return launch_fp8<true, false>(p, plan.config, plan.ctas, boxes, stream);
  return p.w_scale_blocks_of_128
             ? launch_fp8<true, true, true>(p, plan.config, plan.ctas, boxes, stream)
             : launch_fp8<true, true>(p, plan.config, plan.ctas, boxes, stream);
}

}  // namespace nvdet::kernels
