#pragma once
// Readable names of cuBLASLt tile and stage ids for RunNotes.
#include <cstdint>
#include <string>

namespace nvdet::cuda {

// "128x64" (rows x columns of cuBLASLt's column-major D tile), "UNDEFINED", or "tile#N" for ids
// this table does not know.
std::string cublaslt_tile_name(uint32_t tile_id);
// "64x4", "64xAUTO", "UNDEFINED", or "stages#N".
std::string cublaslt_stages_name(uint32_t stages_id);

}  // namespace nvdet::cuda
