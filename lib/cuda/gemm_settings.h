#pragma once
// What the invariant GEMM's plan is given besides the problem: the device's facts, and the
// settings that pin the invariant GEMM's launch shape, for the tests that compare every shape's
// bits and for bisecting a difference by hand. None changes any element's reduction order
// (kernels/gemm_invariant.cuh); they only choose how the work is spread and copied.
//   NVDET_GEMM_WGMMA_CONFIG = auto | 0..35 the kGemmWgmmaConfigs entry (tile, pipeline, cluster)
//                                          of the wgmma path, plain and grouped launches alike
//                                          (grouped launches take no cluster entry: theirs stays
//                                          automatic)
//   NVDET_FP8_GEMM_CONFIG   = auto | 0..8  the kFp8GemmConfigs entry (tile, stages, cluster) of the
//                                          invariant FP8 GEMM
//   NVDET_GEMM_CTAS         = auto | N     the number of persistent CTAs of the wgmma paths,
//                                          16-bit and FP8
//   NVDET_GEMM_TMA_COPIES   = stage | k_tile  the wgmma paths' ring stages of several k tiles
//                                          (FP8: K groups) filled by one TMA copy per operand
//                                          where K is whole k tiles (the default), or one copy a
//                                          k tile (16-bit plain launches and FP8; grouped 16-bit
//                                          launches copy a k tile at a time)
// Anything else is refused (exit 2) with the variable's name.
#include "kernels/gemm_fp8.cuh"
#include "kernels/gemm_invariant.cuh"
#include "lib/cuda/device_context.h"

namespace nvdet::cuda {

// The context's device as the plan sees it (compute capability, SM count).
kernels::GemmDevice gemm_device(const DeviceContext& ctx);

int forced_wgmma_config();  // -1: auto
int forced_fp8_config();    // -1: auto
int forced_gemm_ctas();     // 0: auto
bool gemm_stage_copies();   // NVDET_GEMM_TMA_COPIES: true for stage (the default)

}  // namespace nvdet::cuda
