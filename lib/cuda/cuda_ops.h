#pragma once
// The per-op halves of the CUDA backends. Each backend is one CudaFlavor; each op file
// (gemm_ops.cpp, norm_ops.cpp, attention_ops.cpp) turns an op's arguments into a PreparedCall for
// that flavor.
#include "lib/backend/backend.h"
#include "lib/cuda/cuda_factories.h"
#include "lib/cuda/device_context.h"

namespace nvdet::cuda {

PreparedCall prepare_gemm(DeviceContext& ctx, CudaFlavor flavor, const GemmArgs& args,
                          RunNotes* notes);
PreparedCall prepare_rmsnorm(DeviceContext& ctx, CudaFlavor flavor, const RmsNormArgs& args,
                             RunNotes* notes);
PreparedCall prepare_log_softmax(DeviceContext& ctx, CudaFlavor flavor,
                                 const LogSoftmaxArgs& args, RunNotes* notes);
PreparedCall prepare_attention_decode(DeviceContext& ctx, CudaFlavor flavor,
                                      const AttentionDecodeArgs& args, RunNotes* notes);
PreparedCall prepare_attention_prefill(DeviceContext& ctx, CudaFlavor flavor,
                                       const AttentionPrefillArgs& args, RunNotes* notes);

// cuda-portable, every op (portable_ops.cpp; its own Backend class, portable_backend.cpp).
PreparedCall prepare_portable(DeviceContext& ctx, const OpArgs& args, RunNotes* notes);

// GB/s (bytes read + written) of a 256 MiB device-to-device copy: median of `reps` timed copies.
double measure_copy_bandwidth_gbps(DeviceContext& ctx, int warmup, int reps);

}  // namespace nvdet::cuda
