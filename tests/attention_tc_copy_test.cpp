// The tensor-core attention producer's tile copy (kernels/attention_tc_copy.cuh), run on the CPU
// as the kernel runs it: for every head_dim the kernel takes and every tile height it copies (Q
// blocks of 64 and 128 rows, K/V tiles of 128 or 64 keys), the 128 threads' passes copy every
// (row, 16-byte chunk) exactly once, each thread keeps one chunk, and the swizzled destinations
// are a permutation of the tile's 16-byte slots in which each 1024-byte atom holds 8 whole rows
// with their chunks XOR-ed by row % 8 (what wgmma's 128-byte swizzle mode reads).
#include "kernels/attention_tc_copy.cuh"

#include <gtest/gtest.h>

#include <vector>

namespace nvdet::kernels {
namespace {

void check_tile(int head_dim, int rows) {
  SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", " + std::to_string(rows) + " rows");
  const TcTileCopy copy(head_dim);
  const int chunks = head_dim / 8;
  ASSERT_EQ(copy.chunks * copy.row_step, 128);
  ASSERT_EQ(copy.passes(rows) * copy.row_step, rows);
  std::vector<int> copied(static_cast<size_t>(rows) * chunks, 0);
  std::vector<int> slot_used(static_cast<size_t>(rows) * chunks, 0);
  for (int t = 0; t < 128; ++t) {
    for (int n = 0; n < copy.passes(rows); ++n) {
      const int r = copy.row(t, n), c = copy.chunk(t);
      ASSERT_GE(r, 0);
      ASSERT_LT(r, rows);
      ASSERT_LT(c, chunks);
      ++copied[static_cast<size_t>(r) * chunks + c];
      const uint32_t off = tc_swizzled_offset(r, c, rows);
      ASSERT_EQ(off % 16, 0u);
      ASSERT_LT(off, static_cast<uint32_t>(rows * head_dim * 2));
      ++slot_used[off / 16];
      // The 128-byte swizzle: column block c / 8, atom r / 8, row r % 8 of the atom, and the
      // chunk's place in its 128-byte row XOR-ed with r % 8.
      const uint32_t block = static_cast<uint32_t>(c / 8) * rows * 128;
      const uint32_t in_block = off - block;
      EXPECT_EQ(in_block / 1024, static_cast<uint32_t>(r / 8));
      EXPECT_EQ(in_block % 1024 / 128, static_cast<uint32_t>(r % 8));
      EXPECT_EQ((in_block % 128 / 16) ^ static_cast<uint32_t>(r % 8), static_cast<uint32_t>(c % 8));
    }
  }
  for (size_t i = 0; i < copied.size(); ++i) {
    EXPECT_EQ(copied[i], 1) << "row " << i / chunks << ", chunk " << i % chunks;
    EXPECT_EQ(slot_used[i], 1) << "slot " << i;
  }
}

TEST(AttentionTcCopy, EveryChunkOfEveryTileIsCopiedOnceToItsSwizzledSlot) {
  for (int head_dim : {64, 128, 256}) {
    const int key_tile = head_dim <= 128 ? 128 : 64;  // attention_tc_tile_keys
    check_tile(head_dim, key_tile);
    check_tile(head_dim, 64);                        // Q, one consumer warpgroup
    if (head_dim <= 128) check_tile(head_dim, 128);  // Q, two
  }
}

TEST(AttentionTcCopy, AThreadKeepsOneChunkAndItsRowsAdvanceByWholePasses) {
  for (int head_dim : {64, 128, 256}) {
    const TcTileCopy copy(head_dim);
    for (int t = 0; t < 128; ++t) {
      for (int n = 1; n < copy.passes(128); ++n) {
        EXPECT_EQ(copy.row(t, n) - copy.row(t, n - 1), copy.row_step);
      }
      EXPECT_EQ(copy.chunk(t), t % (head_dim / 8));
    }
  }
}

}  // namespace
}  // namespace nvdet::kernels
