#pragma once
// Where the tensor-core attention's producer puts a [rows][head_dim] bf16/fp16 tile (Q, or a K or
// V tile) in shared memory, and which thread copies what: host/device so that the CPU tests check
// the same functions the kernel (attention_tc.cu) uses.
//
// Layout: 128-byte-swizzled column blocks of 64 elements, [col block][rows][64]; 16-byte chunk c
// of row r sits at position (c % 8) XOR (r % 8) of its 128-byte row, the pattern wgmma's 128-byte
// swizzle mode reads.
// Copy: the 128 producer threads each copy one 16-byte chunk per pass; thread t takes chunk
// t % chunks of rows t / chunks + n * row_step (row_step = 128 / chunks rows a pass), so a
// thread's chunk is fixed for the whole tile.
#include <cstdint>

#if defined(__CUDACC__)
#define NVDET_COPY_FN __host__ __device__ constexpr
#else
#define NVDET_COPY_FN constexpr
#endif

namespace nvdet::kernels {

struct TcTileCopy {
  int chunks;    // 16-byte chunks a row: head_dim / 8
  int row_step;  // rows one pass of the 128 threads covers
  NVDET_COPY_FN explicit TcTileCopy(int head_dim)
      : chunks(head_dim / 8), row_step(128 / (head_dim / 8)) {}
  NVDET_COPY_FN int chunk(int thread) const { return thread % chunks; }
  NVDET_COPY_FN int row(int thread, int pass) const {
    return thread / chunks + pass * row_step;
  }
  // Passes for a tile of `rows` rows.
  NVDET_COPY_FN int passes(int rows) const { return rows / row_step; }
};

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile of `rows` rows.
NVDET_COPY_FN uint32_t tc_swizzled_offset(int row, int chunk, int rows) {
  return static_cast<uint32_t>((chunk >> 3) * rows * 128 + row * 128 + (((chunk & 7) ^ (row & 7)) << 4));
}

// K and V by TMA (TcAttentionParams::kv_tma): one box a page and 64-element column block, whose
// page_size rows of 128 bytes land from row `first_row` (the page's first key in the tile) of
// column block `col_block`. TMA's 128-byte swizzle XORs a chunk's position with bits 7-9 of its
// shared-memory address, which are the row's low three bits when the tile starts on 1024 bytes
// and first_row is a multiple of 8: the layout tc_swizzled_offset gives the cp.async copies.
NVDET_COPY_FN uint32_t tc_page_box_offset(int first_row, int col_block, int rows) {
  return static_cast<uint32_t>(col_block * rows * 128 + first_row * 128);
}

// Whether the K/V pages can come by TMA for this head_dim (tile width tile_keys), page size and
// split size: pages of 8 to 256 slots (a box row count TMA takes, a 1024-byte multiple) that
// divide the tile width and the split size, so that every tile (split start + n tile widths)
// starts on a page boundary.
NVDET_COPY_FN bool tc_kv_tma_applies(int tile_keys, int page_size, int split_size) {
  return tile_keys > 0 && page_size >= 8 && page_size <= 256 && tile_keys % page_size == 0 &&
         split_size % page_size == 0;
}

}  // namespace nvdet::kernels
