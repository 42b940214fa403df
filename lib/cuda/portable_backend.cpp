// cuda-portable: the GPU half of the portable invariant pair. Its own Backend class (the vendor and
// invariant flavors of cuda_backend.cpp share per-op files it does not use); every op goes
// through prepare_portable (portable_ops.cpp).
#include <memory>

#include "kernels/silu_mul.cuh"
#include "lib/backend/host_timer.h"
#include "lib/backend/moe_pipeline.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/kernel_paths.h"

namespace nvdet::cuda {
namespace {

class PortableCudaBackend final : public Backend {
 public:
  explicit PortableCudaBackend(BackendInfo info) : info_(std::move(info)) {}

  const BackendInfo& info() const override { return info_; }

  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    validate_op_args(args);
    if (const auto* moe = std::get_if<MoeArgs>(&args)) return run_moe_block(*moe, notes);
    PreparedCall call = prepare_portable(ctx_, args, notes);
    if (notes) (*notes)["kernel_image"] = kernel_image_description(NVDET_CUDA_ARCHITECTURES);
    return run_prepared(ctx_, call);
  }

  std::optional<Timing> time(const OpArgs& args, const TimingOptions& opts) override {
    validate_op_args(args);
    if (const auto* moe = std::get_if<MoeArgs>(&args)) {
      return time_host_driven([&] { run_moe_block(*moe, nullptr); }, opts);
    }
    PreparedCall call = prepare_portable(ctx_, args, nullptr);
    return time_prepared(ctx_, call, opts);
  }

  std::optional<double> copy_bandwidth_gbps(const TimingOptions& opts) override {
    return measure_copy_bandwidth_gbps(ctx_, opts);
  }

 private:
  // The MoE block: the pipeline of lib/backend/moe_pipeline.h with the portable device GEMM;
  // routing, gather, SwiGLU (portable exp) and the rank-order combine on the host, exactly as
  // cpu-portable computes them, so the two stay bitwise equal.
  HostTensor run_moe_block(const MoeArgs& args, RunNotes* notes) {
    MoeKernels k;
    k.gemm = [this](const GemmArgs& g, const MoeGemmSite&, RunNotes* n) {
      PreparedCall call = prepare_portable(ctx_, g, n);
      return run_prepared(ctx_, call);
    };
    k.silu_mul = kernels::portable::silu_mul;
    k.combine_order = [](int64_t) { return MoeCombineOrder::kRank; };
    return run_moe(args, k, notes);
  }

  BackendInfo info_;
  DeviceContext ctx_;
};

}  // namespace

std::unique_ptr<Backend> make_portable_backend(const BackendInfo& info) {
  return std::make_unique<PortableCudaBackend>(info);
}

}  // namespace nvdet::cuda
