#pragma once
// The per-op halves of the CUDA backends. Each backend is one CudaFlavor; each op file
// (gemm_ops.cpp, norm_ops.cpp, attention_ops.cpp) turns an op's arguments into a PreparedCall for
// that flavor.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include "lib/backend/backend.h"
#include "lib/backend/device_decode_ops.h"
#include "lib/cuda/cuda_factories.h"
#include "lib/cuda/device_context.h"

namespace nvdet::cuda {

PreparedCall prepare_gemm(DeviceContext& ctx, CudaFlavor flavor, const GemmArgs& args,
                          RunNotes* notes);
// An FP8 GEMM (args.is_fp8(), lib/cuda/gemm_fp8_ops.cpp): cuBLASLt's tensor-wide-scaled FP8
// matmul for cublas (what it refuses is cublas_fp8_refusal's), nvdet's wgmma e4m3 GEMM for
// cuda-invariant (prepare_invariant_fp8_gemm); the other flavors compute none.
PreparedCall prepare_fp8_gemm(DeviceContext& ctx, CudaFlavor flavor, const GemmArgs& args,
                              RunNotes* notes);
// cuda-invariant's FP8 GEMM (lib/cuda/gemm_fp8_invariant_ops.cpp); what it refuses is
// invariant_fp8_refusal's.
PreparedCall prepare_invariant_fp8_gemm(DeviceContext& ctx, const GemmArgs& args, RunNotes* notes);
PreparedCall prepare_rmsnorm(DeviceContext& ctx, CudaFlavor flavor, const RmsNormArgs& args,
                             RunNotes* notes);
PreparedCall prepare_log_softmax(DeviceContext& ctx, CudaFlavor flavor, const LogSoftmaxArgs& args,
                                 RunNotes* notes);
PreparedCall prepare_attention_decode(DeviceContext& ctx, CudaFlavor flavor,
                                      const AttentionDecodeArgs& args, RunNotes* notes);
PreparedCall prepare_attention_prefill(DeviceContext& ctx, CudaFlavor flavor,
                                       const AttentionPrefillArgs& args, RunNotes* notes);

// cuda-invariant's K chunk and its GEMM's fp32 chunk partials [chunks, m, n], no bias
// (Backend::gemm_k_chunk_partials; gemm_chunk_partials.cpp).
int64_t invariant_gemm_k_chunk(DType dtype);
PreparedCall prepare_gemm_k_chunk_partials(DeviceContext& ctx, const GemmArgs& args,
                                           RunNotes* notes);

// Device-pointer halves of the ops above, for callers whose tensors are already on the device (the
// device-resident decoder, lib/cuda/device_decode_ops.cpp): the same plans, kernels and notes as
// prepare_*, which upload host tensors and then call these. Their operands are the decoder's call
// records (lib/backend/device_decode_ops.h); an output pointer may be null (the call then owns a
// fresh output buffer). GEMM adds the one setting the decoder never asks for.
struct GemmOperands : DeviceGemmCall {
  bool allow_tf32 = false;
};
// cuda-invariant's MoE block on the device (moe_device_ops.cpp): the prepared call, and where its
// layout lands (read after a run, for the checks and the notes). nullopt where it cannot run
// there (FP8 experts, fp32, more than 512 experts, shapes or a device the grouped GEMM cannot
// take): the caller keeps the host-driven pipeline.
struct MoeDeviceCall {
  PreparedCall call;
  const int32_t* offsets = nullptr;  // [experts + 2]
  const int32_t* expert = nullptr;   // [rows * top_k]
  const float* logits = nullptr;     // [rows, experts]: the router's
  int64_t experts = 0;
};
std::optional<MoeDeviceCall> prepare_invariant_moe_device(DeviceContext& ctx, const MoeArgs& args,
                                                          RunNotes* notes);
// cublas and the cuBLASLt flavors' expert loop on the device: the router GEMM, the routing, the
// gather, one cuBLASLt GEMM per expert that received rows (sized from the route, read back once
// when the call is prepared), SwiGLU and the combine in ascending expert, with the host-driven
// pipeline's bits where the experts' slices are 256-byte aligned; nullopt as above (FP8, fp32).
std::optional<MoeDeviceCall> prepare_expert_loop_moe_device(DeviceContext& ctx, CudaFlavor flavor,
                                                            const MoeArgs& args, RunNotes* notes);
// cuda-vendor-policy's fused plan (lib/ops/fused_moe_plan.h) on the device, with its host
// pipeline's bits: each stage's experts in one grouped launch of the invariant GEMM (the fused
// kernel's tile loop), per K part where the plan splits K, the parts added by the fixed tree on
// the device, and the plan's combine kernel; the plan made from the route read back once when the
// call is prepared; nullopt where the grouped launch does not run (then the host pipeline runs).
std::optional<MoeDeviceCall> prepare_fused_plan_moe_device(DeviceContext& ctx, const MoeArgs& args,
                                                           RunNotes* notes);
// After a run: refuses a non-finite router logit (exit 3) and notes each probed row's experts.
void describe_moe_device_run(DeviceContext& ctx, const MoeDeviceCall& m, const MoeArgs& args,
                             RunNotes* notes);

PreparedCall prepare_gemm_device(DeviceContext& ctx, CudaFlavor flavor, const GemmOperands& g,
                                 RunNotes* notes);

using RmsNormOperands = DeviceRmsNormCall;
PreparedCall prepare_rmsnorm_device(DeviceContext& ctx, CudaFlavor flavor, const RmsNormOperands& r,
                                    RunNotes* notes);

// The attention ops' device buffers; everything else (lengths, page table, heads, splits) comes
// from the op's arguments, whose q / kv.k / kv.v tensors are not read.
using AttentionOperands = DeviceAttentionCall;
// Puts one of an attention call's small index arrays (page table, work items) on the device and
// returns where; the array must stay there until the call's kernels have run. Empty: each array
// is copied into a buffer the call owns, waiting for the copy (fine for one call; a decode step
// of 32 layers would wait 96 times and free as many buffers, so the decoder stages them instead).
using IndexUpload = std::function<const void*(const void* data, size_t bytes)>;
PreparedCall prepare_attention_decode_device(DeviceContext& ctx, CudaFlavor flavor,
                                             const AttentionDecodeArgs& args,
                                             const AttentionOperands& ops, RunNotes* notes,
                                             const IndexUpload& upload = {});
PreparedCall prepare_attention_prefill_device(DeviceContext& ctx, CudaFlavor flavor,
                                              const AttentionPrefillArgs& args,
                                              const AttentionOperands& ops, RunNotes* notes,
                                              const IndexUpload& upload = {});

// The notes every CUDA backend call ends with: which path ran ("path", unless the op set it) and
// from which kernel image.
void add_path_notes(CudaFlavor flavor, bool gemm, RunNotes* notes);

// The device-resident decoder's entry points for one of these backends (device_decode_ops.cpp).
std::unique_ptr<DeviceDecodeOps> make_cuda_decode_ops(DeviceContext& ctx, CudaFlavor flavor);

// cuda-portable, every op (portable_ops.cpp; its own Backend class, portable_backend.cpp).
PreparedCall prepare_portable(DeviceContext& ctx, const OpArgs& args, RunNotes* notes);

// GB/s (bytes read + written) of a 256 MiB device-to-device copy: the median of opts.repetitions
// timed copies, launched as opts says (never with an L2 flush).
double measure_copy_bandwidth_gbps(DeviceContext& ctx, const TimingOptions& opts);

}  // namespace nvdet::cuda
