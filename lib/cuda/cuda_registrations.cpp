// The CUDA backends' table: one record each (what it is, how it is created, what it computes and
// needs, what it runs, its part in bench). Compiled in every build: a CPU-only nvdet lists the same
// backends with the same support tables, and creating one there is a runtime failure that says
// why. The cudnn backend has its own record in lib/cudnn/cudnn_registration.cpp.
#include "lib/core/error.h"
#include "lib/cuda/cuda_factories.h"

namespace nvdet {

std::string cuda::needs_sm80(const DeviceFacts& d) {
  if (d.cc_major >= 8) return "";
  return "needs a GPU of compute capability 8.0 or newer (device 0 is " +
         std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ")";
}

std::string cuda::cublas_fp8_refusal(OpKind op, const Fp8Scheme& scheme) {
  if (op == OpKind::kModel) {
    return "does not compute FP8 models: the device decoder has no FP8 GEMM wired yet (the CPU "
           "backends compute them)";
  }
  if (scheme.format != Fp8Format::kE4M3) {
    return "does not compute FP8 format 'e5m2': cuBLASLt's FP8 GEMM has no kernel with both "
           "operands in e5m2; use 'e4m3'";
  }
  // cuBLASLt's scale modes pair an activation scale with one weight scale (gemm_fp8_ops.cpp).
  const Fp8ActScale act = scheme.act_scale;
  const Fp8WeightScale weight = scheme.weight_scale;
  const std::string pair = "act_scale '" + std::string(fp8_act_scale_name(act)) +
                           "' with weight_scale '" + std::string(fp8_weight_scale_name(weight)) +
                           "'";
  const char* takes =
      ": cuBLASLt's FP8 GEMM takes static or dynamic_tensor with tensor (one scale per "
      "operand), dynamic_token with channel (a scale per row of each) and group_128 with "
      "block_128x128 (its 128-wide vector and 128x128 block modes)";
  const bool tensor_pair = (act == Fp8ActScale::kStatic || act == Fp8ActScale::kDynamicTensor) &&
                           weight == Fp8WeightScale::kTensor;
  const bool row_pair = act == Fp8ActScale::kDynamicToken && weight == Fp8WeightScale::kChannel;
  const bool block_pair = act == Fp8ActScale::kGroup128 && weight == Fp8WeightScale::kBlock128;
  if (!tensor_pair && !row_pair && !block_pair) return "does not compute FP8 " + pair + takes;
  if (block_pair && scheme.accumulation == Fp8Accumulation::kFast) {
    return "does not compute FP8 accumulation 'fast' with " + pair +
           ": scales that change along K are applied as each 128-wide K group is promoted, which "
           "fast accumulation never does; use 'promoted'";
  }
  return "";
}

std::string cuda::invariant_fp8_refusal(OpKind /*op*/, const Fp8Scheme& scheme) {
  // FP8 models too: they run on the host engine (the device-resident decoder declines FP8
  // checkpoints), whose every FP8 GEMM is this backend's.
  if (scheme.format != Fp8Format::kE4M3) {
    return "does not compute FP8 format 'e5m2': its wgmma GEMM takes e4m3 operands; use 'e4m3'";
  }
  const bool per_group = scheme.act_scale == Fp8ActScale::kGroup128 ||
                         scheme.weight_scale == Fp8WeightScale::kBlock128;
  if (scheme.accumulation == Fp8Accumulation::kFast && per_group) {
    return "does not compute FP8 accumulation 'fast' with scales that change along K (act_scale "
           "group_128 or weight_scale block_128x128): they are applied when each 128-wide K "
           "group is promoted, which fast accumulation never does; use 'promoted'";
  }
  return "";
}

namespace {

using cuda::needs_sm80;

using OpDtypes = std::vector<std::pair<OpKind, std::vector<DType>>>;

// The vendor and invariant flavors share their dtypes: GEMM in every dtype (cuBLASLt, or the
// invariant GEMM's FFMA path for fp32), the row kernels in every dtype, attention in bf16 and
// fp16 only (kernels/split_kv_attention.cuh; cuda-invariant's tensor-core kernels,
// kernels/attention_tc.cuh, take the same).
OpDtypes flavor_ops() {
  const std::vector<DType> all = {DType::kBF16, DType::kFP16, DType::kFP32};
  const std::vector<DType> half = {DType::kBF16, DType::kFP16};
  return {{OpKind::kGemm, all},
          {OpKind::kRmsNorm, all},
          {OpKind::kLogSoftmax, all},
          {OpKind::kAttentionDecode, half},
          {OpKind::kAttentionPrefill, half},
          {OpKind::kMoe, all}};
}

// What a flavor runs, for `nvdet info`: cuBLASLt's GEMM (its choice is in each run's notes) or
// the invariant GEMM's plan on this device, and CUDA-core kernels for the other ops.
std::function<std::string()> flavor_path(cuda::CudaFlavor kind) {
  if (kind == cuda::CudaFlavor::kInvariant) {
#if NVDET_WITH_CUDA
    return [] { return cuda::invariant_kernel_path(); };
#else
    return [] {
      return std::string(
                 "GEMM: the invariant GEMM's plan for the device (a CUDA build's nvdet "
                 "info names it); attention: one split plan for decode and prefill, on tensor "
                 "cores where the device has them; other ops: ") +
             cuda::kCudaCoresPath;
    };
#endif
  }
  return [] {
    return std::string(
               "GEMM: cuBLASLt's heuristic (its choice is in each run's notes); other ops: ") +
           cuda::kCudaCoresPath;
  };
}

BackendRegistration flavor(BackendInfo info, cuda::CudaFlavor kind, BenchRole bench = {}) {
  (void)kind;  // unused where the factory is the CPU-only stub
  // FP8: cublas calls cuBLASLt's FP8 GEMM, cuda-invariant nvdet's wgmma e4m3 GEMM; the other
  // flavors compute none yet.
  Fp8SupportFn fp8 = {};
  if (kind == cuda::CudaFlavor::kCublas) fp8 = cuda::cublas_fp8_refusal;
  if (kind == cuda::CudaFlavor::kInvariant) fp8 = cuda::invariant_fp8_refusal;
  return {info,
          NVDET_GPU_FACTORY(info, cuda::make_cuda_backend(info, kind)),
          supports_from({flavor_ops(), true, needs_sm80}),
          flavor_path(kind),
          std::move(bench),
          std::move(fp8)};
}

BackendRegistration portable(BackendInfo info) {
  return {info, NVDET_GPU_FACTORY(info, cuda::make_portable_backend(info)),
          supports_from({all_ops_all_dtypes(), true, needs_sm80}),
          [] {
            return std::string(
                "every op: portable-fp32 (CUDA cores, IEEE fp32 ops only; bitwise "
                "equal to cpu-portable)");
          },
          BenchRole{}};
}

// cuBLAS's grouped GEMM: the MoE block only, in every dtype.
BackendRegistration grouped_moe(BackendInfo info) {
  const std::vector<DType> all = {DType::kBF16, DType::kFP16, DType::kFP32};
  return {info, NVDET_GPU_FACTORY(info, cuda::make_grouped_moe_backend(info)),
          supports_from({{{OpKind::kMoe, all}}, true, needs_sm80}),
          [] {
            return std::string(
                "moe: each stage's expert GEMMs in one cublasGemmGroupedBatchedEx "
                "call (cuBLAS chooses its kernel from every expert's row count); "
                "routing, SwiGLU and the combine on the host");
          },
          BenchRole{}};
}

}  // namespace

std::vector<BackendRegistration> cuda_backend_registrations() {
  const std::map<std::string, std::string> vendor_policy_stands_for = {
      {"rmsnorm", "a serving-stack RMSNorm whose block size and split follow the token count"},
      {"log_softmax", "a log-softmax that splits each row across blocks for small batches"},
      {"attention_decode",
       "FlashDecoding's split-KV heuristic (splits from batch, heads and SM count) with "
       "FlashInfer-style load-balanced split sizes from the batch's KV lengths"},
      {"attention_prefill",
       "chunked-prefill / cascade attention that splits the KV reduction at the prefix and chunk "
       "boundaries and merges the partial states"},
  };
  std::map<std::string, std::string> cublas_stands_for = vendor_policy_stands_for;
  cublas_stands_for["gemm"] = "cuBLASLt default heuristic (what torch.mm calls)";
  cublas_stands_for["moe"] =
      "a plain expert loop (transformers' eager MoE): one cuBLASLt GEMM per expert with the "
      "default heuristic, combined in ascending expert order";
  std::map<std::string, std::string> nosplit_stands_for = vendor_policy_stands_for;
  nosplit_stands_for["gemm"] =
      "cuBLASLt with CUBLASLT_REDUCTION_SCHEME_NONE (serving stacks' 'deterministic' setting)";
  std::map<std::string, std::string> ws1k_stands_for = vendor_policy_stands_for;
  ws1k_stands_for["gemm"] =
      "cuBLASLt default heuristic limited to a 1 KiB workspace (vLLM batch-invariant mode: "
      "CUBLASLT_WORKSPACE_SIZE=1, which PyTorch reads in KiB)";
  std::map<std::string, std::string> vendor_stands_for = vendor_policy_stands_for;
  vendor_stands_for["gemm"] = cublas_stands_for["gemm"];
  vendor_stands_for["moe"] =
      "a fused MoE kernel (vLLM fused_moe style, lib/ops/fused_moe_plan.h, as cpu-variant plans "
      "it for this device's SMs): one tile loop per expert GEMM in a fixed K order, split into K "
      "parts where the plan asks";
  using cuda::CudaFlavor;
  // The vendor GEMM users run (torch.mm): bench's baseline for any op without one of its own.
  BenchRole vendor_gemm;
  vendor_gemm.fallback_baseline = true;
  return {
      flavor({"cublas",
              "cuBLAS/cuBLASLt GEMM with default heuristics; other ops as cuda-vendor-policy", true,
              false, cublas_stands_for},
             CudaFlavor::kCublas, vendor_gemm),
      flavor({"cublaslt-nosplit",
              "cuBLASLt GEMM restricted to reduction scheme NONE; other ops as cuda-vendor-policy",
              true, false, nosplit_stands_for},
             CudaFlavor::kCublasLtNoSplit),
      flavor({"cublaslt-ws1k",
              "cuBLASLt GEMM, default heuristic with a 1 KiB workspace; other ops as "
              "cuda-vendor-policy",
              true, false, ws1k_stands_for},
             CudaFlavor::kCublasLtSmallWorkspace),
      flavor({"cuda-vendor-policy",
              "attention and norm kernels whose split counts follow the batch, as serving "
              "schedulers do",
              true, false, vendor_stands_for},
             CudaFlavor::kVendorPolicy),
      flavor({"cuda-invariant",
              "nvdet's batch-invariant CUDA kernels (fixed reduction plans)",
              true,
              true,
              {}},
             CudaFlavor::kInvariant),
      portable({"cuda-portable",
                "IEEE fp32 CUDA-core kernels, bitwise equal to cpu-portable on the CPU and on any "
                "GPU",
                true,
                true,
                {}}),
      grouped_moe({"cublas-grouped",
                   "cuBLAS grouped GEMM (cublasGemmGroupedBatchedEx) for every expert of the MoE "
                   "block in one call",
                   true,
                   false,
                   {{"moe",
                     "cublasGemmGroupedBatchedEx over all active experts at once, its "
                     "kernel chosen from every expert's row count"}}}),
  };
}

}  // namespace nvdet
