#pragma once
// Evicting the device's L2 between timed runs (`nvdet bench --l2 cold`): a kernel that reads a
// buffer at least twice the L2's size, so that what the next timed launch reads comes from DRAM,
// as a model's weights do when each layer's differ. Reads, not writes: a memset would leave the L2
// full of dirty lines whose write-back would then run inside the timed launch.
#include <cuda_runtime.h>

#include <cstddef>

namespace nvdet::kernels {

// Reads `bytes` (a multiple of 16) from `buffer` and folds them into one word that is written to
// `*sink` only if it equals a value no seeded buffer gives, so the reads cannot be elided.
cudaError_t launch_l2_flush(const void* buffer, size_t bytes, unsigned* sink, int sm_count,
                            cudaStream_t stream);

}  // namespace nvdet::kernels
