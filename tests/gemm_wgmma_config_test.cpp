// Which wgmma configuration (kernels/gemm_invariant.cuh, kGemmWgmmaConfigs) the invariant GEMM's
// plan takes for an output shape. Any entry gives the same bits (the GPU tests force each); this
// is the choice of the faster one by waves of persistent CTAs. Read without a GPU; built with the
// CUDA backends only.
#include <gtest/gtest.h>

#include <algorithm>

#ifdef NVDET_WITH_CUDA
#include "kernels/gemm_fp8.cuh"
#include "kernels/gemm_invariant.cuh"
#endif

namespace nvdet {
namespace {

#ifdef NVDET_WITH_CUDA

constexpr int kSms = 132;

int tile_n_for(int m, int n) {
  return kernels::kGemmWgmmaConfigs[kernels::gemm_wgmma_pick_config(m, n, kSms)].tile_n;
}

int tile_m_for(int m, int n) {
  return kernels::kGemmWgmmaConfigs[kernels::gemm_wgmma_pick_config(m, n, kSms)].tile_m;
}

// Tiles of one configuration on kSms SMs: how full the last wave is, in percent.
int last_wave_pct(int m, int n, int tile_m, int tile_n) {
  const int tiles = ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
  const int last = tiles % kSms == 0 ? kSms : tiles % kSms;
  return 100 * last / kSms;
}

TEST(GemmWgmmaConfig, WideTilesThatFillTheLastWave) {
  // N = 14336 at M = 1024: 448 tiles of 128 x 256 leave the fourth wave 39% full; 512 tiles of
  // 128 x 224 fill it to 88%.
  EXPECT_EQ(last_wave_pct(1024, 14336, 128, 256), 39);
  EXPECT_EQ(last_wave_pct(1024, 14336, 128, 224), 87);
  EXPECT_EQ(tile_n_for(1024, 14336), 224);
  EXPECT_EQ(tile_m_for(1024, 14336), 128);
  // The fused QKV projection, N = 6144: 256 tiles of 128 x 192 fill the second wave to 94%
  // (192 tiles of 128 x 256: 45%).
  EXPECT_EQ(last_wave_pct(1024, 6144, 128, 192), 93);
  EXPECT_EQ(last_wave_pct(1024, 6144, 128, 256), 45);
  EXPECT_EQ(tile_n_for(1024, 6144), 192);
}

TEST(GemmWgmmaConfig, TheWidestTileWhereItsWavesAreFull) {
  // 128 tiles of 128 x 256 on 132 SMs: one wave.
  EXPECT_EQ(tile_n_for(1024, 4096), 256);
  EXPECT_EQ(tile_n_for(8192, 4096), 256);
  EXPECT_EQ(tile_n_for(2048, 14336), 256);
  EXPECT_EQ(tile_n_for(8192, 14336), 256);
}

TEST(GemmWgmmaConfig, DecodeSizesTakeOneWarpgroupTiles) {
  // A few rows: 64-row tiles, so that the padded rows cost half as much.
  for (const int m : {1, 8, 16, 64}) {
    EXPECT_EQ(tile_m_for(m, 4096), 64) << "m=" << m;
    EXPECT_EQ(tile_m_for(m, 14336), 64) << "m=" << m;
  }
}

TEST(GemmWgmmaConfig, EveryEntryFitsOneSm) {
  for (int i = 0; i < kernels::kGemmWgmmaConfigCount; ++i) {
    const kernels::GemmWgmmaConfig& c = kernels::kGemmWgmmaConfigs[i];
    // Stages of A (tile_m x 64) and W (tile_n x 64) 16-bit elements per k tile, the barriers and
    // the alignment pad, ctas_per_sm times, within 227 KiB less the grouped launches' 4 KiB table.
    const int stage = (c.tile_m + c.tile_n) * 64 * 2 * c.k_subtiles;
    const int bytes = c.stages * stage + 2 * c.stages * 8 + 1024 + 4112;
    EXPECT_LE(bytes * c.ctas_per_sm, 227 * 1024) << "entry " << i;
    EXPECT_EQ(c.tile_n % 8, 0) << "wgmma N is a multiple of 8";
    EXPECT_LE(c.tile_n, 256) << "wgmma N and a TMA box are at most 256";
    // A cluster's CTAs each load 1/cluster_m of the W tile: in whole 8-row swizzle atoms.
    EXPECT_TRUE(c.cluster_m == 1 || c.cluster_m == 2 || c.cluster_m == 4) << "entry " << i;
    EXPECT_EQ(c.tile_n % (8 * c.cluster_m), 0) << "entry " << i;
  }
}

TEST(GemmWgmmaConfig, EntriesNotYetTimedAreTakenOnlyWhenPinned) {
  for (const int n : {1000, 4096, 6144, 14336}) {
    for (int m = 1; m <= 16384; m = m * 3 / 2 + 1) {
      const int c = kernels::gemm_wgmma_pick_config(m, n, kSms);
      EXPECT_TRUE(kernels::kGemmWgmmaConfigs[c].auto_pick) << "m " << m << " n " << n;
    }
  }
}

// The FP8 kernel's entries (kernels/gemm_fp8.cuh): shared memory, the W parts of a cluster, and
// the plan's CTA count in whole clusters; entries not yet timed are taken only when pinned.
TEST(Fp8GemmConfig, EveryEntryFitsOneSm) {
  for (int i = 0; i < kernels::kFp8GemmConfigCount; ++i) {
    const kernels::Fp8GemmConfig& c = kernels::kFp8GemmConfigs[i];
    const int bytes = c.stages * (c.tile_m + c.tile_n) * 128 + 2 * c.stages * 8 + 1024;
    EXPECT_LE(bytes, 227 * 1024) << "entry " << i;
    EXPECT_TRUE(c.cluster_m == 1 || c.cluster_m == 2) << "entry " << i;
    EXPECT_EQ(c.tile_n % (8 * c.cluster_m), 0) << "entry " << i;
    // Accumulator registers a consumer thread holds (total + partials), within the 232 it gets.
    EXPECT_LE((1 + c.partials) * c.tile_n / 2, 200) << "entry " << i;
  }
}

TEST(Fp8GemmConfig, ThePlanTakesWholeClustersAndPinnedOnlyEntriesWhenPinned) {
  kernels::Fp8GemmProblem p;
  p.n = 4096;
  p.k = 4096;
  for (int m = 1; m <= 16384; m = m * 3 / 2 + 1) {
    p.m = m;
    const kernels::Fp8GemmPlan plan = kernels::fp8_gemm_plan(p, kSms);
    EXPECT_TRUE(kernels::kFp8GemmConfigs[plan.config].auto_pick) << "m " << m;
    for (int config = 0; config < kernels::kFp8GemmConfigCount; ++config) {
      for (const int ctas : {0, 1, 7}) {
        const kernels::Fp8GemmPlan pinned = kernels::fp8_gemm_plan(p, kSms, config, ctas);
        const int cluster = kernels::kFp8GemmConfigs[config].cluster_m;
        EXPECT_EQ(pinned.config, config);
        EXPECT_EQ(pinned.ctas % cluster, 0) << "m " << m << " config " << config;
        EXPECT_GE(pinned.ctas, cluster);
        EXPECT_LE(pinned.ctas, ctas > 0 ? std::max(ctas / cluster * cluster, cluster) : kSms);
      }
    }
  }
}

#endif  // NVDET_WITH_CUDA

}  // namespace
}  // namespace nvdet
