// The settings that pin the invariant GEMM's launch shape (lib/cuda/gemm_settings.h): auto or
// absent leave the choice to the plan, a value in range pins it, anything else is refused with
// exit 2 and the variable's name. Read without a GPU; built with the CUDA backends only.
#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>

#include "lib/core/error.h"

#ifdef NVDET_WITH_CUDA
#include "lib/cuda/gemm_settings.h"
#endif

namespace nvdet {
namespace {

#ifdef NVDET_WITH_CUDA

// Each of `bad` set in `variable` is refused by `read` with exit 2 naming the variable.
template <typename Read>
void expect_refused(const char* variable, Read read, std::initializer_list<const char*> bad) {
  for (const char* value : bad) {
    setenv(variable, value, 1);
    try {
      read();
      ADD_FAILURE() << variable << " accepted '" << value << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
    }
  }
}

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
  expect_refused("NVDET_GEMM_WGMMA_CONFIG", cuda::forced_wgmma_config,
                 {past_the_table.c_str(), "-1", "2x", "one"});
  expect_refused("NVDET_GEMM_CTAS", cuda::forced_gemm_ctas, {"0"});
  unsetenv("NVDET_GEMM_WGMMA_CONFIG");
  unsetenv("NVDET_GEMM_CTAS");
}

TEST(GemmSettings, TmaCopiesStageOrKTile) {
  unsetenv("NVDET_GEMM_TMA_COPIES");
  EXPECT_TRUE(cuda::gemm_stage_copies());
  setenv("NVDET_GEMM_TMA_COPIES", "k_tile", 1);
  EXPECT_FALSE(cuda::gemm_stage_copies());
  setenv("NVDET_GEMM_TMA_COPIES", "stage", 1);
  EXPECT_TRUE(cuda::gemm_stage_copies());
  expect_refused("NVDET_GEMM_TMA_COPIES", cuda::gemm_stage_copies, {"0", "ktile", "stages"});
  unsetenv("NVDET_GEMM_TMA_COPIES");
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
  expect_refused("NVDET_FP8_GEMM_CONFIG", cuda::forced_fp8_config,
                 {past_the_table.c_str(), "-1", "1.5"});
  setenv("NVDET_FP8_GEMM_CONFIG", "", 1);  // empty is unset, as for the other settings
  EXPECT_EQ(cuda::forced_fp8_config(), -1);
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
  EXPECT_EQ(kernels::fp8_gemm_plan(p, 132).config, 0);  // 128x128 at large m, no cluster
  p.m = 1024;
  EXPECT_EQ(kernels::fp8_gemm_plan(p, 132).config, 0);
  p.m = 1;  // decode: the 64x32 tile, twice the CTAs streaming W
  EXPECT_EQ(kernels::fp8_gemm_plan(p, 132).config, 3);
}

// Entries not yet timed (auto_pick false: the decode tiles with several K groups a stage) are
// taken only when pinned, and the pinned plan keeps one copy a stage unless told otherwise.
TEST(GemmSettings, Fp8PlanTakesOnlyEntriesItMayPick) {
  kernels::Fp8GemmProblem p;
  p.n = 4096;
  p.k = 4096;
  int not_picked = 0;
  for (int config = 0; config < kernels::kFp8GemmConfigCount; ++config) {
    not_picked += !kernels::kFp8GemmConfigs[config].auto_pick;
  }
  EXPECT_GT(not_picked, 0);
  for (p.m = 1; p.m <= 8192; p.m = p.m * 2 + 1) {
    const kernels::Fp8GemmPlan plan = kernels::fp8_gemm_plan(p, 132);
    EXPECT_TRUE(kernels::kFp8GemmConfigs[plan.config].auto_pick) << "m " << p.m;
    EXPECT_TRUE(plan.stage_boxes);
  }
  EXPECT_EQ(kernels::fp8_gemm_plan(p, 132, 6).config, 6);
}

#else
TEST(GemmSettings, NeedTheCudaBuild) { GTEST_SKIP() << "built without CUDA"; }
#endif

}  // namespace
}  // namespace nvdet
