#pragma once
// nvdet's batch-invariant GEMM: out[m, n] = a[m, k] · w[n, k]^T (+ bias[n]).
//
// Invariance argument (shared by every path and schedule below): each path fixes one reduction
// order per output element that depends only on K and the input type; nothing in it depends on M,
// on the row's position in the batch, on the tile the row falls in or on which CTA computes it.
// Every element is finished the same way: + bias[n] (when present) in fp32, then one rounding to
// the output type. So every row's bits are a function of that row's inputs, K and the type alone.
//
// Paths (chosen from the device's compute capability, the compiled code and the types, never from
// M), each with its own fixed order; different paths are not required to agree bitwise:
//   - wgmma (sm_90a; operands TMA cannot address are first copied, values unchanged, into a
//     workspace with 16-byte rows): one chain per element over the whole of K. The
//     accumulator starts at 0 and receives one wgmma m64nNk16 per 16-wide k step in increasing k
//     order (k tail zero-filled by TMA). Which N (tile width), which tile, how many persistent CTAs
//     and in which order they take tiles follow M and N (kGemmWgmmaConfigs); the GPU tests force
//     every configuration and CTA count and compare bits. Since 2026-12 (before: the chunked plan
//     below), so this path's bits differ from reports made before then.
//   - mma.sync m16n8k16 + cp.async (other GPUs), FFMA for fp32 inputs: chunked plan. K is cut into chunks of gemm_invariant_chunk_k(type) elements;
//     each chunk's partial p_c starts from 0 and is accumulated by the same sequence of MMA
//     instructions; the element is ((0 + p_0) + p_1) + ... + p_{C-1} in fp32. Schedules:
//     split-chunks (one CTA per (tile, chunk), partials in an fp32 workspace summed in chunk
//     order by a second kernel) or in-cta (the running sum in registers).
//
// This header is plain C++ (no device code), so host code may include it.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

// The GEMM's element types: the kernels' own (kernels/element_type.cuh; nvdet's DType stays out
// of kernels/).
using GemmType = ElemType;

enum class GemmSchedule : int { kAuto = 0, kSplitChunks, kInCta, kPersistent };
enum class GemmPath : int { kAuto = 0, kMmaSync, kWgmma, kFfma };

const char* gemm_path_name(GemmPath path);          // "mma.sync-m16n8k16", "wgmma-m64nNk16-tma", ...
const char* gemm_schedule_name(GemmSchedule schedule);  // "split-chunks", "in-cta", "persistent"

struct GemmProblem {
  const void* a = nullptr;     // [m, k], row stride lda (elements)
  const void* w = nullptr;     // [n, k], row stride ldw
  const void* bias = nullptr;  // [n] in in_type, or null
  void* out = nullptr;         // [m, n], row stride ldo, in out_type
  int m = 0, n = 0, k = 0;
  int64_t lda = 0, ldw = 0, ldo = 0;
  GemmType in_type = GemmType::kBF16;
  GemmType out_type = GemmType::kFP32;
  // The wgmma path's staged W (plan.staged_k > 0), made earlier by gemm_invariant_stage_weight
  // for this w and kept by the caller: the launch then stages only A. Null: W is staged on every
  // launch. The same bits either way (a copy of W's values).
  const void* w_staged = nullptr;
};

// The wgmma path's CTA shapes. tile_m = 64 x consumer warpgroups; the producer warpgroup streams
// both operands through `stages` TMA stages of 64 elements of K. ctas_per_sm: how many fit on one
// SM (shared memory and registers); efficiency_pct: relative throughput of one SM full of such
// CTAs (a planning estimate, never arithmetic). cluster_m > 1: CTAs run in clusters of cluster_m
// that take vertically adjacent tiles of one tile column together, and each loads 1/cluster_m of
// the shared W tile and multicasts it to all, so W crosses from L2 once per cluster rather than
// once per CTA (plain launches only: a grouped launch's tiles of one column may belong to
// different experts). k_subtiles: 64-wide k tiles a stage holds (loaded one after another, so
// that a stage asks for k_subtiles x 128 consecutive bytes of each row; the ring's waits are paid
// once per stage). auto_pick false: the plan's cost model never takes the entry; it is taken when
// pinned, or by a rule of gemm_wgmma_pick_config's where it was timed faster. Any entry gives the
// same bits.
// swapped: the decode form with W on wgmma's 64-row side and the tile's tile_m rows of A (8-64)
// as the instruction's N, so that the shared memory a k step reads is mostly W (the 64-row A tile
// of the other entries is mostly unused at decode sizes). tile_n columns of the output are
// tile_n rows of W: 64, or 32 with the instruction's other 32 rows reading whatever shared memory
// follows (never stored; rows of an MMA do not mix), which gives twice the CTAs. Each element
// gets the bits of the other entries: the tensor cores give (W A^T)^T the bits of A W^T (the GPU
// test SwappedOperandsGiveTheTransposedBits), and the k steps are the same. A swapped entry's
// cluster_m > 1: CTAs in clusters along N, sharing the A tile by multicast (W's tiles differ).
struct GemmWgmmaConfig {
  int tile_m, tile_n, stages, ctas_per_sm, efficiency_pct;
  int cluster_m = 1;
  int k_subtiles = 1;
  bool auto_pick = true;
  bool swapped = false;
};
inline constexpr GemmWgmmaConfig kGemmWgmmaConfigs[] = {
    {128, 256, 4, 1, 100},  // 192 KiB of stages; large M
    {128, 128, 6, 1, 88},   // 192 KiB
    {128, 64, 4, 2, 70},    // 96 KiB, two CTAs per SM
    {64, 128, 8, 1, 70},    // 192 KiB
    {64, 64, 12, 1, 55},    // 192 KiB; decode sizes: many CTAs streaming W, deep prefetch
    {64, 32, 16, 1, 40},    // 192 KiB
    // Widths that fill the last wave where 256 leaves it part empty, on 132 SMs at M = 1024: 192
    // for N = 6144 (256 tiles, the second wave 94% full, against 192 tiles and 45%); 224 was
    // meant for N = 14336 (512 tiles, the fourth wave 88% full), but since the epilogue stores
    // through shared memory 128x128 tiles are faster there (H100, 14336 x 4096 at M = 1024:
    // 162.9 us against 176.1 for 128x224, 166.7 for 128x192 and 174.9 for 128x256), so the
    // efficiencies of entries 1 and 6 were set from that run. Each k step of a narrower tile
    // reads a little more shared memory per FLOP than 256 does (efficiency below it).
    {128, 224, 5, 1, 85},   // 220 KiB
    {128, 192, 5, 1, 94},   // 200 KiB
    // Pairs of CTAs sharing W by multicast (half the L2-to-SM traffic of W). Timed on an H200:
    // no faster at large m (4096 x 4096 at m = 8192, 14336 x 4096 at m = 1024), so W's traffic
    // from L2 is not what bounds it there; entry 10 was faster at 4096 x 4096, m = 256 (25.9
    // against 31.0 us), slower at m = 512. Pinned only until a rule by shape is timed.
    {128, 256, 4, 1, 100, 2, 1, false},
    {128, 128, 6, 1, 80, 2, 1, false},
    {64, 128, 8, 1, 70, 2, 1, false},
    // Decode sizes with 256 or 512 bytes of each W row a stage (one 128-byte k tile a stage left
    // the aligned 4096 x 4096 decode GEMM at half the copy rate on an H100). The cost model never
    // takes them; the plan puts one in place of its twin (entries 3-5) at decode sizes (on an
    // H200, 4096 x 4096 at m = 1 and 64: 19.7-20.3 against 21.7-22.1 us).
    {64, 128, 4, 1, 70, 1, 2, false},  // 192 KiB
    {64, 64, 3, 1, 55, 1, 4, false},   // 192 KiB
    {64, 32, 4, 1, 40, 1, 4, false},   // 192 KiB
    // Clusters of four along M for m = 128-512, meant to cut W's L2-to-SM traffic there (at
    // m = 256, n = k = 4096: 24 KiB per MFLOP with 128x64 tiles, 11 with four 64x128 tiles
    // sharing W). Timed on an H200: slower than the automatic plan at 4096 x 4096, m = 256-1024.
    {64, 128, 8, 1, 70, 4, 1, false},   // 192 KiB
    {128, 128, 6, 1, 80, 4, 1, false},  // 192 KiB
    // Short tiles for m <= 32: 8, 16 or 32 rows of A a stage where entries 11-13 keep room for 64
    // (one consumer's wgmma still reads 64 rows; the rows past the tile's are never stored), so
    // the ring holds W: at m <= 8 with 32 columns, 160 of 200 KiB against 64 of 192. The plan puts
    // one in place of its 64-row twin (entries 11-13) at m <= 32.
    {8, 32, 10, 1, 40, 1, 4, false},   // 200 KiB of stages
    {16, 32, 8, 1, 40, 1, 4, false},   // 192 KiB
    {32, 32, 6, 1, 40, 1, 4, false},   // 192 KiB
    {8, 64, 5, 1, 55, 1, 4, false},    // 180 KiB
    {16, 64, 5, 1, 55, 1, 4, false},   // 200 KiB
    {32, 64, 4, 1, 55, 1, 4, false},   // 192 KiB
    {8, 128, 6, 1, 70, 1, 2, false},   // 204 KiB
    {16, 128, 5, 1, 70, 1, 2, false},  // 180 KiB
    {32, 128, 5, 1, 70, 1, 2, false},  // 200 KiB
    // The swapped decode form (m <= 64): 4 k tiles a stage of 64 (or 32) rows of W and tile_m
    // rows of A. Pinned only until timed against entries 13 and 16-24.
    {8, 64, 5, 1, 55, 1, 4, false, true},    // 180 KiB
    {16, 64, 5, 1, 55, 1, 4, false, true},   // 200 KiB
    {32, 64, 4, 1, 55, 1, 4, false, true},   // 192 KiB
    {64, 64, 3, 1, 55, 1, 4, false, true},   // 192 KiB
    {8, 32, 10, 1, 40, 1, 4, false, true},   // 200 KiB (+4 KiB the last stage's wgmma reads past)
    {16, 32, 8, 1, 40, 1, 4, false, true},   // 192 KiB
    {32, 32, 6, 1, 40, 1, 4, false, true},   // 192 KiB
    // The swapped form in clusters of cluster_m CTAs that share the tile's rows of A and take
    // adjacent tiles of W rows: each loads 1/cluster_m of A and multicasts it, so A crosses from
    // L2 once per cluster. Without it every CTA reads the same A: at m = 64 on 4096 x 4096, 128
    // CTAs read 64 MiB of A from L2 beside W's 32 MiB from DRAM.
    {32, 32, 6, 1, 40, 2, 4, false, true},  // 192 KiB
    {64, 32, 4, 1, 40, 2, 4, false, true},  // 192 KiB
    {32, 32, 6, 1, 40, 4, 4, false, true},  // 192 KiB
    {64, 32, 4, 1, 40, 4, 4, false, true},  // 192 KiB
};
inline constexpr int kGemmWgmmaConfigCount =
    static_cast<int>(sizeof(kGemmWgmmaConfigs) / sizeof(kGemmWgmmaConfigs[0]));

// Entries a grouped launch cannot take (clusters, the swapped form): plain launches only; a pinned
// one leaves grouped launches on their automatic choice.
constexpr bool gemm_wgmma_plain_only(const GemmWgmmaConfig& c) {
  return c.cluster_m > 1 || c.swapped;
}

// Rows up to which the plan streams W with several k tiles a stage (decode steps, and up to 128
// rows, where the tiles are still 64 rows high: on an H100, 4096 x 4096 at m = 128 took 17.7 us
// with 64x64 tiles and four k tiles a stage against 21.0 with one, cuBLAS 16.8).
inline constexpr int kGemmStreamRows = 128;
// Rows up to which it takes a short tile (8, 16 or 32 rows: the fewest that hold M).
inline constexpr int kGemmShortTileRows = 32;

// The wgmma configuration the plan takes for an M x N output with K deep on `sm_count` SMs: of
// the entries with auto_pick, the lowest estimated time, counting waves of persistent CTAs, the
// tile's padded work and the entry's efficiency (earlier entries win ties); up to kGemmStreamRows
// rows that tile with 4, else 2, k tiles a stage where such an entry exists and its
// k tiles divide K's, and at m <= kGemmShortTileRows that twin's short tile of the fewest rows
// that hold M. Host code, so that the choice is testable without a GPU.
int gemm_wgmma_pick_config(int m, int n, int k, int sm_count);

struct GemmPlan {
  GemmPath path = GemmPath::kMmaSync;
  GemmSchedule schedule = GemmSchedule::kInCta;
  int chunk_k = 0;  // KC
  int chunks = 0;   // ceil(K / KC)
  int tile_m = 0, tile_n = 0, tile_k = 0;
  int stages = 0;  // pipeline depth (prefetch only; never changes the arithmetic)
  size_t workspace_bytes = 0;  // needed by split-chunks (fp32 partials), 0 otherwise
  int config = -1;  // wgmma path: index into kGemmWgmmaConfigs
  int ctas = 0;     // wgmma path: persistent CTAs (each walks tiles ctas apart)
  // wgmma path, operands TMA cannot address (K or a stride not a multiple of 8 elements, or a
  // base not 16-byte aligned): W and blocks of stage_rows rows of A are first copied into the
  // workspace with row stride staged_k (a K that is not a multiple of 8 rounded up to four k
  // tiles, else K), and the kernel walks staged_k. 0: operands are read in place.
  int staged_k = 0;
  int stage_rows = 0;
  // wgmma path, entries with several k tiles a stage: each operand's k tiles of a stage in one
  // TMA copy (a 3-d map) where K is whole k tiles, rather than one copy a k tile. The same bytes
  // land in the same places; false (a setting, for timing and bisecting) keeps the copies per k
  // tile.
  bool stage_boxes = true;
};

// KC: fixed per input type, never a function of M or N.
int gemm_invariant_chunk_k(GemmType in_type);

// Facts about the device the plan is for (from cudaDeviceProp).
struct GemmDevice {
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
};

// Chooses path, schedule and tiles. The path depends on the device, the compiled code, the types,
// K and the alignment of pointers and strides; the schedule, the tile and the CTA count may also
// depend on M and N (they never change the arithmetic). `force_*` pin a choice (tests); a forced
// path or schedule the device or problem cannot run falls back to the automatic one.
// force_config (>= 0) picks a kGemmWgmmaConfigs entry and force_ctas (> 0) the persistent grid
// size, on the wgmma path.
GemmPlan gemm_invariant_plan(const GemmProblem& problem, const GemmDevice& device,
                             GemmSchedule force_schedule = GemmSchedule::kAuto,
                             GemmPath force_path = GemmPath::kAuto, int force_config = -1,
                             int force_ctas = 0);

// Whether this driver encodes the 3-d TMA maps that fill a ring stage of several k tiles with one
// copy (GemmPlan::stage_boxes); without them those stages are filled one k tile a copy.
bool gemm_invariant_stage_copies_available();

// Enqueues the kernels of `plan` on `stream`. Never allocates: split-chunks needs
// plan.workspace_bytes of `workspace` (cudaErrorInvalidValue otherwise).
cudaError_t gemm_invariant_launch(const GemmProblem& problem, const GemmPlan& plan, void* workspace,
                                  size_t workspace_bytes, cudaStream_t stream);

// The grouped form, for MoE experts (wgmma path only): group g's rows [group_rows[g],
// group_rows[g + 1]) of a [max_rows, k] times W_g^T, where W_g is rows [g * n, (g + 1) * n) of
// a stacked w [groups * n, k], into the same rows of out [max_rows, n] (rows outside every
// group are not written). group_rows (groups + 1 entries, non-decreasing, the last <= max_rows)
// is read on the device, so the host need not know the counts. Each row gets the bits of the
// plain GEMM over its group's rows: the same chain per element (the tile and the CTA count never
// change it); no bias.
// Most groups one grouped launch takes (the kernel keeps every group's first tile and row in
// shared memory).
inline constexpr int kGemmMaxGroups = 512;

struct GemmGroupedProblem {
  const void* a = nullptr;
  const void* w = nullptr;
  void* out = nullptr;
  const int32_t* group_rows = nullptr;
  int groups = 0, max_rows = 0, n = 0, k = 0;
  GemmType in_type = GemmType::kBF16;
  GemmType out_type = GemmType::kFP32;
};

// Whether the grouped form runs here: an sm_90a device and build, 16-bit inputs, K a multiple of
// 8, 16-byte aligned bases, 1 to 512 groups.
bool gemm_invariant_grouped_supported(const GemmGroupedProblem& problem, const GemmDevice& device);
// The kGemmWgmmaConfigs entry it takes (force_config >= 0 pins one, for tests), and the launch.
int gemm_invariant_grouped_config(const GemmGroupedProblem& problem, int force_config = -1);
cudaError_t gemm_invariant_grouped_launch(const GemmGroupedProblem& problem,
                                          const GemmDevice& device, int force_config,
                                          int force_ctas, cudaStream_t stream);

// The staged copy of W that a plan with staged_k > 0 reads (n rows of staged_k elements, the
// tail zeroed): its size, and the kernel that writes it into `dst` on `stream`. A caller that
// keeps it for a weight that does not change passes it as problem.w_staged to later launches.
size_t gemm_invariant_staged_weight_bytes(const GemmProblem& problem, const GemmPlan& plan);
cudaError_t gemm_invariant_stage_weight(const GemmProblem& problem, const GemmPlan& plan, void* dst,
                                        cudaStream_t stream);

// Whether a plan with staged_k > 0 reads A in place rather than staging it: a single row (m = 1,
// a decode step) whose start is 16-byte aligned (the row stride TMA requires never applies).
bool gemm_invariant_reads_a_in_place(const GemmProblem& problem, const GemmPlan& plan);

// Vendor-path helper: out[m, n] (out_type) = src[m, n] (fp32) + bias[n] (bias_type, may be null),
// rounded once. Used when cuBLASLt cannot write the requested output type directly.
cudaError_t gemm_convert_output(const float* src, const void* bias, GemmType bias_type, void* out,
                                GemmType out_type, int m, int n, cudaStream_t stream);

}  // namespace nvdet::kernels
