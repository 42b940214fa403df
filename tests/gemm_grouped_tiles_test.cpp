// The grouped invariant GEMM's tile walk (kernels/gemm_grouped_tiles.cuh), run on the CPU as the
// kernel runs it on the device: over ragged groups (empty ones first, between and last, one row,
// a tile exactly, one past it), every (row, column) of every group is stored by exactly one tile,
// from its own group's rows of A and weights, and no row outside the groups is stored; A's TMA
// boxes cover each tile's group rows and no more boxes than that. Also the plain launches' walk,
// with and without clusters.
#include "kernels/gemm_grouped_tiles.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace nvdet::kernels {
namespace {

void check_walk(const std::vector<int>& counts, int tile_m, int tile_n, int n) {
  const int groups = static_cast<int>(counts.size());
  std::vector<int> first_row(1, 0), first_tile(static_cast<size_t>(groups) + 1);
  for (int c : counts) first_row.push_back(first_row.back() + c);
  const int rows = first_row.back(), n_tiles = (n + tile_n - 1) / tile_n;
  const int tiles =
      grouped_first_tiles(first_row.data(), groups, tile_m, n_tiles, first_tile.data());
  std::vector<int> stored(static_cast<size_t>(rows) * n, 0);
  for (int tile = 0; tile < tiles; ++tile) {
    const GroupedTileSite s = grouped_tile_site(first_tile.data(), first_row.data(), groups, tile_m,
                                                tile_n, n, n_tiles, tile);
    ASSERT_EQ(s.a_row, s.out_row);
    // The tile's group: the one whose rows hold its first row, and whose W rows it reads.
    int g = 0;
    while (!(s.out_row >= first_row[g] && s.out_row < first_row[g + 1])) ++g;
    ASSERT_EQ(s.row_end, first_row[g + 1]) << "tile " << tile;
    ASSERT_EQ(s.w_row, g * n + s.col) << "tile " << tile;
    ASSERT_EQ(s.col % tile_n, 0);
    // A's boxes: they cover the group's rows of the tile, stay inside the tile, and none is
    // wholly past the group.
    for (const int box : {8, 16}) {
      const int boxes = grouped_a_boxes(s, tile_m, box);
      const int group_rows = std::min(tile_m, s.row_end - s.a_row);
      ASSERT_GE(boxes * box, group_rows) << "tile " << tile;
      ASSERT_LE(boxes * box, tile_m) << "tile " << tile;
      ASSERT_LT((boxes - 1) * box, group_rows) << "tile " << tile;
    }
    for (int r = s.out_row; r < s.out_row + tile_m && r < s.row_end; ++r) {
      for (int c = s.col; c < s.col + tile_n && c < n; ++c)
        ++stored[static_cast<size_t>(r) * n + c];
    }
  }
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < n; ++c) {
      ASSERT_EQ(stored[static_cast<size_t>(r) * n + c], 1) << "row " << r << " col " << c;
    }
  }
}

TEST(GemmGroupedTiles, EveryRowOfEveryGroupIsStoredOnce) {
  check_walk({0, 3, 0, 1, 64, 65, 0, 130, 7, 0}, 64, 128, 1536);
  check_walk({0, 3, 0, 1, 64, 65, 0, 130, 7, 0}, 128, 64, 200);
  check_walk({5}, 64, 32, 31);
  std::mt19937 rng(33);
  std::uniform_int_distribution<int> count(0, 150);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int> counts(1 + trial * 7);
    for (int& c : counts) c = trial % 3 == 0 ? count(rng) % 4 : count(rng);
    check_walk(counts, trial % 2 ? 64 : 128, trial % 2 ? 128 : 256, 96 + trial * 17);
  }
}

// `ctas` persistent CTAs in clusters of `cluster` (cluster index = CTA / cluster, rank = CTA %
// cluster) walk the groups of tiles first, first + step, ... up to `total`, each rank of a cluster
// taking the tile visit(linear, rank, &tm, &tn) gives (true: inside the output, to be computed);
// every tile of the m_tiles x n_tiles output must be computed exactly once.
template <class Visit>
void expect_every_tile_once(int m_tiles, int n_tiles, int cluster, int ctas, int total,
                            Visit visit) {
  SCOPED_TRACE(::testing::Message() << m_tiles << " x " << n_tiles << " tiles, cluster " << cluster
                                    << ", " << ctas << " CTAs");
  std::vector<int> computed(static_cast<size_t>(m_tiles) * n_tiles, 0);
  const int clusters = ctas / cluster;
  ASSERT_GT(clusters, 0);
  for (int c = 0; c < clusters; ++c) {
    for (int linear = c; linear < total; linear += clusters) {
      for (int rank = 0; rank < cluster; ++rank) {
        int tm = -1, tn = -1;
        bool inside = false;
        ASSERT_NO_FATAL_FAILURE(visit(linear, rank, &tm, &tn, &inside));
        if (!inside) continue;
        ASSERT_TRUE(tm >= 0 && tm < m_tiles && tn >= 0 && tn < n_tiles) << tm << ", " << tn;
        ++computed[static_cast<size_t>(tm) * n_tiles + tn];
      }
    }
  }
  for (int tm = 0; tm < m_tiles; ++tm) {
    for (int tn = 0; tn < n_tiles; ++tn) {
      ASSERT_EQ(computed[static_cast<size_t>(tm) * n_tiles + tn], 1) << tm << ", " << tn;
    }
  }
}

// The plain launches' walks, as the persistent CTAs of the 16-bit and FP8 kernels take them.
// Every tile inside M is computed exactly once; with clusters, the CTAs of a cluster take the same
// tile column at every step, vertically adjacent row tiles, and the same number of steps (their
// rings run in lockstep), and the only tiles past M are the last ones of the last group of row
// tiles.
void check_plain_walk(int m_tiles, int n_tiles, int cluster, int ctas) {
  int tm0 = -1, tn0 = -1;
  expect_every_tile_once(
      m_tiles, n_tiles, cluster, ctas, (m_tiles + cluster - 1) / cluster * n_tiles,
      [&](int linear, int rank, int* tm, int* tn, bool* inside) {
        *inside = true;
        if (cluster == 1) {
          grouped_tile(linear, m_tiles, n_tiles, 8, tm, tn);
        } else {
          *inside = cluster_tile(linear, m_tiles, n_tiles, cluster, rank, tm, tn);
        }
        ASSERT_GE(*tn, 0);
        ASSERT_LT(*tn, n_tiles);
        ASSERT_EQ(*inside, *tm < m_tiles);
        if (rank == 0) {
          tm0 = *tm;
          tn0 = *tn;
          ASSERT_EQ(*tm % cluster, 0) << "a cluster's first tile starts a group of row tiles";
        } else {
          ASSERT_EQ(*tn, tn0) << "one W tile for the whole cluster";
          ASSERT_EQ(*tm, tm0 + rank);
        }
        if (!*inside) {
          ASSERT_NE(m_tiles % cluster, 0) << "a tile past M only in the last, partial group";
          ASSERT_LT(*tm, (m_tiles + cluster - 1) / cluster * cluster);
        }
      });
}

TEST(GemmGroupedTiles, PlainAndClusterWalksComputeEveryTileOnce) {
  for (const int cluster : {1, 2, 4}) {
    for (const int m_tiles : {1, 2, 3, 7, 8, 9, 16, 17, 64}) {
      for (const int n_tiles : {1, 5, 16, 32, 112}) {
        for (const int ctas : {cluster, 14, 132, 264})
          check_plain_walk(m_tiles, n_tiles, cluster, ctas);
      }
    }
  }
}

// The swapped decode form's clusters (kernels/gemm_invariant_wgmma.cu, entries 32-35): every rank
// of a group has the group's one tile row of A (the multicast side) and its own adjacent tile
// column, every tile is computed once, only the last, partial group of columns has a rank past N,
// and without clusters the walk is the plain grouped order.
void check_swapped_walk(int m_tiles, int n_tiles, int cluster, int ctas) {
  int tm0 = -1, tn0 = -1;
  expect_every_tile_once(
      m_tiles, n_tiles, cluster, ctas, m_tiles * ((n_tiles + cluster - 1) / cluster),
      [&](int linear, int rank, int* tm, int* tn, bool* inside) {
        *inside = swapped_cluster_tile(linear, m_tiles, n_tiles, cluster, rank, tm, tn);
        ASSERT_GE(*tm, 0);
        ASSERT_LT(*tm, m_tiles);
        ASSERT_EQ(*inside, *tn < n_tiles);
        if (rank == 0) {
          tm0 = *tm;
          tn0 = *tn;
          ASSERT_EQ(*tn % cluster, 0) << "a cluster's first tile starts a group of column tiles";
          if (cluster == 1) {
            int gm = -1, gn = -1;
            grouped_tile(linear, m_tiles, n_tiles, 8, &gm, &gn);
            ASSERT_EQ(*tm, gm) << "without clusters, the plain grouped order";
            ASSERT_EQ(*tn, gn);
          }
        } else {
          ASSERT_EQ(*tm, tm0) << "one A tile for the whole cluster";
          ASSERT_EQ(*tn, tn0 + rank);
        }
        if (!*inside) {
          ASSERT_NE(n_tiles % cluster, 0) << "a tile past N only in the last, partial group";
        }
      });
}

TEST(GemmGroupedTiles, SwappedClusterWalkComputesEveryTileOnce) {
  for (const int cluster : {1, 2, 4}) {
    for (const int m_tiles : {1, 2, 3, 9}) {
      for (const int n_tiles : {1, 5, 17, 128, 129, 448}) {
        for (const int ctas : {cluster, 12, 132, 264})
          check_swapped_walk(m_tiles, n_tiles, cluster, ctas);
      }
    }
  }
}

TEST(GemmGroupedTiles, AllGroupsEmptyMeansNoTiles) {
  const std::vector<int> first_row = {0, 0, 0, 0};
  std::vector<int> first_tile(4);
  EXPECT_EQ(grouped_first_tiles(first_row.data(), 3, 64, 8, first_tile.data()), 0);
}

}  // namespace
}  // namespace nvdet::kernels
