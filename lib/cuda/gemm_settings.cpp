#include "lib/cuda/gemm_settings.h"

#include "kernels/gemm_fp8.cuh"
#include "kernels/gemm_invariant.cuh"
#include "lib/core/env_setting.h"

namespace nvdet::cuda {

kernels::GemmDevice gemm_device(const DeviceContext& ctx) {
  kernels::GemmDevice d;
  d.cc_major = ctx.props().major;
  d.cc_minor = ctx.props().minor;
  d.sm_count = ctx.sm_count();
  return d;
}

int forced_wgmma_config() {
  return env_int_setting("NVDET_GEMM_WGMMA_CONFIG", 0, kernels::kGemmWgmmaConfigCount - 1, -1);
}

int forced_fp8_config() {
  return env_int_setting("NVDET_FP8_GEMM_CONFIG", 0, kernels::kFp8GemmConfigCount - 1, -1);
}

int forced_gemm_ctas() { return env_int_setting("NVDET_GEMM_CTAS", 1, 1 << 20, 0); }

bool gemm_stage_copies() {
  return env_word_setting("NVDET_GEMM_TMA_COPIES", true, {{"stage", true}, {"k_tile", false}});
}

}  // namespace nvdet::cuda
