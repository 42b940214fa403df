// sm_90a path of the invariant GEMM: a persistent, warp-specialized kernel. wgmma.mma_async
// m64nNk16 (bf16/fp16 in, fp32 accumulate) fed by TMA (cp.async.bulk.tensor, 128-byte swizzle)
// through an mbarrier ring of STAGES k tiles; one producer warpgroup (one thread issues the TMA
// loads, running ahead into the CTA's next tile while the consumers finish the current one) and
// one or two consumer warpgroups of 64 rows each, which keep IN_FLIGHT wgmma groups running
// before handing a stage back. Each CTA walks the output tiles blockIdx.x, blockIdx.x +
// gridDim.x, ... in grouped order. The tile shapes are kGemmWgmmaConfigs. Operands TMA cannot
// address are staged first (gemm_stage_operands.cu).
//
// Clusters (entries with cluster_m = CLUSTER > 1, plain launches): CLUSTER CTAs walk groups of
// CLUSTER vertically adjacent tiles of one tile column together (CTA rank r takes the r-th), so
// they need the same W tile at every k step. Each producer loads 1/CLUSTER of it and multicasts
// that part into the same ring slot of every CTA of the cluster; every CTA's full barrier expects
// its own A and the whole W. A slot is then written by every producer of the cluster, so each
// CTA's empty barrier counts the consumer warps of all of them, and a producer refills a slot only
// once every CTA has finished reading it. A tile past M (an odd count of row tiles) is computed
// on rows of A that exist and never stored. The swapped form's clusters (A on the multicast side)
// take one A tile and CLUSTER horizontally adjacent W tiles; a W tile past N is computed on W's
// first rows and never stored. None of this touches arithmetic: the shared-memory tile a consumer
// reads holds the same values whichever CTA loaded it.
//
// Invariance argument: every output element belongs to one accumulator register of one consumer
// thread. That register is set to 0 at the start of its tile and then receives one wgmma
// m64nNk16 per 16-wide k step, k = 0, 16, 32, ... in increasing order over the whole of K (the
// last 64-wide k tile zero-filled past K by TMA, identically whatever M is); then store_tile adds
// the bias and rounds once (the steps of finish_element). Neither the tile's position, nor the
// tile shape, nor the CTA count, nor the tile order, nor how many groups are in flight changes
// that sequence; the tile width N only changes how many columns one instruction covers (the GPU
// tests force every configuration and CTA count and compare bits, which also checks that the
// per-element result does not depend on N: it did not, on the H200).
//
// Reduction order of one element:
//   out = round(bias + wgmma_k(K'-16)(... wgmma_k16(wgmma_k0(0)) ...)), K' = K rounded up to 64.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cluster_launch.cuh"
#include "kernels/gemm_grouped_tiles.cuh"
#include "kernels/gemm_invariant_device.cuh"
#include "kernels/gemm_wgmma_instr.cuh"
#include "kernels/kernel_image.cuh"
#include "kernels/sm90_async.cuh"
#include "kernels/tensor_map.cuh"
#include "kernels/vec_io.cuh"

#ifdef NVDET_SM90A_DEVICE
#define NVDET_WGMMA_DEVICE 1
#endif

namespace nvdet::kernels {
namespace {

constexpr int kTileK = 64;  // 128 bytes: one swizzle atom row
// Rows of A per TMA box in grouped launches: an expert gets a few rows per tile at decode sizes,
// and loading the tile's 64 or 128 rows would move up to 8x the rows that are used.
constexpr int kGroupedABoxRows = 16;

// KSUB: 64-wide k tiles per ring stage (each its own TMA boxes, one after another in the stage),
// so that a stage asks DRAM for KSUB x 128 consecutive bytes of each W row, and the ring's
// barriers and waits are paid once per KSUB k tiles.
//
// ROWS: output rows a tile takes (64 per consumer, or fewer with one consumer: decode sizes). A
// consumer's wgmma reads 64 rows of A whatever ROWS is; with ROWS < 64 only ROWS rows of A have
// room in a stage, and the instruction's other rows read the shared memory that follows (the
// stage's W, the next stage). Those rows' results are never stored (row_end stops at ROWS), and
// the rows of an MMA do not mix, so the ROWS rows that are stored get the bits a 64-row tile
// gives them. The ring's bytes go to W instead: at m <= 8 a 64-row A tile took 2/3 of them.
template <int CONSUMERS, int TILE_N, int STAGES, int CLUSTER = 1, int KSUB = 1,
          int ROWS = 64 * CONSUMERS>
struct WgmmaShape {
  static_assert(ROWS == 64 * CONSUMERS || (CONSUMERS == 1 && ROWS % 8 == 0 && ROWS < 64),
                "fewer rows than the wgmma's 64 only with one consumer, in whole swizzle atoms");
  static constexpr int kTileM = ROWS;
  static constexpr int kTileN = TILE_N;
  static constexpr int kASubBytes = kTileM * kTileK * 2;  // one k tile of A (at most kTileM rows)
  static constexpr int kWSubBytes = TILE_N * kTileK * 2;
  // The part of the W tile one CTA of a cluster loads: whole 8-row swizzle atoms (1024 bytes),
  // so the 128-byte swizzle of each part is the one a single box would give.
  static constexpr int kWPartRows = TILE_N / CLUSTER;
  static_assert(kWPartRows % 8 == 0, "W parts of whole swizzle atoms");
  // Stage: KSUB A sub-tiles, then KSUB W sub-tiles (each a multiple of 1024 bytes).
  static constexpr int kStageBytes = KSUB * (kASubBytes + kWSubBytes);
  static constexpr int kStages = STAGES;
  static constexpr int kThreads = 128 * (CONSUMERS + 1);
  static constexpr int kAccRegs = TILE_N / 2;
  static_assert(kAccRegs == Wgmma<TILE_N, __nv_bfloat16>::kRegs, "one accumulator per 2 columns");
  // The bytes a wgmma reads past the last stage's last A sub-tile (short tiles only): the ring is
  // followed by at least that much shared memory.
  static constexpr int kOverreadBytes = (64 - ROWS % 64) % 64 * kTileK * 2;
  // Tiles, then the barriers; +1024 so the tiles can be aligned to the 128B-swizzle atom.
  static constexpr int kSmemBytes =
      kStages * kStageBytes + std::max(2 * kStages * 8, kOverreadBytes) + 1024;
  // The epilogue's staging for TMA stores (plain launches, 16-bit outputs): each consumer's 64
  // rows, kStageCols columns at a time (64-column boxes of 128 bytes a row, 128-byte swizzled),
  // after the barriers where grouped launches keep their group table (+1024: the boxes are
  // 1024-aligned). Whole 64-row tiles of whole boxes only, one CTA per SM, and only where it fits.
  static constexpr int kStageCols = TILE_N % 128 == 0 ? 128 : 64;
  static constexpr int kStagingBytes = CONSUMERS * 64 * kStageCols * 2 + 1024;
  static constexpr bool kStagedStores =
      ROWS == 64 * CONSUMERS && TILE_N % 64 == 0 && kSmemBytes + kStagingBytes <= 227 * 1024;
};

// Grouped launches: every group's first tile and first row, in shared memory
// (kernels/gemm_grouped_tiles.cuh walks them). It follows the ring's barriers in the dynamic
// shared memory of grouped launches only: as a static array it made every plain launch 4 KiB
// larger, which put entry 5 (193 KiB of ring) past the 196 KiB shared-memory carveout.
struct GroupTable {
  int first_tile[kGemmMaxGroups + 1];
  int first_row[kGemmMaxGroups + 1];
};
constexpr int kGroupTableBytes = static_cast<int>(sizeof(GroupTable));

#ifdef NVDET_WGMMA_DEVICE

// Columns past N or a row store that cannot take two columns at once: the generic per-element
// path (kept out of line so that the unrolled epilogue stays small enough to unroll).
__device__ __noinline__ void store_edge(const GemmKernelParams& p, int row, int col, float v0,
                                        float v1) {
  finish_element(p, row, col, v0);
  if (col + 1 < p.n) finish_element(p, row, col + 1, v1);
}

// Columns [first_col, first_col + COLS) of a consumer's 64 rows (accumulator groups j of those
// columns), + bias and rounded as store_tile does, written into `buffer` as the output map's
// 64-column boxes read them: 16-byte chunk c of row r at chunk c ^ (r % 8), so that a warp's
// stores of one column pair fall in 32 different banks. Columns past N read the last bias value
// (TMA does not store them).
template <class T, class OutT, int COLS, int R>
__device__ __forceinline__ void stage_columns(const GemmKernelParams& p, const float (&acc)[R],
                                              int chunk, int col_base, uint32_t buffer, int warp,
                                              int lane) {
  const T* bias = static_cast<const T*>(p.bias);
  constexpr int kGroups = COLS / 8;  // accumulator column groups in the chunk
  float b[kGroups][2];
#pragma unroll
  for (int jj = 0; jj < kGroups; ++jj) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int col = min(col_base + 8 * (chunk * kGroups + jj) + e, p.n - 1);
      b[jj][e] = bias ? static_cast<float>(bias[col]) : 0.0f;
    }
  }
#pragma unroll
  for (int jj = 0; jj < kGroups; ++jj) {
    const int j = chunk * kGroups + jj;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp * 16 + (lane >> 2) + 8 * h;  // row within the consumer's 64
      float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
      if (bias) {
        v0 = __fadd_rn(v0, b[jj][0]);
        v1 = __fadd_rn(v1, b[jj][1]);
      }
      const uint32_t at = buffer + (jj / 8) * 64 * 128 + r * 128 + (((jj % 8) ^ (r % 8)) << 4) +
                          ((lane & 3) << 2);
      st_shared_u32(at, pack2<OutT>(v0, v1));
    }
  }
}

// The tile's epilogue, for one output type: per element + bias (in T, the input type) in fp32,
// then one rounding — the same steps as finish_element. Accumulator register 4j + e holds row
// row_base + 8 (e >> 1), column col_base + 8j + (e & 1).
template <class T, class OutT, int R>
__device__ __forceinline__ void store_tile(const GemmKernelParams& p, const float (&acc)[R],
                                           int row_base, int col_base, int row_end) {
  // store_edge takes p by reference, and the stores below could alias it as far as the compiler
  // knows: read what the loop needs once, not after every store.
  const T* bias = static_cast<const T*>(p.bias);
  OutT* out = static_cast<OutT*>(p.out);
  const long long ldo = p.ldo;
  const int n = p.n;
  const bool pair_out = p.pair_out != 0;
#pragma unroll
  for (int j = 0; j < R / 4; ++j) {
    const int col = col_base + 8 * j;
    if (col >= n) break;  // columns only grow with j
    const bool pair = pair_out && col + 1 < n;
    float b0 = 0.0f, b1 = 0.0f;
    if (bias && pair) {
      b0 = static_cast<float>(bias[col]);
      b1 = static_cast<float>(bias[col + 1]);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row_base + 8 * h;
      if (row >= row_end) continue;
      float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
      if (pair) {
        if (bias) {
          v0 = __fadd_rn(v0, b0);
          v1 = __fadd_rn(v1, b1);
        }
        store2(out + static_cast<long long>(row) * ldo + col, v0, v1);
      } else {
        store_edge(p, row, col, v0, v1);
      }
    }
  }
}

// Where one output tile lies. Plain: tile (tm, tn) of [m, n] in grouped_tile's order, rows below
// m. Grouped: grouped_tile_site.
// Clusters (CLUSTER > 1): `tile` counts groups of CLUSTER vertically adjacent tiles, and the CTA
// of cluster rank `rank` takes the rank-th of its group; a tile past M reads A's first rows
// (which exist: a box fully past M is never asked of TMA) and stores nothing (row_end).
template <int TILE_M, int TILE_N, int CLUSTER>
__device__ __forceinline__ GroupedTileSite tile_site(const GemmKernelParams& p,
                                                     const GroupTable& t, int tile, int rank) {
  if (p.groups > 0) {
    return grouped_tile_site(t.first_tile, t.first_row, p.groups, TILE_M, TILE_N, p.n, p.n_tiles,
                             tile);
  }
  int tm, tn;
  if constexpr (CLUSTER > 1) {
    cluster_tile(tile, p.m_tiles, p.n_tiles, CLUSTER, rank, &tm, &tn);
  } else {
    grouped_tile(tile, p.m_tiles, p.n_tiles, 8, &tm, &tn);
  }
  GroupedTileSite site;
  site.out_row = tm * TILE_M;
  site.a_row = tm < p.m_tiles ? site.out_row : 0;
  site.w_row = tn * TILE_N;
  site.row_end = p.m;
  site.col = tn * TILE_N;
  return site;
}

// The swapped form's tile (plain launches): output rows [tm * A_ROWS, +A_ROWS), rows of A that
// the ring's N side (map_w) holds, and output columns [tn * W_ROWS, +W_ROWS), rows of W that the
// ring's 64-row side (map_a) holds; p.m_tiles and p.n_tiles count those. Clusters (CLUSTER > 1):
// `tile` counts groups of CLUSTER horizontally adjacent tiles (one A tile, which they share), and
// the CTA of rank `rank` takes the rank-th; a tile past N reads W's first rows and stores nothing
// (store_tile_swapped stops at N).
template <int W_ROWS, int A_ROWS, int CLUSTER>
__device__ __forceinline__ GroupedTileSite swapped_tile_site(const GemmKernelParams& p, int tile,
                                                             int rank) {
  int tm, tn;
  const bool inside = swapped_cluster_tile(tile, p.m_tiles, p.n_tiles, CLUSTER, rank, &tm, &tn);
  GroupedTileSite site;
  site.out_row = site.w_row = tm * A_ROWS;
  site.col = tn * W_ROWS;
  site.a_row = inside ? site.col : 0;
  site.row_end = p.m;
  return site;
}

// The swapped form's epilogue: accumulator register 4j + 2h + e holds W row (output column)
// col0 + 8h and A row (output row) row0 + 8j + e of the tile, which finish_element completes as
// every path does. The instruction's rows past W_ROWS read no W row and are not stored.
template <int W_ROWS, int R>
__device__ __forceinline__ void store_tile_swapped(const GemmKernelParams& p, const float (&acc)[R],
                                                   int w_row, int col0, int row0) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int col = col0 + 8 * h;
    if (w_row + 8 * h >= W_ROWS || col >= p.n) continue;
#pragma unroll
    for (int j = 0; j < R / 4; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int row = row0 + 8 * j + e;
        if (row < p.m) finish_element(p, row, col, acc[4 * j + 2 * h + e]);
      }
    }
  }
}

// Fills the group table (grouped launches) and returns the number of tiles (of clusters' groups
// of tiles, with clusters: along M, or along N in the swapped form).
template <int TILE_M, int CLUSTER, bool SWAP>
__device__ __forceinline__ int load_group_table(const GemmKernelParams& p, GroupTable& t) {
  if (p.groups == 0) {
    return static_cast<int>(cluster_tile_groups(p.m_tiles, p.n_tiles, CLUSTER, SWAP));
  }
  for (int g = threadIdx.x; g <= p.groups; g += blockDim.x) t.first_row[g] = p.group_rows[g];
  __syncthreads();
  if (threadIdx.x == 0) grouped_first_tiles(t.first_row, p.groups, TILE_M, p.n_tiles, t.first_tile);
  __syncthreads();
  return t.first_tile[p.groups];
}

#endif  // NVDET_WGMMA_DEVICE

// IN_FLIGHT: wgmma groups (one per ring stage) a consumer leaves running before it waits; the
// stage a group read is handed back to the producer once the group is done. More than one hides
// the wgmma latency when a stage holds little work (narrow tiles, one k tile a stage).
// CLUSTER: the launch's cluster size (1: no cluster; else plain launches only, gridDim.x a
// multiple of it, the W map's box kWPartRows rows). KSUB: k tiles a stage (WgmmaShape).
// SWAP: the swapped form (kGemmWgmmaConfigs): map_a holds W (ROWS rows a tile), map_w holds A
// (TILE_N rows a tile), and the tile is stored transposed; one consumer, no grouping. Its
// clusters share the map_w side as every cluster does, which here is A: CTAs of one A tile and
// adjacent W tiles (swapped_tile_site).
template <int CONSUMERS, int TILE_N, int STAGES, int MIN_BLOCKS, int IN_FLIGHT, int CLUSTER,
          int KSUB, class T, int ROWS = 64 * CONSUMERS, bool SWAP = false>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), MIN_BLOCKS)
    wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_w,
                      // The output as 64 x 64 boxes (128-byte swizzle), where p.staged_out.
                      const __grid_constant__ CUtensorMap map_out,
                      // __grid_constant__: store_edge takes p by reference, and a plain by-value
                      // parameter is then copied to local memory, whose loads the compiler cannot
                      // prove warp-uniform; the loop bounds and stage addresses read from it then
                      // left the uniform datapath (R2UR moves before each wgmma's descriptors and
                      // a WARPSYNC in the k loop, in the SASS of every build from ad7750e on).
                      const __grid_constant__ GemmKernelParams p) {
#ifdef NVDET_WGMMA_DEVICE
  using S = WgmmaShape<CONSUMERS, TILE_N, STAGES, CLUSTER, KSUB, ROWS>;
  static_assert(!SWAP || CONSUMERS == 1, "the swapped form: one consumer");
  constexpr bool kStagedStores = S::kStagedStores && !SWAP;
  // Where tile `tile` of this CTA lies (and which rows each ring side loads for it).
  auto site_of = [&](const GroupTable& table, int tile, int rank) {
    if constexpr (SWAP) {
      (void)table;
      return swapped_tile_site<ROWS, TILE_N, CLUSTER>(p, tile, rank);
    } else {
      return tile_site<S::kTileM, S::kTileN, CLUSTER>(p, table, tile, rank);
    }
  };
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = smem_addr(smem_raw);
  const uint32_t tiles = (raw + 1023) & ~1023u;
  const uint32_t bars = tiles + S::kStages * S::kStageBytes;
  auto full_bar = [&](int s) { return bars + 8 * s; };
  auto empty_bar = [&](int s) { return bars + 8 * (S::kStages + s); };
  // Stage s: the A sub-tiles (kTileM rows of 128 bytes each), then the W sub-tiles.
  auto stage_a = [&](int s, int sub) {
    return tiles + s * S::kStageBytes + sub * S::kASubBytes;
  };
  auto stage_w = [&](int s, int sub) {
    return tiles + s * S::kStageBytes + KSUB * S::kASubBytes + sub * S::kWSubBytes;
  };
  // Ring stages over K: KSUB k tiles each (the launch takes KSUB > 1 only where it divides the k
  // tiles: a wgmma in a branch, which a partial last stage would need, makes ptxas serialize every
  // wgmma of the kernel, and extra k tiles of zeros would add +0 to a -0 sum).
  const int k_stages = p.k_tiles / KSUB;

  const int warpgroup = threadIdx.x / 128;
  // Grouped launches fill it before any tile is walked; plain launches have no room for it and
  // never touch it.
  GroupTable& group_table = *reinterpret_cast<GroupTable*>(
      smem_raw + (bars - raw) + 2 * 8 * S::kStages);
  const int total_tiles = load_group_table<S::kTileM, CLUSTER, SWAP>(p, group_table);
  // With clusters, CTAs walk in clusters: the cluster's index and count take the place of the
  // CTA's, and the rank picks the CTA's tile of the cluster's group.
  // (A 1-D grid's clusters are runs of CLUSTER consecutive CTAs, ranked in blockIdx order; read
  // from blockIdx rather than %cluster_ctarank so the compiler may re-read it instead of keeping
  // it live beside the accumulators.)
  const int rank = static_cast<int>(blockIdx.x % CLUSTER);
  const int first_tile = blockIdx.x / CLUSTER, tile_step = gridDim.x / CLUSTER;

  if (threadIdx.x == 0) {
    // The descriptors' loads overlap the barriers' set-up (the copies' first use waited for them).
    tma_prefetch_map(&map_a);
    tma_prefetch_map(&map_w);
    if (p.staged_out) tma_prefetch_map(&map_out);
    for (int s = 0; s < S::kStages; ++s) {
      mbar_init(full_bar(s), 1);
      // One arrival per consumer warp of every CTA whose producer writes the slot.
      mbar_init(empty_bar(s), 4 * CONSUMERS * CLUSTER);
    }
    mbar_init_fence();
  }
  // With clusters, no CTA may signal or multicast into another before its barriers exist.
  if constexpr (CLUSTER > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }

  // Ring slot s holds k stage t (of some output tile) where s = t % kStages; t counts the k
  // stages this CTA has streamed over all its output tiles, so the barrier phases carry on from
  // tile to tile. A is loaded a_box_rows rows at a time (fewer than the tile's rows when M is
  // small): the rows of shared memory past them hold stale data, which only reaches output rows
  // past M (past the group, in grouped launches), never stored (rows of an MMA do not mix).
  if (warpgroup == 0) {
    if constexpr (MIN_BLOCKS == 1) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      int t = 0;
      for (int tile = first_tile; tile < total_tiles; tile += tile_step) {
        const GroupedTileSite site = site_of(group_table, tile, rank);
        // Grouped: only the boxes that hold the group's rows of this tile (an expert's few rows
        // at decode sizes, not the tile's 64 or 128); plain: one box.
        const int a_boxes = p.groups > 0 ? grouped_a_boxes(site, S::kTileM, p.a_box_rows) : 1;
        for (int ks = 0; ks < k_stages; ++ks, ++t) {
          const int s = t % S::kStages;
          mbar_wait(empty_bar(s), ((t / S::kStages) & 1) ^ 1);
          mbar_expect_tx(full_bar(s), KSUB * (a_boxes * p.a_box_rows * 128 + S::kWSubBytes));
          // Each side whose map holds whole stages (launch_config): its k tiles of the stage in
          // one copy; the other side below, one copy a k tile.
          if (KSUB > 1 && (p.stage_boxes & 1)) {
            tma_load_3d(stage_a(s, 0), &map_a, full_bar(s), 0, site.a_row, ks * KSUB);
          }
          if (KSUB > 1 && (p.stage_boxes & 2)) {
            tma_load_3d(stage_w(s, 0), &map_w, full_bar(s), 0, site.w_row, ks * KSUB);
          }
          for (int sub = 0; sub < KSUB; ++sub) {
            const int k0 = (ks * KSUB + sub) * kTileK;
            for (int b = 0; b < a_boxes && !(KSUB > 1 && (p.stage_boxes & 1)); ++b) {
              tma_load_2d(stage_a(s, sub) + b * p.a_box_rows * 128, &map_a, full_bar(s), k0,
                          site.a_row + b * p.a_box_rows);
            }
            if (KSUB > 1 && (p.stage_boxes & 2)) {
              // Loaded whole above.
            } else if constexpr (CLUSTER > 1) {
              // This CTA's part of the W tile, into the same slot of every CTA of the cluster
              // (each of which expects the whole tile on its own full barrier).
              tma_load_2d_multicast(stage_w(s, sub) + rank * S::kWPartRows * 128, &map_w,
                                    full_bar(s), k0, site.w_row + rank * S::kWPartRows,
                                    static_cast<uint16_t>((1u << CLUSTER) - 1));
            } else {
              tma_load_2d(stage_w(s, sub), &map_w, full_bar(s), k0, site.w_row);
            }
          }
        }
      }
    }
  } else {
    if constexpr (MIN_BLOCKS == 1) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    // Consumer index: rows [wg * 64, wg * 64 + 64) of the tile. Read through a shuffle so that the
    // compiler sees it warp-uniform and keeps the descriptors built from it in uniform registers.
    const int wg = __shfl_sync(0xffffffffu, warpgroup - 1, 0);
    // Slot 0's descriptors of this consumer's rows of A and of W; the k loop adds offsets.
    const uint64_t desc_a0 = smem_desc(stage_a(0, 0) + wg * 64 * 128);
    const uint64_t desc_w0 = smem_desc(stage_w(0, 0));
    RingCursor<S::kStages> ring;  // the slot of stage t
    // The slot `back` stages before the cursor's (back <= IN_FLIGHT < kStages).
    auto slot_back = [&](int back) {
      const int s = ring.slot - back;
      return s < 0 ? s + S::kStages : s;
    };
    const int lane = threadIdx.x & 31, warp = (threadIdx.x / 32) & 3;
    // Hands ring slot s back: to this CTA's producer, and with clusters to every producer that
    // writes into it.
    auto release = [&](int s) {
      mbar_arrive(empty_bar(s));
      if constexpr (CLUSTER > 1) {
#pragma unroll
        for (int r = 1; r < CLUSTER; ++r) mbar_arrive_cluster(empty_bar(s), (rank + r) % CLUSTER);
      }
    };
    int t = 0;
    for (int tile = first_tile; tile < total_tiles; tile += tile_step) {
      const GroupedTileSite site = site_of(group_table, tile, rank);
      float acc[S::kAccRegs];
      zero_accumulators(acc);
      const int first_t = t;
      for (int ks = 0; ks < k_stages; ++ks, ++t, ring.advance()) {
        mbar_wait(full_bar(ring.slot), ring.phase);
        fence_operands(acc);
        wgmma_fence();
        // Descriptors by offset from slot 0's (16-byte units): the stage, the sub-tile, 32 bytes
        // of K a step.
        const uint32_t units = static_cast<uint32_t>(ring.slot) * (S::kStageBytes >> 4);
#pragma unroll
        for (int sub = 0; sub < KSUB; ++sub) {
#pragma unroll
          for (int kk = 0; kk < kTileK / 16; ++kk) {
            const uint64_t da =
                desc_advance(desc_a0, units + ((sub * S::kASubBytes + kk * 32) >> 4));
            const uint64_t dw =
                desc_advance(desc_w0, units + ((sub * S::kWSubBytes + kk * 32) >> 4));
            Wgmma<TILE_N, T>::mma(acc, da, dw);
          }
        }
        wgmma_commit();
        wgmma_wait<IN_FLIGHT>();  // groups up to t - IN_FLIGHT are done with shared memory
        // One arrival per warp, after the whole warp's wait (wait_group is warp-aligned): the
        // stage is free once every consumer warp has arrived. A per-thread arrival put 128
        // shared-memory atomics on one barrier per consumer and k tile.
        if (lane == 0 && t - IN_FLIGHT >= first_t) release(slot_back(IN_FLIGHT));
      }
      wgmma_wait<0>();
      fence_operands(acc);
      if (lane == 0) {
        for (int q = max(first_t, t - IN_FLIGHT); q < t; ++q) release(slot_back(t - q));
      }

      if constexpr (SWAP) {
        const int w_row = warp * 16 + (lane >> 2);
        store_tile_swapped<ROWS>(p, acc, w_row, site.col + w_row,
                                 site.out_row + ((lane & 3) << 1));
        continue;
      }
      const int row_base = site.out_row + wg * 64 + warp * 16 + (lane >> 2);
      const int col_base = site.col + ((lane & 3) << 1);
      // A short tile (ROWS < 64) stores its own rows only: the wgmma's others read no A row.
      const int row_end = min(site.row_end, site.out_row + S::kTileM);
      if constexpr (kStagedStores) {
        if (p.staged_out) {
          // This consumer's rows through its staging buffer, kStageCols columns at a time: the
          // previous TMA stores must have read the buffer (one thread issues them and waits),
          // every thread writes its values and orders them before the async proxy, and one
          // thread stores the boxes; the last chunk's writes are not waited for (the next tile's
          // main loop overlaps them). Plain launches only: TMA clips the boxes at M and N.
          const uint32_t buffer =
              ((bars + 2 * 8 * S::kStages + 1023) & ~1023u) + wg * 64 * S::kStageCols * 2;
          const bool issuer = warp == 0 && lane == 0;
#pragma unroll
          for (int chunk = 0; chunk < S::kTileN / S::kStageCols; ++chunk) {
            if (issuer) bulk_wait_read<0>();
            __syncwarp();  // the barrier is warp-aligned
            named_barrier(1 + wg, 128);
            if (p.out_type == static_cast<int>(GemmType::kBF16)) {
              stage_columns<T, __nv_bfloat16, S::kStageCols>(p, acc, chunk, col_base, buffer,
                                                             warp, lane);
            } else {
              stage_columns<T, __half, S::kStageCols>(p, acc, chunk, col_base, buffer, warp,
                                                      lane);
            }
            fence_proxy_async();
            named_barrier(1 + wg, 128);
            if (issuer) {
#pragma unroll
              for (int box = 0; box < S::kStageCols / 64; ++box) {
                tma_store_2d(&map_out, buffer + box * 64 * 128,
                             site.col + chunk * S::kStageCols + 64 * box,
                             site.out_row + wg * 64);
              }
              bulk_commit();
            }
          }
          continue;
        }
      }
      if (p.out_type == static_cast<int>(GemmType::kBF16)) {
        store_tile<T, __nv_bfloat16>(p, acc, row_base, col_base, row_end);
      } else if (p.out_type == static_cast<int>(GemmType::kFP16)) {
        store_tile<T, __half>(p, acc, row_base, col_base, row_end);
      } else {
        store_tile<T, float>(p, acc, row_base, col_base, row_end);
      }
    }
  }
  // The last TMA stores read this CTA's shared memory: they finish before it exits.
  if (kStagedStores && p.staged_out && threadIdx.x % 128 == 0) bulk_wait<0>();
  // Other CTAs of the cluster may still arrive on this CTA's empty barriers: none exits first.
  if constexpr (CLUSTER > 1) cluster_sync();
#else
  __trap();  // never launched: wgmma_available() is false without sm_90a code
#endif
}

// A row-major [rows, k] 16-bit matrix as a TMA map with a box of box_rows x 64 elements.
bool make_map(CUtensorMap* map, const void* base, int rows, int k, long long ld, int box_rows,
              CUtensorMapDataType type) {
  return encode_swizzled_tile_map(map, type, base, static_cast<uint64_t>(rows),
                                  static_cast<uint64_t>(k), static_cast<uint64_t>(ld) * 2, kTileK,
                                  static_cast<uint32_t>(box_rows));
}

template <int CONSUMERS, int TILE_N, int STAGES, int MIN_BLOCKS, int IN_FLIGHT, int CLUSTER,
          int KSUB, class T, int ROWS = 64 * CONSUMERS, bool SWAP = false>
cudaError_t launch_config(const GemmKernelParams& p, int ctas, CUtensorMapDataType type,
                          cudaStream_t stream) {
  using S = WgmmaShape<CONSUMERS, TILE_N, STAGES, CLUSTER, KSUB, ROWS>;
  constexpr bool kStagedStores = S::kStagedStores && !SWAP;
  static_assert(IN_FLIGHT >= 1 && IN_FLIGHT < STAGES, "a stage must stay free for the producer");
  // With the group table of grouped launches.
  static_assert(S::kSmemBytes + kGroupTableBytes <= 227 * 1024,
                "an sm_90 CTA's shared memory");
  auto kernel = wgmma_gemm_kernel<CONSUMERS, TILE_N, STAGES, MIN_BLOCKS, IN_FLIGHT, CLUSTER, KSUB,
                                  T, ROWS, SWAP>;
  // The tail after the barriers: the group table (grouped launches) or the staging (plain
  // launches that stage their stores), never both.
  constexpr int kTailBytes = std::max(kGroupTableBytes, kStagedStores ? S::kStagingBytes : 0);
  static const cudaError_t attr = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmemBytes + kTailBytes);
  if (attr != cudaSuccess) return attr;
  if ((CLUSTER > 1 || SWAP) && p.groups > 0) return cudaErrorInvalidValue;  // plain launches only
  // A's box: the tile's rows, or M rounded up to 8 when M is smaller (decode sizes move less).
  // The rows of shared memory past the box only reach output rows past M. Grouped: boxes of at
  // most kGroupedABoxRows rows, as many as a tile's group has rows (each lands at a multiple of
  // 2 KiB, so the 128-byte swizzle is the one a single box would give); a group's tile may start
  // at any row, and rows of A past the group belong to the next group or lie past M, and only
  // reach rows that are not stored either.
  const bool grouped = p.groups > 0;
  const int whole_box = p.m >= S::kTileM ? S::kTileM : ((p.m + 7) / 8) * 8;
  const int a_box_rows = grouped ? std::min(whole_box, kGroupedABoxRows) : whole_box;
  const long long w_rows = grouped ? static_cast<long long>(p.n) * p.groups : p.n;
  if (w_rows > INT32_MAX) return cudaErrorInvalidValue;
  CUtensorMap map_a, map_w;
  const int a_cols = p.a_cols > 0 ? p.a_cols : p.k;
  if constexpr (SWAP) {
    // W's rows on the 64-row side (ROWS a box), A's on the N side (TILE_N a box, or the
    // kWPartRows a cluster's CTA multicasts; the rows past M zero-filled by TMA, a part wholly
    // past M included, and reaching only output rows past M).
    if (!make_map(&map_a, p.w, p.n, p.k, p.ldw, ROWS, type) ||
        !make_map(&map_w, p.a, p.m, a_cols, p.lda, S::kWPartRows, type)) {
      return cudaErrorInvalidValue;
    }
  } else if (!make_map(&map_a, p.a, p.m, a_cols, p.lda, a_box_rows, type) ||
             !make_map(&map_w, p.w, static_cast<int>(w_rows), p.k, p.ldw, S::kWPartRows, type)) {
    return cudaErrorInvalidValue;
  }
  GemmKernelParams q = p;
  q.a_box_rows = SWAP ? ROWS : a_box_rows;
  // One copy a ring stage per operand (several k tiles a stage) where K is whole k tiles: for A
  // where it is read over all of K (not a row read in place past which TMA zero-fills) and its
  // box is the tile's rows, one box a k tile (so that the stage's sub-tiles are the box's rows
  // apart); for W where no cluster splits the tile into parts. The stage's bytes and layout are
  // the per-k-tile copies' own, so the consumers and the bits are unchanged.
  q.stage_boxes = 0;
  if (KSUB > 1 && p.stage_boxes != 0 && p.k % kTileK == 0) {
    const uint64_t k_tiles = static_cast<uint64_t>(p.k / kTileK);
    const bool a_whole = a_cols == p.k;
    auto stage_map = [&](CUtensorMap* map, const void* base, long long rows, long long ld,
                         int box_rows) {
      return encode_swizzled_stage_map(map, type, base, static_cast<uint64_t>(rows), k_tiles,
                                       static_cast<uint64_t>(ld) * 2,
                                       static_cast<uint32_t>(box_rows), KSUB);
    };
    CUtensorMap stage_a_map, stage_w_map;
    // map_a's side: W in the swapped form, else A.
    const bool a_side = SWAP ? stage_map(&stage_a_map, p.w, p.n, p.ldw, ROWS)
                             : !grouped && a_whole && q.a_box_rows == S::kTileM &&
                                   stage_map(&stage_a_map, p.a, p.m, p.lda, a_box_rows);
    // map_w's side: A in the swapped form, else W; never a cluster's multicast parts (a part's
    // k tiles are TILE_N rows apart in the stage, not its own rows).
    const bool w_side = CLUSTER == 1 &&
                        (SWAP ? a_whole && stage_map(&stage_w_map, p.a, p.m, p.lda, TILE_N)
                              : stage_map(&stage_w_map, p.w, w_rows, p.ldw, S::kWPartRows));
    if (a_side) {
      map_a = stage_a_map;
      q.stage_boxes |= 1;
    }
    if (w_side) {
      map_w = stage_w_map;
      q.stage_boxes |= 2;
    }
  }
  // TMA stores of the tile: plain launches of 16-bit outputs whose rows are 16-byte aligned.
  CUtensorMap map_out{};
  const bool out16 = p.out_type == static_cast<int>(GemmType::kBF16) ||
                     p.out_type == static_cast<int>(GemmType::kFP16);
  q.staged_out = kStagedStores && !grouped && out16 && (p.ldo * 2) % 16 == 0 &&
                 reinterpret_cast<uintptr_t>(p.out) % 16 == 0 &&
                 make_map(&map_out, p.out, p.m, p.n, p.ldo, 64,
                          p.out_type == static_cast<int>(GemmType::kBF16)
                              ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                              : CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  const int tail = grouped ? kGroupTableBytes : (q.staged_out ? S::kStagingBytes : 0);
  // The swapped form's tiles: TILE_N rows of A by ROWS columns (rows of W).
  q.m_tiles = SWAP ? (p.m + TILE_N - 1) / TILE_N : (p.m + S::kTileM - 1) / S::kTileM;
  q.n_tiles = SWAP ? (p.n + ROWS - 1) / ROWS : (p.n + S::kTileN - 1) / S::kTileN;
  // Grouped: at most every row's block plus one partial block per group.
  const long long total =
      static_cast<long long>(q.m_tiles + (grouped ? p.groups : 0)) * q.n_tiles;
  if (total > INT32_MAX) return cudaErrorInvalidValue;
  if constexpr (CLUSTER == 1) {
    const int grid = static_cast<int>(total < ctas ? total : ctas);
    kernel<<<grid, S::kThreads, S::kSmemBytes + tail, stream>>>(map_a, map_w, map_out, q);
    return cudaGetLastError();
  } else {
    // Whole clusters: no more than the groups of CLUSTER row tiles, the CTAs asked for, or the
    // clusters the device holds at once.
    static const int resident = max_active_clusters(
        kernel, CLUSTER, S::kThreads, S::kSmemBytes + (kStagedStores ? S::kStagingBytes : 0));
    if (resident <= 0) return cudaErrorInvalidConfiguration;
    const long long groups_of_tiles = cluster_tile_groups(q.m_tiles, q.n_tiles, CLUSTER, SWAP);
    const long long clusters =
        std::max(1LL, std::min({groups_of_tiles, static_cast<long long>(ctas / CLUSTER),
                                static_cast<long long>(resident)}));
    const ClusterLaunch launch(static_cast<int>(clusters * CLUSTER), CLUSTER, S::kThreads,
                               S::kSmemBytes + tail, stream);
    return cudaLaunchKernelEx(&launch.cfg, kernel, map_a, map_w, map_out, q);
  }
}

// One instantiation per kGemmWgmmaConfigs entry (same order); the entries' shapes are restated
// here as template arguments, and checked against the table.
constexpr bool config_is(int i, int consumers, int tile_n, int stages, int min_blocks,
                         int cluster = 1, int ksub = 1, int rows = 0) {
  return kGemmWgmmaConfigs[i].tile_m == (rows > 0 ? rows : 64 * consumers) &&
         kGemmWgmmaConfigs[i].tile_n == tile_n &&
         kGemmWgmmaConfigs[i].stages == stages && kGemmWgmmaConfigs[i].ctas_per_sm == min_blocks &&
         kGemmWgmmaConfigs[i].cluster_m == cluster && kGemmWgmmaConfigs[i].k_subtiles == ksub &&
         !kGemmWgmmaConfigs[i].swapped;
}
// A swapped entry: a_rows rows of A by w_rows rows of W, 4 k tiles a stage.
constexpr bool swapped_is(int i, int a_rows, int w_rows, int stages, int cluster = 1) {
  return kGemmWgmmaConfigs[i].swapped && kGemmWgmmaConfigs[i].tile_m == a_rows &&
         kGemmWgmmaConfigs[i].tile_n == w_rows && kGemmWgmmaConfigs[i].stages == stages &&
         kGemmWgmmaConfigs[i].ctas_per_sm == 1 && kGemmWgmmaConfigs[i].cluster_m == cluster &&
         kGemmWgmmaConfigs[i].k_subtiles == 4;
}
static_assert(kGemmWgmmaConfigCount == 36 && swapped_is(25, 8, 64, 5) &&
                  swapped_is(26, 16, 64, 5) && swapped_is(27, 32, 64, 4) &&
                  swapped_is(28, 64, 64, 3) && swapped_is(29, 8, 32, 10) &&
                  swapped_is(30, 16, 32, 8) && swapped_is(31, 32, 32, 6) &&
                  swapped_is(32, 32, 32, 6, 2) && swapped_is(33, 64, 32, 4, 2) &&
                  swapped_is(34, 32, 32, 6, 4) && swapped_is(35, 64, 32, 4, 4),
              "launch_typed's swapped instantiations must follow kGemmWgmmaConfigs");
static_assert(kGemmWgmmaConfigCount == 36 && config_is(0, 2, 256, 4, 1) &&
                  config_is(1, 2, 128, 6, 1) && config_is(2, 2, 64, 4, 2) &&
                  config_is(3, 1, 128, 8, 1) && config_is(4, 1, 64, 12, 1) &&
                  config_is(5, 1, 32, 16, 1) && config_is(6, 2, 224, 5, 1) &&
                  config_is(7, 2, 192, 5, 1) && config_is(8, 2, 256, 4, 1, 2) &&
                  config_is(9, 2, 128, 6, 1, 2) && config_is(10, 1, 128, 8, 1, 2) &&
                  config_is(11, 1, 128, 4, 1, 1, 2) && config_is(12, 1, 64, 3, 1, 1, 4) &&
                  config_is(13, 1, 32, 4, 1, 1, 4) && config_is(14, 1, 128, 8, 1, 4) &&
                  config_is(15, 2, 128, 6, 1, 4) && config_is(16, 1, 32, 10, 1, 1, 4, 8) &&
                  config_is(17, 1, 32, 8, 1, 1, 4, 16) && config_is(18, 1, 32, 6, 1, 1, 4, 32) &&
                  config_is(19, 1, 64, 5, 1, 1, 4, 8) && config_is(20, 1, 64, 5, 1, 1, 4, 16) &&
                  config_is(21, 1, 64, 4, 1, 1, 4, 32) && config_is(22, 1, 128, 6, 1, 1, 2, 8) &&
                  config_is(23, 1, 128, 5, 1, 1, 2, 16) && config_is(24, 1, 128, 5, 1, 1, 2, 32),
              "launch_typed's instantiations must follow kGemmWgmmaConfigs");

// A short tile (ROWS rows, one consumer) with KSUB k tiles a stage where they divide K's k
// tiles, else the same ring bytes one k tile a stage. Two groups in flight where the ring is
// deep enough to spare them, three with one k tile a stage (as entries 4 and 5).
template <int TILE_N, int STAGES, int KSUB, int ROWS, class T>
cudaError_t launch_short(const GemmKernelParams& p, int ctas, CUtensorMapDataType type,
                         cudaStream_t stream) {
  constexpr int kInFlight = STAGES >= 5 ? 2 : 1;
  return p.k_tiles % KSUB == 0
             ? launch_config<1, TILE_N, STAGES, 1, kInFlight, 1, KSUB, T, ROWS>(p, ctas, type,
                                                                                stream)
             : launch_config<1, TILE_N, STAGES * KSUB, 1, 3, 1, 1, T, ROWS>(p, ctas, type, stream);
}

// The swapped form: A_ROWS rows of A (wgmma's N) against W_ROWS rows of W, 4 k tiles a stage
// where they divide K's k tiles, else the same ring one k tile a stage (as launch_short); in
// clusters of CLUSTER CTAs that share A.
template <int A_ROWS, int W_ROWS, int STAGES, class T, int CLUSTER = 1>
cudaError_t launch_swapped(const GemmKernelParams& p, int ctas, CUtensorMapDataType type,
                           cudaStream_t stream) {
  constexpr int kInFlight = STAGES >= 5 ? 2 : 1;
  return p.k_tiles % 4 == 0
             ? launch_config<1, A_ROWS, STAGES, 1, kInFlight, CLUSTER, 4, T, W_ROWS, true>(
                   p, ctas, type, stream)
             : launch_config<1, A_ROWS, STAGES * 4, 1, 3, CLUSTER, 1, T, W_ROWS, true>(
                   p, ctas, type, stream);
}

template <class T>
cudaError_t launch_typed(const GemmKernelParams& p, int config, int ctas, CUtensorMapDataType type,
                         cudaStream_t stream) {
  switch (config) {
    case 0: return launch_config<2, 256, 4, 1, 1, 1, 1, T>(p, ctas, type, stream);
    case 1: return launch_config<2, 128, 6, 1, 1, 1, 1, T>(p, ctas, type, stream);
    case 2: return launch_config<2, 64, 4, 2, 1, 1, 1, T>(p, ctas, type, stream);
    case 3: return launch_config<1, 128, 8, 1, 2, 1, 1, T>(p, ctas, type, stream);
    case 4: return launch_config<1, 64, 12, 1, 3, 1, 1, T>(p, ctas, type, stream);
    case 5: return launch_config<1, 32, 16, 1, 3, 1, 1, T>(p, ctas, type, stream);
    case 6: return launch_config<2, 224, 5, 1, 1, 1, 1, T>(p, ctas, type, stream);
    case 7: return launch_config<2, 192, 5, 1, 1, 1, 1, T>(p, ctas, type, stream);
    case 8: return launch_config<2, 256, 4, 1, 1, 2, 1, T>(p, ctas, type, stream);
    case 9: return launch_config<2, 128, 6, 1, 1, 2, 1, T>(p, ctas, type, stream);
    case 10: return launch_config<1, 128, 8, 1, 2, 2, 1, T>(p, ctas, type, stream);
    // Several k tiles a stage where they divide K's k tiles, else the same ring one k tile a stage.
    case 11:
      return p.k_tiles % 2 == 0 ? launch_config<1, 128, 4, 1, 1, 1, 2, T>(p, ctas, type, stream)
                                : launch_config<1, 128, 8, 1, 2, 1, 1, T>(p, ctas, type, stream);
    case 12:
      return p.k_tiles % 4 == 0 ? launch_config<1, 64, 3, 1, 1, 1, 4, T>(p, ctas, type, stream)
                                : launch_config<1, 64, 12, 1, 3, 1, 1, T>(p, ctas, type, stream);
    case 13:
      return p.k_tiles % 4 == 0 ? launch_config<1, 32, 4, 1, 2, 1, 4, T>(p, ctas, type, stream)
                                : launch_config<1, 32, 16, 1, 3, 1, 1, T>(p, ctas, type, stream);
    case 14: return launch_config<1, 128, 8, 1, 2, 4, 1, T>(p, ctas, type, stream);
    case 15: return launch_config<2, 128, 6, 1, 1, 4, 1, T>(p, ctas, type, stream);
    case 16: return launch_short<32, 10, 4, 8, T>(p, ctas, type, stream);
    case 17: return launch_short<32, 8, 4, 16, T>(p, ctas, type, stream);
    case 18: return launch_short<32, 6, 4, 32, T>(p, ctas, type, stream);
    case 19: return launch_short<64, 5, 4, 8, T>(p, ctas, type, stream);
    case 20: return launch_short<64, 5, 4, 16, T>(p, ctas, type, stream);
    case 21: return launch_short<64, 4, 4, 32, T>(p, ctas, type, stream);
    case 22: return launch_short<128, 6, 2, 8, T>(p, ctas, type, stream);
    case 23: return launch_short<128, 5, 2, 16, T>(p, ctas, type, stream);
    case 24: return launch_short<128, 5, 2, 32, T>(p, ctas, type, stream);
    case 25: return launch_swapped<8, 64, 5, T>(p, ctas, type, stream);
    case 26: return launch_swapped<16, 64, 5, T>(p, ctas, type, stream);
    case 27: return launch_swapped<32, 64, 4, T>(p, ctas, type, stream);
    case 28: return launch_swapped<64, 64, 3, T>(p, ctas, type, stream);
    case 29: return launch_swapped<8, 32, 10, T>(p, ctas, type, stream);
    case 30: return launch_swapped<16, 32, 8, T>(p, ctas, type, stream);
    case 31: return launch_swapped<32, 32, 6, T>(p, ctas, type, stream);
    case 32: return launch_swapped<32, 32, 6, T, 2>(p, ctas, type, stream);
    case 33: return launch_swapped<64, 32, 4, T, 2>(p, ctas, type, stream);
    case 34: return launch_swapped<32, 32, 6, T, 4>(p, ctas, type, stream);
    case 35: return launch_swapped<64, 32, 4, T, 4>(p, ctas, type, stream);
    default: break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace

bool wgmma_available() {
  static const bool available = [] {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, wgmma_gemm_kernel<2, 256, 4, 1, 1, 1, 1, __nv_bfloat16>) !=
        cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    // A compute_90 PTX image JIT-compiled on sm_90 also reports binaryVersion 90, but its wgmma
    // kernel is the __trap() fallback: require the sm_90a image (kernels/kernel_image.cuh).
    return attr.binaryVersion == 90 && nvdet::kernels::kernel_image().arch_specific &&
           tensor_map_encoder() != nullptr;
  }();
  return available;
}

bool gemm_invariant_stage_copies_available() {
  static const bool available = [] {
    // The encoder reads no tensor memory: any 16-byte aligned address serves.
    CUtensorMap map;
    return encode_swizzled_stage_map(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                     reinterpret_cast<const void*>(uintptr_t{1} << 20), 4096, 64,
                                     4096 * 2, 32, 4);
  }();
  return available;
}

namespace {

cudaError_t launch_checked(const GemmKernelParams& p, int config, int ctas, cudaStream_t stream) {
  if (p.tile_k != kTileK || !p.vec16 || p.k <= 0 || ctas <= 0) return cudaErrorInvalidValue;
  if (config < 0 || config >= kGemmWgmmaConfigCount) return cudaErrorInvalidValue;
  if (p.in_type == static_cast<int>(GemmType::kBF16))
    return launch_typed<__nv_bfloat16>(p, config, ctas, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, stream);
  if (p.in_type == static_cast<int>(GemmType::kFP16))
    return launch_typed<__half>(p, config, ctas, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, stream);
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_wgmma(const GemmKernelParams& p, int config, int ctas, cudaStream_t stream) {
  if (p.groups != 0) return cudaErrorInvalidValue;
  return launch_checked(p, config, ctas, stream);
}

cudaError_t launch_wgmma_grouped(const GemmKernelParams& p, int config, int ctas,
                                 cudaStream_t stream) {
  if (p.groups <= 0 || p.groups > kGemmMaxGroups || p.group_rows == nullptr ||
      config < 0 || config >= kGemmWgmmaConfigCount ||
      gemm_wgmma_plain_only(kGemmWgmmaConfigs[config])) {
    return cudaErrorInvalidValue;
  }
  return launch_checked(p, config, ctas, stream);
}

}  // namespace nvdet::kernels
