// The settings that pin the invariant GEMM's launch shape (lib/cuda/gemm_settings.h): auto or
// absent leave the choice to the plan, a value in range pins it, anything else is refused with
// exit 2 and the variable's name. Read without a GPU; built with the CUDA backends only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "lib/core/error.h"

#ifdef NVDET_WITH_CUDA
#include "lib/cuda/gemm_settings.h"
#endif

namespace nvdet {
namespace {

#ifdef NVDET_WITH_CUDA

TEST(GemmSettings, AutoPinsOrRefuses) {
  unsetenv("NVDET_GEMM_WGMMA_CONFIG");
  unsetenv("NVDET_GEMM_CTAS");
  EXPECT_EQ(cuda::forced_wgmma_config(), -1);
  EXPECT_EQ(cuda::forced_gemm_ctas(), 0);
  setenv("NVDET_GEMM_WGMMA_CONFIG", "auto", 1);
  EXPECT_EQ(cuda::forced_wgmma_config(), -1);
  const int last = kernels::kGemmWgmmaConfigCount - 1;
  setenv("NVDET_GEMM_WGMMA_CONFIG", std::to_string(last).c_str(), 1);
  setenv("NVDET_GEMM_CTAS", "7", 1);
  EXPECT_EQ(cuda::forced_wgmma_config(), last);
  EXPECT_EQ(cuda::forced_gemm_ctas(), 7);
  const std::string past_the_table = std::to_string(last + 1);
  for (const char* bad : {past_the_table.c_str(), "-1", "2x", "one"}) {
    setenv("NVDET_GEMM_WGMMA_CONFIG", bad, 1);
    try {
      cuda::forced_wgmma_config();
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find("NVDET_GEMM_WGMMA_CONFIG"), std::string::npos);
    }
  }
  setenv("NVDET_GEMM_CTAS", "0", 1);
  EXPECT_THROW(cuda::forced_gemm_ctas(), Error);
  unsetenv("NVDET_GEMM_WGMMA_CONFIG");
  unsetenv("NVDET_GEMM_CTAS");
}

TEST(GemmSettings, Fp8ConfigPinsOrRefuses) {
  unsetenv("NVDET_FP8_GEMM_CONFIG");
  EXPECT_EQ(cuda::forced_fp8_config(), -1);
  setenv("NVDET_FP8_GEMM_CONFIG", "auto", 1);
  EXPECT_EQ(cuda::forced_fp8_config(), -1);
  const int last = kernels::kFp8GemmConfigCount - 1;
  setenv("NVDET_FP8_GEMM_CONFIG", std::to_string(last).c_str(), 1);
  EXPECT_EQ(cuda::forced_fp8_config(), last);
  const std::string past_the_table = std::to_string(last + 1);
  for (const char* bad : {past_the_table.c_str(), "-1", "1.5", ""}) {
    setenv("NVDET_FP8_GEMM_CONFIG", bad, 1);
    if (std::string(bad).empty()) {  // empty is unset, as for the other settings
      EXPECT_EQ(cuda::forced_fp8_config(), -1);
      continue;
    }
    try {
      cuda::forced_fp8_config();
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find("NVDET_FP8_GEMM_CONFIG"), std::string::npos);
    }
  }
  unsetenv("NVDET_FP8_GEMM_CONFIG");
}

TEST(GemmSettings, PinnedFp8PlanTakesTheEntryAndCtas) {
  kernels::Fp8GemmProblem p;
  p.m = 4096;
  p.n = 4096;
  p.k = 4096;
  for (int config = 0; config < kernels::kFp8GemmConfigCount; ++config) {
    const kernels::Fp8GemmPlan plan = kernels::fp8_gemm_plan(p, 132, config, 7);
    EXPECT_EQ(plan.config, config);
    EXPECT_EQ(plan.ctas, 7);
  }
  EXPECT_EQ(kernels::fp8_gemm_plan(p, 132).config, 0);  // 128x128 at large m
}

#else
TEST(GemmSettings, NeedTheCudaBuild) { GTEST_SKIP() << "built without CUDA"; }
#endif

}  // namespace
}  // namespace nvdet
