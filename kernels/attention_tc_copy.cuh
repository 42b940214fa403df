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

}  // namespace nvdet::kernels
