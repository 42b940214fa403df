#pragma once
// The CPU kernels behind cpu-reference, cpu-invariant, cpu-variant and cpu-portable. Arguments have
// passed validate_op_args. Each returns the output tensor and may add facts to `notes` (nullable).
#include "lib/backend/backend.h"

namespace nvdet::cpu {

// cpu-reference: double accumulation everywhere (reference_kernels.cpp).
HostTensor reference_gemm(const GemmArgs& args, RunNotes* notes);
HostTensor reference_rmsnorm(const RmsNormArgs& args, RunNotes* notes);
HostTensor reference_log_softmax(const LogSoftmaxArgs& args, RunNotes* notes);
HostTensor reference_attention_decode(const AttentionDecodeArgs& args, RunNotes* notes);
HostTensor reference_attention_prefill(const AttentionPrefillArgs& args, RunNotes* notes);

// cpu-invariant: fp32, one reduction plan fixed by the reduction length (invariant_*.cpp).
HostTensor invariant_gemm(const GemmArgs& args, RunNotes* notes);
// cpu-invariant's K chunk, and its GEMM's fp32 chunk partials [chunks, m, n] (no bias): the
// terms invariant_gemm adds in chunk order (Backend::gemm_k_chunk_partials).
inline constexpr int64_t kInvariantKChunk = 256;
HostTensor invariant_gemm_chunk_partials(const GemmArgs& args, RunNotes* notes);
HostTensor invariant_rmsnorm(const RmsNormArgs& args, RunNotes* notes);
HostTensor invariant_log_softmax(const LogSoftmaxArgs& args, RunNotes* notes);
HostTensor invariant_attention_decode(const AttentionDecodeArgs& args, RunNotes* notes);
HostTensor invariant_attention_prefill(const AttentionPrefillArgs& args, RunNotes* notes);

// cpu-variant: fp32, reduction plans chosen from the batch like vendor heuristics (variant_*.cpp).
HostTensor variant_gemm(const GemmArgs& args, RunNotes* notes);
HostTensor variant_rmsnorm(const RmsNormArgs& args, RunNotes* notes);
HostTensor variant_log_softmax(const LogSoftmaxArgs& args, RunNotes* notes);
HostTensor variant_attention_decode(const AttentionDecodeArgs& args, RunNotes* notes);
HostTensor variant_attention_prefill(const AttentionPrefillArgs& args, RunNotes* notes);
// The variant GEMM's reduction with a split count chosen by the caller, or with splits of
// `split_len` elements of K (a fused MoE plan's; not for FP8 GEMMs).
HostTensor variant_gemm_with_split_k(const GemmArgs& args, int split_k, RunNotes* notes);
HostTensor variant_gemm_with_split_len(const GemmArgs& args, int64_t split_len, RunNotes* notes);

// cpu-portable: the arithmetic of kernels/portable_ops.cuh, bitwise equal to cuda-portable
// (portable_kernels.cpp).
HostTensor portable_gemm(const GemmArgs& args, RunNotes* notes);
HostTensor portable_rmsnorm(const RmsNormArgs& args, RunNotes* notes);
HostTensor portable_log_softmax(const LogSoftmaxArgs& args, RunNotes* notes);
HostTensor portable_attention_decode(const AttentionDecodeArgs& args, RunNotes* notes);
HostTensor portable_attention_prefill(const AttentionPrefillArgs& args, RunNotes* notes);

// The FP8 GEMM (README "FP8", fp8_gemm.cpp), which each flavor's GEMM above calls for a
// GemmArgs with fp8_w set: double accumulation (reference), fp32 groups promoted in order
// (invariant), or split into `split_k` runs of whole groups (variant).
HostTensor reference_fp8_gemm(const GemmArgs& args, RunNotes* notes);
HostTensor invariant_fp8_gemm(const GemmArgs& args, RunNotes* notes);
HostTensor variant_fp8_gemm_with_split_k(const GemmArgs& args, int split_k, RunNotes* notes);

// The MoE block (lib/backend/moe_pipeline.h) with each flavor's GEMMs and combine
// (moe_kernels.cpp).
HostTensor reference_moe(const MoeArgs& args, RunNotes* notes);
HostTensor invariant_moe(const MoeArgs& args, RunNotes* notes);
HostTensor variant_moe(const MoeArgs& args, RunNotes* notes);
HostTensor portable_moe(const MoeArgs& args, RunNotes* notes);

}  // namespace nvdet::cpu
