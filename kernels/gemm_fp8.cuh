#pragma once
// nvdet's batch-invariant FP8 GEMM (sm_90a, wgmma with e4m3 operands): out[m, n] from the e4m3
// codes a[m, k] and w[n, k] (nn.Linear layout) and their fp32 dequantisation scales, + bias[n],
// rounded once to the output type.
//
// Reduction order of one element (i, j), the CPU backends' FP8 plan (lib/reference/fp8_gemm.cpp)
// with the tensor cores computing each group's partial:
//   K is cut into 128-wide groups g (the last one zero-filled past K by TMA: +0 codes).
//   P_g: four wgmma m64nNk32 in increasing k, the first from zero (the tensor cores' own
//        accumulation of the group's 128 exact products).
//   promoted, scales per K group (group_128 activations or block_128x128 weights):
//        T = 0; T = fma(P_g, sa[i, g] * sw[j, g], T) for g = 0, 1, ...
//        (the scale product rounded, then one rounding per fused multiply-add: the CPU backends
//        round the multiply and the add apart, so the bits differ from theirs by that rounding)
//   promoted, one scale per row and column along K:
//        T = 0; T = T + P_g for g = 0, 1, ...;  T = sa[i] * (sw[j] * T)
//   fast (no promotion; scales per K group refused): T = one wgmma chain over the whole of K,
//        from zero;  T = sa[i] * (sw[j] * T)
//   out = round(T + bias[j])
// Nothing in it depends on M, on the row's place in the batch, on the tile, the tile width, the
// CTA count or the order in which CTAs take tiles: each element is one accumulator register of
// one consumer thread, which sees the same instruction sequence whatever the plan. The GPU tests
// force every configuration and CTA count and compare bits.
//
// This header is plain C++ (no device code), so host code may include it.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/element_type.cuh"

namespace nvdet::kernels {

struct Fp8GemmProblem {
  const uint8_t* a = nullptr;  // [m, k] e4m3 codes, row stride lda bytes
  const uint8_t* w = nullptr;  // [n, k] e4m3 codes, row stride ldw bytes
  // Scales, K-group-major so that neighbouring rows (columns) are neighbours in memory:
  //   per_group: a_scale[g * m + i], w_scale[g * n + j], g < ceil(k / 128);
  //   otherwise: a_scale[i], w_scale[j].
  const float* a_scale = nullptr;
  const float* w_scale = nullptr;
  const void* bias = nullptr;  // [n] in bias_type, or null
  ElemType bias_type = ElemType::kFP32;
  void* out = nullptr;  // [m, n], row stride ldo elements, in out_type
  ElemType out_type = ElemType::kBF16;
  int m = 0, n = 0, k = 0;
  int64_t lda = 0, ldw = 0, ldo = 0;
  bool per_group = false;  // scales change along K (see above)
  // With per_group: the caller states that w_scale is one value per 128 aligned columns in each
  // group (block_128x128 or tensor-wide weight scales). The kernel then forms each row's product
  // sa * sw once per group instead of once per element; the bits are the same.
  bool w_scale_blocks_of_128 = false;
  bool promoted = true;    // false: fast accumulation
};

// The kernel's CTA shapes: tile_m = 64 x consumer warpgroups, stages of 128 bytes of K. cluster_m
// > 1: CTAs run in clusters of cluster_m that take vertically adjacent tiles of one tile column
// and share each W tile by TMA multicast (W crosses from L2 once per cluster). groups_per_stage:
// K groups a ring stage holds (one TMA copy per operand fills them where K is whole groups;
// the ring's waits are paid once per stage). tile_m below 64 (one consumer): a short tile of
// decode sizes, whose wgmma still reads 64 rows of A (the rows past the tile's read the shared
// memory that follows and are never stored; rows of an MMA do not mix), so that the ring holds
// W rather than unused rows of A. auto_pick false: the plan's cost model never takes the entry
// (pinned only, until it is timed). Any entry gives the same bits.
struct Fp8GemmConfig {
  int tile_m, tile_n, stages, efficiency_pct, cluster_m;
  int groups_per_stage = 1;
  bool auto_pick = true;
};
inline constexpr Fp8GemmConfig kFp8GemmConfigs[] = {
    {128, 128, 6, 100, 1},  // 192 KiB of stages; large M
    {64, 128, 8, 75, 1},    // 192 KiB
    {64, 64, 12, 55, 1},    // 192 KiB
    {64, 32, 16, 40, 1},    // 192 KiB; decode sizes: twice the CTAs streaming W (n = 4096: 128)
    // Entry 0 in clusters of 2 (W multicast): pinned only. On the H100 it was 5-6% faster than
    // entry 0 while the epilogue stored from registers, and is 6% slower with the TMA-store
    // epilogue (the plan takes the lower index of two equal costs).
    {128, 128, 6, 100, 2},
    // Decode sizes as the 16-bit GEMM streams them (kGemmWgmmaConfigs 16-18 and 15): four K
    // groups (512 bytes of each row) a stage, one copy per operand, and 8, 16 or 32 rows of A
    // where entry 3 keeps room for 64 (at m <= 8: W 4/5 of the ring against 1/3). Scales per K
    // group take entry 3's ring instead (their scale ring is one K group a slot). Pinned only.
    {8, 32, 9, 40, 1, 4, false},   // 180 KiB of stages
    {16, 32, 8, 40, 1, 4, false},  // 192 KiB
    {32, 32, 6, 40, 1, 4, false},  // 192 KiB
    {64, 32, 4, 40, 1, 4, false},  // 192 KiB
};
inline constexpr int kFp8GemmConfigCount =
    static_cast<int>(sizeof(kFp8GemmConfigs) / sizeof(kFp8GemmConfigs[0]));

struct Fp8GemmPlan {
  int config = 0;  // index into kFp8GemmConfigs
  int ctas = 0;    // persistent CTAs (each walks the tiles ctas apart)
  // Entries with several K groups a stage: each operand's groups of a stage in one TMA copy (a
  // 3-d map) where K is whole groups; false (a setting, for timing and bisecting) copies one
  // group at a time. The same bytes land in the same places.
  bool stage_boxes = true;
};

// True where the sm_90a kernel is compiled in and the driver can encode TMA maps.
bool fp8_gemm_available();

// Why the kernel cannot take `p` (a sentence), or null: k a multiple of 16, the code pointers and
// strides 16-byte aligned, sizes below 2^31, per-group scales only with promoted accumulation.
const char* fp8_gemm_unsupported(const Fp8GemmProblem& p);

// The configuration with the lowest estimated time for an M x N output (waves of persistent CTAs
// times the tile's padded work over its efficiency); force_config >= 0 and force_ctas > 0 pin
// them (tests). Chosen from M and N, which changes no bit.
Fp8GemmPlan fp8_gemm_plan(const Fp8GemmProblem& p, int sm_count, int force_config = -1,
                          int force_ctas = 0);

// Enqueues the kernel on `stream`; never allocates. cudaErrorInvalidValue for a problem
// fp8_gemm_unsupported refuses or a plan out of range.
cudaError_t fp8_gemm_launch(const Fp8GemmProblem& p, const Fp8GemmPlan& plan, cudaStream_t stream);

}  // namespace nvdet::kernels
