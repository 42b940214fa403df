#pragma once
// Readable names of cuBLASLt tile ids for RunNotes.
#include <cstdint>
#include <string>

namespace nvdet::cuda {

// "128x64" (rows x columns of cuBLASLt's column-major D tile), "UNDEFINED", or "tile#N" for ids
// this table does not know.
std::string cublaslt_tile_name(uint32_t tile_id);

}  // namespace nvdet::cuda
