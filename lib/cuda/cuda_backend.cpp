// The four vendor and invariant CUDA backends: one class, parameterised by flavor, that dispatches
// each op to its op file and runs or times the prepared call. (cuda-portable:
// portable_backend.cpp.)
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "kernels/silu_mul.cuh"
#include "lib/backend/host_timer.h"
#include "lib/backend/moe_pipeline.h"
#include "lib/backend/split_k_gemm.h"
#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/kernel_paths.h"

namespace nvdet::cuda {
namespace {

class CudaBackend final : public Backend {
 public:
  CudaBackend(BackendInfo info, CudaFlavor flavor) : info_(std::move(info)), flavor_(flavor) {}

  const BackendInfo& info() const override { return info_; }

  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    validate_op_args(args, computes_fp8());
    if (const auto* moe = std::get_if<MoeArgs>(&args)) return run_moe_block(*moe, notes);
    PreparedCall call = prepare(args, notes);
    return run_prepared(ctx_, call);
  }

  std::optional<Timing> time(const OpArgs& args, const TimingOptions& opts) override {
    validate_op_args(args, computes_fp8());
    if (const auto* moe = std::get_if<MoeArgs>(&args)) {
      if (auto device = device_moe(*moe, nullptr)) return time_prepared(ctx_, device->call, opts);
      return time_host_driven([&] { run_moe_block(*moe, nullptr); }, opts);
    }
    PreparedCall call = prepare(args, nullptr);
    return time_prepared(ctx_, call, opts);
  }

  std::optional<double> copy_bandwidth_gbps(const TimingOptions& opts) override {
    return measure_copy_bandwidth_gbps(ctx_, opts);
  }

  int64_t gemm_k_chunk(DType dtype) const override {
    return flavor_ == CudaFlavor::kInvariant ? invariant_gemm_k_chunk(dtype) : 0;
  }
  HostTensor gemm_k_chunk_partials(const GemmArgs& args, RunNotes* notes) override {
    if (flavor_ != CudaFlavor::kInvariant) return Backend::gemm_k_chunk_partials(args, notes);
    validate_op_args(args);
    PreparedCall call = prepare_gemm_k_chunk_partials(ctx_, args, notes);
    add_path_notes(flavor_, true, notes);
    return run_prepared(ctx_, call);
  }

  DeviceDecodeOps* device_decode_ops() override {
    if (!decode_ops_) decode_ops_ = make_cuda_decode_ops(ctx_, flavor_);
    return decode_ops_.get();
  }

 private:
  // cublas calls cuBLASLt's FP8 GEMM (gemm_fp8_ops.cpp), cuda-invariant nvdet's wgmma e4m3 GEMM
  // (gemm_fp8_invariant_ops.cpp); the other flavors compute no FP8.
  bool computes_fp8() const {
    return flavor_ == CudaFlavor::kCublas || flavor_ == CudaFlavor::kInvariant;
  }

  // The MoE block on the host pipeline (lib/backend/moe_pipeline.h), this flavor's GEMMs on the
  // device; routing, gather, SwiGLU and the combine run on the host between the GEMM calls.
  //  - cublas and the cuBLASLt flavors: a plain expert loop, as a framework's eager MoE runs it:
  //    one cuBLASLt GEMM per expert with the default heuristic (whose choice follows each
  //    expert's row count), combined in ascending expert order;
  //  - cuda-invariant: the invariant GEMM per expert (its per-row order does not follow the row
  //    count), combined in ascending top-k rank;
  //  - cuda-vendor-policy: a vendor fused MoE planned by lib/ops/fused_moe_plan.h for this
  //    device's SMs, as cpu-variant plans it: each expert GEMM is the fused kernel's tile loop
  //    (the invariant GEMM, one fixed K order) over the whole of K or, where the plan splits K,
  //    over each K part with the parts added by the plan's fixed tree
  //    (lib/backend/split_k_gemm.h); the routed weight in fp32 rounded to the dtype and the
  //    combine by the plan's rule.
  HostTensor run_moe_block(const MoeArgs& args, RunNotes* notes) {
    if (auto device = device_moe(args, notes)) {
      HostTensor out = run_prepared(ctx_, device->call);
      describe_moe_device_run(ctx_, *device, args, notes);
      return out;
    }
    MoeKernels k;
    k.gemm = [this](const GemmArgs& g, const MoeGemmSite&, RunNotes* n) {
      PreparedCall call = prepare(g, n);
      return run_prepared(ctx_, call);
    };
    k.silu_mul = kernels::portable::silu_mul;
    const bool invariant = flavor_ == CudaFlavor::kInvariant;
    k.combine_order = [invariant](int64_t) {
      return invariant ? MoeCombineOrder::kRank : MoeCombineOrder::kSortedLayout;
    };
    if (flavor_ == CudaFlavor::kVendorPolicy) {
      k.fused_plan = [sms = ctx_.sm_count()](int64_t tokens, int experts, int top_k,
                                             int64_t width) {
        return plan_fused_moe(tokens, experts, top_k, width, sms);
      };
      k.gemm = [this](const GemmArgs& g, const MoeGemmSite& site, RunNotes* n) {
        return fused_plan_gemm(g, site, n);
      };
    }
    HostTensor out = run_moe(args, k, notes);
    if (notes) (*notes)["moe_host_steps"] = "routing, gather, SwiGLU and combine on the host";
    return out;
  }

  // The block on the device (moe_device_ops.cpp), with the host-driven pipeline's bits, where
  // it can run there and NVDET_MOE_HOST_PIPELINE=1 does not ask for the host pipeline:
  // cuda-invariant's grouped launches, the cuBLASLt flavors' expert loop, cuda-vendor-policy's
  // fused plan.
  std::optional<MoeDeviceCall> device_moe(const MoeArgs& args, RunNotes* notes) {
    const char* host = std::getenv("NVDET_MOE_HOST_PIPELINE");
    if (host && std::string(host) == "1") return std::nullopt;
    switch (flavor_) {
      case CudaFlavor::kInvariant: return prepare_invariant_moe_device(ctx_, args, notes);
      case CudaFlavor::kCublas:
      case CudaFlavor::kCublasLtNoSplit:
      case CudaFlavor::kCublasLtSmallWorkspace:
        return prepare_expert_loop_moe_device(ctx_, flavor_, args, notes);
      case CudaFlavor::kVendorPolicy: return prepare_fused_plan_moe_device(ctx_, args, notes);
    }
    return std::nullopt;
  }

  // One GEMM of cuda-vendor-policy's fused plan (run_moe_block): the router as this flavor's
  // ordinary GEMM; an expert GEMM as the fused kernel's tile loop, which walks K in one fixed
  // order: the invariant GEMM, whole or per K part. The notes name the plan's split, not the
  // call's tile (the device path runs every expert in one grouped launch instead).
  HostTensor fused_plan_gemm(const GemmArgs& g, const MoeGemmSite& site, RunNotes* n) {
    if (site.stage == MoeGemmSite::Stage::kRouter || site.split_k == 0) {
      PreparedCall call = prepare(g, n);
      return run_prepared(ctx_, call);
    }
    const auto whole = [&](const GemmArgs& part) {
      PreparedCall call = prepare_gemm(ctx_, CudaFlavor::kInvariant, part, nullptr);
      return run_prepared(ctx_, call);
    };
    if (n) *n = fused_plan_gemm_notes(site.split_k, site.split_len);
    if (site.split_k <= 1) return whole(g);
    return gemm_in_k_splits(g, site.split_len, whole, &weight_slices_);
  }

  // Every call's notes say which path ran and from which kernel image (machine code or PTX
  // JIT-compiled by the driver), so each report names them.
  PreparedCall prepare(const OpArgs& args, RunNotes* notes) {
    PreparedCall call = std::visit(
        [&](const auto& a) -> PreparedCall {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, GemmArgs>) return prepare_gemm(ctx_, flavor_, a, notes);
          if constexpr (std::is_same_v<T, RmsNormArgs>)
            return prepare_rmsnorm(ctx_, flavor_, a, notes);
          if constexpr (std::is_same_v<T, LogSoftmaxArgs>)
            return prepare_log_softmax(ctx_, flavor_, a, notes);
          if constexpr (std::is_same_v<T, AttentionDecodeArgs>)
            return prepare_attention_decode(ctx_, flavor_, a, notes);
          if constexpr (std::is_same_v<T, AttentionPrefillArgs>)
            return prepare_attention_prefill(ctx_, flavor_, a, notes);
          if constexpr (std::is_same_v<T, MoeArgs>) {
            throw_runtime_error("moe is run by run_moe_block, not as one prepared call");
          }
        },
        args);
    add_path_notes(flavor_, std::holds_alternative<GemmArgs>(args), notes);
    return call;
  }

  BackendInfo info_;
  CudaFlavor flavor_;
  DeviceContext ctx_;
  std::unique_ptr<DeviceDecodeOps> decode_ops_;  // after ctx_: destroyed before it
  KSliceCache weight_slices_;                    // cuda-vendor-policy's expert weights cut along K
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendInfo& info, CudaFlavor flavor) {
  return std::make_unique<CudaBackend>(info, flavor);
}

}  // namespace nvdet::cuda
