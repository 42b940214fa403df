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

// TMA's 128-byte swizzle, modelled from its definition: the 16-byte chunk at linear byte offset
// x of a box written from a 1024-byte-aligned address lands at x with bits 4-6 XOR-ed by bits
// 7-9 of the shared-memory address.
uint32_t tma_swizzle_128b(uint32_t address) { return address ^ (((address >> 7) & 7u) << 4); }

// Every page box of a K/V tile by TMA (one box a page and 64-element column block, written from
// tc_page_box_offset) puts each (key, chunk) where the cp.async copy puts it, for every page size
// the TMA path takes; the page sizes it does not take are refused.
TEST(AttentionTcCopy, PageBoxesByTmaLandWhereTheChunkCopiesDo) {
  for (int head_dim : {64, 128, 256}) {
    const int keys = head_dim <= 128 ? 128 : 64;  // attention_tc_tile_keys
    for (int page = 1; page <= 512; ++page) {
      const bool applies = tc_kv_tma_applies(keys, page, 512);
      EXPECT_EQ(applies, page >= 8 && keys % page == 0) << "page " << page;
      if (!applies) continue;
      SCOPED_TRACE("head_dim " + std::to_string(head_dim) + ", pages of " + std::to_string(page));
      std::vector<int> slot_used(static_cast<size_t>(keys) * head_dim / 8, 0);
      for (int first = 0; first < keys; first += page) {
        for (int cb = 0; cb < head_dim / 64; ++cb) {
          const uint32_t box = tc_page_box_offset(first, cb, keys);
          ASSERT_EQ(box % 1024, 0u);  // the tile starts on 1024 bytes too
          for (int r = 0; r < page; ++r) {
            for (int c = 0; c < 8; ++c) {
              const uint32_t at = tma_swizzle_128b(box + static_cast<uint32_t>(r * 128 + c * 16));
              EXPECT_EQ(at, tc_swizzled_offset(first + r, cb * 8 + c, keys))
                  << "key " << first + r << ", chunk " << cb * 8 + c;
              ++slot_used[at / 16];
            }
          }
        }
      }
      for (size_t i = 0; i < slot_used.size(); ++i) EXPECT_EQ(slot_used[i], 1) << "slot " << i;
    }
  }
  // A split size the page size does not divide keeps cp.async: its tiles would start mid-page.
  EXPECT_FALSE(tc_kv_tma_applies(128, 16, 200));
  EXPECT_TRUE(tc_kv_tma_applies(128, 8, 200));
  EXPECT_TRUE(tc_kv_tma_applies(128, 16, 192));
}

}  // namespace
}  // namespace nvdet::kernels
