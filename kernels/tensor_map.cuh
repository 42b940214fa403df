#pragma once
// The driver's cuTensorMapEncodeTiled, found once through the runtime (no link against libcuda):
// the TMA descriptors of the invariant GEMM and the tensor-core attention. Null when the driver
// does not offer it.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>

namespace nvdet::kernels {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder();

// A row-major [rows, cols] matrix (row stride row_bytes) as a TMA map whose box is box_rows rows
// of box_cols elements, 128-byte swizzled (box_cols elements must be 128 bytes: one swizzle atom
// row), zero-filled past the matrix: the operand tiles of the wgmma GEMMs. False when the driver
// has no encoder or refuses the map.
bool encode_swizzled_tile_map(CUtensorMap* map, CUtensorMapDataType type, const void* base,
                              uint64_t rows, uint64_t cols, uint64_t row_bytes, uint32_t box_cols,
                              uint32_t box_rows);

// The same matrix, K a whole number of 128-byte k tiles (64 16-bit elements, or 128 one-byte
// codes of `type` UINT8), seen as [k_tiles][rows][128 bytes] (the k tile index outermost, with a
// stride of 128 bytes): a box of box_k_tiles k tiles of box_rows rows lands as box_k_tiles
// consecutive [box_rows][128 bytes] tiles, each laid out (and swizzled) as the 2-d map's box at
// its k tile, so one copy fills a ring stage's k tiles of one operand. False for other types,
// when the driver has no encoder or when it refuses the map.
bool encode_swizzled_stage_map(CUtensorMap* map, CUtensorMapDataType type, const void* base,
                               uint64_t rows, uint64_t k_tiles, uint64_t row_bytes,
                               uint32_t box_rows, uint32_t box_k_tiles);

// A paged KV cache [num_pages, page_size, num_kv_heads, head_dim] (elements of elem_bytes) as a
// 4-d TMA map whose box is one page of one KV head's 64-element column block: page_size rows of
// 128 bytes, 128-byte swizzled. False when the driver has no encoder or refuses the map.
bool encode_paged_kv_map(CUtensorMap* map, CUtensorMapDataType type, const void* base,
                         uint64_t num_pages, uint32_t page_size, uint32_t num_kv_heads,
                         uint32_t head_dim, uint32_t elem_bytes);

}  // namespace nvdet::kernels
