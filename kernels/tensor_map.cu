// cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion (tensor_map.cuh). Host code only.
#include "kernels/tensor_map.cuh"

#include <cuda_runtime.h>

namespace nvdet::kernels {

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(ptr);
  }();
  return fn;
}

namespace {

// A map of `rank` dimensions (innermost first; strides of dimensions 1.. in bytes) with unit
// element strides and 128-byte swizzle, the one layout every map here has.
bool encode_swizzled(CUtensorMap* map, CUtensorMapDataType type, const void* base, uint32_t rank,
                     const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box) {
  const auto fn = tensor_map_encoder();
  if (!fn) return false;
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  return fn(map, type, rank, const_cast<void*>(base), dims, strides, box, elem_strides,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace

bool encode_swizzled_tile_map(CUtensorMap* map, CUtensorMapDataType type, const void* base,
                              uint64_t rows, uint64_t cols, uint64_t row_bytes, uint32_t box_cols,
                              uint32_t box_rows) {
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {row_bytes};
  const cuuint32_t box[2] = {box_cols, box_rows};
  return encode_swizzled(map, type, base, 2, dims, strides, box);
}

bool encode_swizzled_stage_map(CUtensorMap* map, CUtensorMapDataType type, const void* base,
                               uint64_t rows, uint64_t k_tiles, uint64_t row_bytes,
                               uint32_t box_rows, uint32_t box_k_tiles) {
  // Dimension 2 steps one k tile of 128 bytes along the row (64 two-byte elements or 128 one-byte
  // codes); dimension 1 one row.
  uint64_t tile_elems = 0;
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16: tile_elems = 64; break;
    case CU_TENSOR_MAP_DATA_TYPE_UINT8: tile_elems = 128; break;
    default: return false;
  }
  const cuuint64_t dims[3] = {tile_elems, rows, k_tiles};
  const cuuint64_t strides[2] = {row_bytes, 128};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(tile_elems), box_rows, box_k_tiles};
  return encode_swizzled(map, type, base, 3, dims, strides, box);
}

bool encode_paged_kv_map(CUtensorMap* map, CUtensorMapDataType type, const void* base,
                         uint64_t num_pages, uint32_t page_size, uint32_t num_kv_heads,
                         uint32_t head_dim, uint32_t elem_bytes) {
  if (elem_bytes * 64 != 128) return false;
  const uint64_t row = uint64_t{head_dim} * elem_bytes;  // one (slot, KV head)
  const cuuint64_t dims[4] = {head_dim, num_kv_heads, page_size, num_pages};
  const cuuint64_t strides[3] = {row, row * num_kv_heads, row * num_kv_heads * page_size};
  const cuuint32_t box[4] = {64, 1, page_size, 1};
  return encode_swizzled(map, type, base, 4, dims, strides, box);
}

}  // namespace nvdet::kernels
