// Which wgmma configuration (kernels/gemm_invariant.cuh, kGemmWgmmaConfigs) the invariant GEMM's
// plan takes for an output shape. Any entry gives the same bits (the GPU tests force each); this
// is the choice of the faster one by waves of persistent CTAs. Read without a GPU; built with the
// CUDA backends only.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#ifdef NVDET_WITH_CUDA
#include "kernels/gemm_invariant.cuh"
#endif

namespace nvdet {
namespace {

#ifdef NVDET_WITH_CUDA

constexpr int kSms = 132;

// The entry the plan takes for an M x N output with K deep on kSms SMs.
const kernels::GemmWgmmaConfig& picked(int m, int n, int k = 4096) {
  return kernels::kGemmWgmmaConfigs[kernels::gemm_wgmma_pick_config(m, n, k, kSms)];
}

int tile_n_for(int m, int n) { return picked(m, n).tile_n; }

int tile_m_for(int m, int n) { return picked(m, n).tile_m; }

// Tiles of one configuration on kSms SMs: how full the last wave is, in percent.
int last_wave_pct(int m, int n, int tile_m, int tile_n) {
  const int tiles = ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
  const int last = tiles % kSms == 0 ? kSms : tiles % kSms;
  return 100 * last / kSms;
}

TEST(GemmWgmmaConfig, WideTilesThatFillTheLastWave) {
  // N = 14336 at M = 1024: 448 tiles of 128 x 256 leave the fourth wave 39% full; 896 tiles of
  // 128 x 128 fill the seventh to 79% (timed faster than 512 tiles of 128 x 224, whose fourth
  // wave is 87% full: kGemmWgmmaConfigs).
  EXPECT_EQ(last_wave_pct(1024, 14336, 128, 256), 39);
  EXPECT_EQ(last_wave_pct(1024, 14336, 128, 224), 87);
  EXPECT_EQ(last_wave_pct(1024, 14336, 128, 128), 78);
  EXPECT_EQ(tile_n_for(1024, 14336), 128);
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

TEST(GemmWgmmaConfig, DecodeSizesTakeTheShortestTileThatHoldsM) {
  // One warpgroup's 64 rows from m = 33 to 64; below, the short tile of 8, 16 or 32 rows that
  // holds M, so that the ring's shared memory goes to W.
  const std::pair<int, int> rows_for_m[] = {{1, 8},   {8, 8},   {9, 16},  {16, 16},
                                            {17, 32}, {32, 32}, {33, 64}, {64, 64}};
  for (const auto& [m, rows] : rows_for_m) {
    EXPECT_EQ(tile_m_for(m, 4096), rows) << "m=" << m;
    EXPECT_EQ(tile_m_for(m, 6144), rows) << "m=" << m;
    EXPECT_EQ(tile_m_for(m, 14336), rows) << "m=" << m;
  }
  // The short tile keeps its 64-row twin's width and k tiles a stage.
  for (const int n : {4096, 6144, 14336}) {
    EXPECT_EQ(picked(1, n).tile_n, picked(64, n).tile_n) << "n=" << n;
    EXPECT_EQ(picked(1, n).k_subtiles, picked(64, n).k_subtiles) << "n=" << n;
  }
}

TEST(GemmWgmmaConfig, OneCtaPerSmWhereTheTilesFitOneWave) {
  // 128 tiles either way at 4096 x 4096, m = 256 (and 96 at 6144 x 4096, m = 128): 64x128 tiles
  // one to an SM rather than 128x64 tiles that may pair up on some SMs while others idle.
  EXPECT_EQ(tile_m_for(256, 4096), 64);
  EXPECT_EQ(tile_n_for(256, 4096), 128);
  EXPECT_EQ(tile_m_for(128, 6144), 64);
  EXPECT_EQ(tile_n_for(128, 6144), 128);
  // No tie at 14336 x 4096, m = 256: 112 tiles of 128 x 256 in one wave cost least (on H100s, in
  // two runs: 0.96x cuBLAS's throughput, against 0.92x with 128 tiles of 128 x 224).
  EXPECT_EQ(tile_m_for(256, 14336), 128);
  EXPECT_EQ(tile_n_for(256, 14336), 256);
}

TEST(GemmWgmmaConfig, EveryEntryFitsOneSm) {
  for (int i = 0; i < kernels::kGemmWgmmaConfigCount; ++i) {
    const kernels::GemmWgmmaConfig& c = kernels::kGemmWgmmaConfigs[i];
    // Stages of A (tile_m x 64) and W (tile_n x 64) 16-bit elements per k tile, the barriers and
    // the alignment pad, ctas_per_sm times, within 227 KiB less the grouped launches' 4 KiB table.
    // A short tile's wgmma reads 64 rows of A (of W in the swapped form): the rows past its own
    // follow the ring.
    const int stage = (c.tile_m + c.tile_n) * 64 * 2 * c.k_subtiles;
    const int wgmma_m_rows = c.swapped ? c.tile_n : c.tile_m;
    const int overread = (64 - wgmma_m_rows % 64) % 64 * 128;
    const int bytes = c.stages * stage + std::max(2 * c.stages * 8, overread) + 1024 + 4112;
    EXPECT_LE(bytes * c.ctas_per_sm, 227 * 1024) << "entry " << i;
    EXPECT_EQ(c.tile_n % 8, 0) << "wgmma N is a multiple of 8";
    EXPECT_LE(c.tile_n, 256) << "wgmma N and a TMA box are at most 256";
    // 64 rows a consumer, or one consumer's short tile of whole 8-row swizzle atoms.
    EXPECT_TRUE(c.tile_m % 64 == 0 ||
                (c.tile_m < 64 && c.tile_m % 8 == 0 && (c.cluster_m == 1 || c.swapped)))
        << "entry " << i;
    // A cluster's CTAs each load 1/cluster_m of the tile they share (W's, or A's in the swapped
    // form): in whole 8-row swizzle atoms.
    EXPECT_TRUE(c.cluster_m == 1 || c.cluster_m == 2 || c.cluster_m == 4) << "entry " << i;
    EXPECT_EQ((c.swapped ? c.tile_m : c.tile_n) % (8 * c.cluster_m), 0) << "entry " << i;
    if (c.swapped) {
      // W's rows on the 64-row side (one consumer), A's rows as wgmma's N.
      EXPECT_TRUE(c.tile_n == 32 || c.tile_n == 64) << "entry " << i;
      EXPECT_TRUE(c.tile_m == 8 || c.tile_m == 16 || c.tile_m == 32 || c.tile_m == 64)
          << "entry " << i;
      EXPECT_EQ(c.ctas_per_sm, 1) << "entry " << i;
      EXPECT_FALSE(c.auto_pick) << "entry " << i;
    }
  }
}

// Entries the cost model never takes (auto_pick false) come only from the rules: 2 or 4 k tiles
// a stage up to kGemmStreamRows rows, where they divide K's k tiles, in place of the same tile
// with one.
TEST(GemmWgmmaConfig, EntriesOutsideTheCostModelComeOnlyFromTheirRules) {
  for (const int n : {1000, 4096, 6144, 14336}) {
    for (const int k : {4096, 4100, 14336, 1000}) {
      for (int m = 1; m <= 16384; m = m * 3 / 2 + 1) {
        const kernels::GemmWgmmaConfig& c = picked(m, n, k);
        const int k_tiles = (k + 63) / 64;
        SCOPED_TRACE(::testing::Message() << "m " << m << " n " << n << " k " << k);
        EXPECT_EQ(c.cluster_m, 1);
        EXPECT_FALSE(c.swapped);
        if (c.k_subtiles > 1) {
          EXPECT_LE(m, kernels::kGemmStreamRows);
          EXPECT_EQ(k_tiles % c.k_subtiles, 0);
        } else {
          EXPECT_TRUE(c.auto_pick);
        }
        if (c.tile_m < 64) {
          EXPECT_LE(m, kernels::kGemmShortTileRows);
          EXPECT_GE(c.tile_m, m);
          EXPECT_TRUE(c.tile_m == 8 || m > c.tile_m / 2) << "the fewest rows that hold M";
        }
      }
    }
  }
}

TEST(GemmWgmmaConfig, StreamingSizesTakeSeveralKTilesAStageWhereTheyDivideK) {
  // 4096 x 4096 at m = 1: 128 tiles 64 x 32 (one wave), 64 k tiles: four a stage.
  for (const int m : {1, 16, 64}) {
    const kernels::GemmWgmmaConfig& c = picked(m, 4096);
    EXPECT_EQ(c.tile_m, m <= 8 ? 8 : m <= 16 ? 16 : 64);
    EXPECT_EQ(c.tile_n, 32);
    EXPECT_EQ(c.k_subtiles, 4) << "m " << m;
  }
  // K = 4100: 65 k tiles, which 2 and 4 do not divide; one k tile a stage.
  EXPECT_EQ(picked(1, 4096, 4100).k_subtiles, 1);
  // Up to 128 rows the 64-row tiles keep four k tiles a stage (m = 128: 128 tiles 64 x 64); past
  // kGemmStreamRows, one.
  for (const int m : {65, 128}) {
    const kernels::GemmWgmmaConfig& c = picked(m, 4096);
    EXPECT_EQ(c.tile_m, 64) << "m " << m;
    EXPECT_EQ(c.tile_n, 64) << "m " << m;
    EXPECT_EQ(c.k_subtiles, 4) << "m " << m;
  }
  EXPECT_EQ(picked(kernels::kGemmStreamRows + 1, 4096).k_subtiles, 1);
  // N = 14336: 112 tiles 64 x 128, whose twin holds two k tiles a stage.
  const kernels::GemmWgmmaConfig& wide = picked(1, 14336);
  EXPECT_EQ(wide.tile_n, 128);
  EXPECT_EQ(wide.k_subtiles, 2);
}

#endif  // NVDET_WITH_CUDA

}  // namespace
}  // namespace nvdet
