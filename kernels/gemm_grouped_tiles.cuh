#pragma once
// The grouped invariant GEMM's walk over its output tiles (kernels/gemm_invariant_wgmma.cu), in
// plain C++ that the host can run too, so that tests/gemm_grouped_tiles_test.cpp checks on the
// CPU that the walk covers every row of every group exactly once.
//
// The tiles of group 0 come first, then those of group 1, ...; within a group, blocks of tile_m
// rows, each across the n tiles. Group g's rows [first_row[g], first_row[g + 1]) of A and out
// take W rows [g * n, (g + 1) * n) of the stacked weights.
#if defined(__CUDACC__)
#define NVDET_TILES_FN __host__ __device__ __forceinline__
#else
#define NVDET_TILES_FN inline
#endif

namespace nvdet::kernels {

// Grouped tile order for the plain launches: consecutive CTAs walk `group` m tiles for each n
// tile, so a wave of CTAs shares A and W panels in L2. Only affects which CTA computes a tile.
NVDET_TILES_FN void grouped_tile(int linear, int m_tiles, int n_tiles, int group, int* tm,
                                 int* tn) {
  const int per_group = group * n_tiles;
  const int first_m = (linear / per_group) * group;
  const int rows = m_tiles - first_m < group ? m_tiles - first_m : group;
  const int in_group = linear % per_group;
  *tm = first_m + in_group % rows;
  *tn = in_group / rows;
}

// The same order for clusters of `cluster` CTAs that take `cluster` vertically adjacent tiles of
// one tile column together (kernels/gemm_invariant_wgmma.cu, gemm_fp8_wgmma.cu): `linear` counts
// those groups of tiles, in grouped order over ceil(m_tiles / cluster) rows of groups (8 tiles of
// M per group of columns, as above), and the CTA of cluster rank `rank` takes the rank-th tile.
// Returns whether that tile lies inside M (one past it, at an odd count of row tiles, is computed
// on rows that exist and never stored). The groups number ceil(m_tiles / cluster) * n_tiles.
NVDET_TILES_FN bool cluster_tile(int linear, int m_tiles, int n_tiles, int cluster, int rank,
                                 int* tm, int* tn) {
  const int cluster_rows = (m_tiles + cluster - 1) / cluster;
  const int group = 8 / cluster > 0 ? 8 / cluster : 1;
  grouped_tile(linear, cluster_rows, n_tiles, group, tm, tn);
  *tm = *tm * cluster + rank;
  return *tm < m_tiles;
}

// The swapped decode form's walk (A's rows on wgmma's N side, W's on its 64-row side), whose
// clusters of `cluster` CTAs share one tile row of A and take `cluster` horizontally adjacent
// tile columns (rows of W): `linear` counts those groups in grouped order over m_tiles rows and
// ceil(n_tiles / cluster) columns of groups, and the CTA of cluster rank `rank` takes the rank-th
// column. Returns whether that column lies inside N (one past it, at an odd count of column
// tiles, is computed on rows of W that exist and never stored). The groups number
// m_tiles * ceil(n_tiles / cluster); with cluster 1 this is grouped_tile.
NVDET_TILES_FN bool swapped_cluster_tile(int linear, int m_tiles, int n_tiles, int cluster,
                                         int rank, int* tm, int* tn) {
  grouped_tile(linear, m_tiles, (n_tiles + cluster - 1) / cluster, 8, tm, tn);
  *tn = *tn * cluster + rank;
  return *tn < n_tiles;
}

// The groups of `cluster` tiles the walks above count over an m_tiles x n_tiles output:
// ceil(m_tiles / cluster) * n_tiles (cluster_tile; grouped_tile with cluster 1), or m_tiles *
// ceil(n_tiles / cluster) (swapped_cluster_tile).
NVDET_TILES_FN long long cluster_tile_groups(int m_tiles, int n_tiles, int cluster,
                                             bool swapped) {
  return swapped ? static_cast<long long>(m_tiles) * ((n_tiles + cluster - 1) / cluster)
                 : static_cast<long long>((m_tiles + cluster - 1) / cluster) * n_tiles;
}

// Where one output tile lies: the first row of A and of out, the first row of the stacked W, the
// row past the tile's group (rows from there on are not stored) and the first column.
struct GroupedTileSite {
  int a_row, w_row, out_row, row_end, col;
};

// first_tile[g] (g <= groups) from first_row (groups + 1 entries): the tiles before group g.
// Returns the number of tiles.
NVDET_TILES_FN int grouped_first_tiles(const int* first_row, int groups, int tile_m, int n_tiles,
                                       int* first_tile) {
  int tiles = 0;
  for (int g = 0; g < groups; ++g) {
    first_tile[g] = tiles;
    const int rows = first_row[g + 1] - first_row[g];
    tiles += (rows + tile_m - 1) / tile_m * n_tiles;
  }
  first_tile[groups] = tiles;
  return tiles;
}

// The site of tile `tile` (< the number of tiles): the group is the last whose first tile is
// <= tile (empty groups before it have the same first tile and are skipped).
NVDET_TILES_FN GroupedTileSite grouped_tile_site(const int* first_tile, const int* first_row,
                                                 int groups, int tile_m, int tile_n, int n,
                                                 int n_tiles, int tile) {
  int lo = 0, hi = groups - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (first_tile[mid] <= tile) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const int local = tile - first_tile[lo];
  const int tm = local / n_tiles, tn = local % n_tiles;
  GroupedTileSite site;
  site.a_row = site.out_row = first_row[lo] + tm * tile_m;
  site.w_row = lo * n + tn * tile_n;
  site.row_end = first_row[lo + 1];
  site.col = tn * tile_n;
  return site;
}

// The TMA boxes of box_rows rows of A that a grouped tile loads per k tile: enough to cover the
// group's rows in the tile (at most tile_m), box b at tile row b * box_rows. Rows of the last box
// past the group belong to the next group or lie past M: they only reach rows that are not stored.
NVDET_TILES_FN int grouped_a_boxes(const GroupedTileSite& site, int tile_m, int box_rows) {
  const int rows = site.row_end - site.a_row < tile_m ? site.row_end - site.a_row : tile_m;
  return (rows + box_rows - 1) / box_rows;
}

}  // namespace nvdet::kernels
