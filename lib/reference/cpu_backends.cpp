// The four CPU backends and their registrations. They share one Backend class; the flavor picks
// which kernel set runs. All ops and all three dtypes are supported by every flavor.
#include <memory>

#include "lib/backend/backend.h"
#include "lib/core/error.h"
#include "lib/reference/cpu_kernels.h"

namespace nvdet {
namespace {

enum class CpuFlavor { kReference, kInvariant, kVariant, kPortable };

// FP8 (README "FP8"): the portable pair computes none, so that cpu-portable stays bitwise equal
// to cuda-portable, which has no FP8 kernel yet.
std::string portable_fp8_refusal() {
  return "does not compute FP8: cpu-portable stays bitwise equal to cuda-portable, which has no "
         "FP8 kernel yet";
}

// The other three compute every scheme of gemm, moe and model but fast accumulation, which is
// the FP8 tensor cores' own reduced-precision accumulator: the CPU computes promoted only.
std::string cpu_fp8_refusal(OpKind, const Fp8Scheme& scheme) {
  if (scheme.accumulation == Fp8Accumulation::kFast) {
    return "does not compute FP8 accumulation 'fast': fast accumulation is the FP8 tensor "
           "cores' unpromoted, reduced-precision accumulator, which no CPU backend emulates; use "
           "'promoted'";
  }
  return "";
}

class CpuBackend final : public Backend {
 public:
  CpuBackend(BackendInfo info, CpuFlavor flavor) : info_(std::move(info)), flavor_(flavor) {}

  const BackendInfo& info() const override { return info_; }

  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    if (is_fp8(args) && flavor_ == CpuFlavor::kPortable) {
      throw_input_error("backend '" + info_.name + "' " + portable_fp8_refusal());
    }
    validate_op_args(args, true);
    return std::visit([&](const auto& a) { return dispatch(a, notes); }, args);
  }

  int64_t gemm_k_chunk(DType /*dtype*/) const override {
    return flavor_ == CpuFlavor::kInvariant ? cpu::kInvariantKChunk : 0;
  }
  HostTensor gemm_k_chunk_partials(const GemmArgs& args, RunNotes* notes) override {
    if (flavor_ != CpuFlavor::kInvariant) return Backend::gemm_k_chunk_partials(args, notes);
    validate_op_args(args);
    return cpu::invariant_gemm_chunk_partials(args, notes);
  }

 private:
  HostTensor dispatch(const GemmArgs& a, RunNotes* n) const {
    return pick(cpu::reference_gemm, cpu::invariant_gemm, cpu::variant_gemm, cpu::portable_gemm)(a,
                                                                                                 n);
  }
  HostTensor dispatch(const RmsNormArgs& a, RunNotes* n) const {
    return pick(cpu::reference_rmsnorm, cpu::invariant_rmsnorm, cpu::variant_rmsnorm,
                cpu::portable_rmsnorm)(a, n);
  }
  HostTensor dispatch(const LogSoftmaxArgs& a, RunNotes* n) const {
    return pick(cpu::reference_log_softmax, cpu::invariant_log_softmax, cpu::variant_log_softmax,
                cpu::portable_log_softmax)(a, n);
  }
  HostTensor dispatch(const AttentionDecodeArgs& a, RunNotes* n) const {
    return pick(cpu::reference_attention_decode, cpu::invariant_attention_decode,
                cpu::variant_attention_decode, cpu::portable_attention_decode)(a, n);
  }
  HostTensor dispatch(const AttentionPrefillArgs& a, RunNotes* n) const {
    return pick(cpu::reference_attention_prefill, cpu::invariant_attention_prefill,
                cpu::variant_attention_prefill, cpu::portable_attention_prefill)(a, n);
  }
  HostTensor dispatch(const MoeArgs& a, RunNotes* n) const {
    return pick(cpu::reference_moe, cpu::invariant_moe, cpu::variant_moe, cpu::portable_moe)(a, n);
  }
  template <class F>
  F pick(F reference, F invariant, F variant, F portable) const {
    switch (flavor_) {
      case CpuFlavor::kReference: return reference;
      case CpuFlavor::kInvariant: return invariant;
      case CpuFlavor::kVariant: return variant;
      case CpuFlavor::kPortable: return portable;
    }
    return reference;
  }

  BackendInfo info_;
  CpuFlavor flavor_;
};

// `path`: what `nvdet info` says the flavor runs (the host has one path per flavor).
BackendRegistration registration(BackendInfo info, CpuFlavor flavor, std::string path,
                                 BenchRole bench = {}) {
  return {info,
          [info, flavor]() -> std::unique_ptr<Backend> {
            return std::make_unique<CpuBackend>(info, flavor);
          },
          supports_from({all_ops_all_dtypes(), false, nullptr}),
          [path = std::move(path)] { return path; },
          std::move(bench),
          flavor == CpuFlavor::kPortable
              ? Fp8SupportFn([](OpKind, const Fp8Scheme&) { return portable_fp8_refusal(); })
              : Fp8SupportFn(cpu_fp8_refusal)};
}

}  // namespace

std::vector<BackendRegistration> cpu_backend_registrations() {
  BackendInfo reference{"cpu-reference",
                        "CPU kernels accumulating in double: the correctness reference",
                        false,
                        false,
                        {}};
  BackendInfo invariant{
      "cpu-invariant",
      "CPU fp32 kernels with one reduction plan fixed by the reduction length (batch-invariant)",
      false,
      true,
      {}};
  BackendInfo variant{
      "cpu-variant",
      "CPU fp32 kernels whose split strategy follows the batch shape, as vendor heuristics do",
      false,
      false,
      {
          {"gemm",
           "cuBLASLt's default heuristic choosing split-K for small m (4 splits at "
           "m <= 16, 2 at m <= 64, none above)"},
          {"rmsnorm",
           "a serving-stack RMSNorm that splits rows across blocks when the batch is "
           "small and sizes its blocks from the token count (132-SM H200 assumed)"},
          {"log_softmax",
           "a log-softmax that splits each row across blocks for small batches "
           "(132-SM H200 assumed)"},
          {"attention_decode",
           "FlashDecoding's split-KV heuristic (whether to split, from batch x KV heads and 132 "
           "SMs) with FlashInfer-style load-balanced split lengths from the batch's total KV"},
          {"attention_prefill",
           "chunked-prefill / cascade attention that splits the KV reduction at the prefix and "
           "chunk boundaries and merges the partial states"},
          {"moe",
           "a fused MoE kernel (vLLM fused_moe style, lib/ops/fused_moe_plan.h): its config "
           "from a tuned table keyed by the token count, a split-K from the grid of every "
           "expert's padded blocks, the routed weight rounded to the dtype and a combine "
           "whose rule follows the token count"},
      }};
  BackendInfo portable{
      "cpu-portable",
      "CPU twin of cuda-portable: IEEE fp32 ops only, bitwise equal to it on any GPU",
      false,
      true,
      {}};
  BenchRole correctness_reference;
  correctness_reference.reference =
      true;  // the oracle others are checked against, not a vendor kernel
  return {registration(reference, CpuFlavor::kReference,
                       "every op: host loops accumulating in double", correctness_reference),
          registration(invariant, CpuFlavor::kInvariant,
                       "every op: host fp32 kernels, one reduction plan fixed by the reduction "
                       "length (GEMM: fixed K chunks added in order)"),
          registration(variant, CpuFlavor::kVariant,
                       "every op: host fp32 kernels whose splits follow the batch shape"),
          registration(portable, CpuFlavor::kPortable,
                       "every op: portable-fp32 on the host (IEEE fp32 ops only; bitwise equal to "
                       "cuda-portable)")};
}

}  // namespace nvdet
