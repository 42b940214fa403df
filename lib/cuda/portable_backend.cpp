// cuda-portable: the GPU half of the portable invariant pair. Its own Backend class (the vendor and
// invariant flavors of cuda_backend.cpp share per-op files it does not use); every op goes
// through prepare_portable (portable_ops.cpp).
#include <memory>

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
    PreparedCall call = prepare_portable(ctx_, args, notes);
    if (notes) (*notes)["kernel_image"] = kernel_image_description(NVDET_CUDA_ARCHITECTURES);
    return run_prepared(ctx_, call);
  }

  std::optional<Timing> time(const OpArgs& args, const TimingOptions& opts) override {
    validate_op_args(args);
    PreparedCall call = prepare_portable(ctx_, args, nullptr);
    return time_prepared(ctx_, call, opts);
  }

  std::optional<double> copy_bandwidth_gbps(const TimingOptions& opts) override {
    return measure_copy_bandwidth_gbps(ctx_, opts.warmup, opts.repetitions);
  }

 private:
  BackendInfo info_;
  DeviceContext ctx_;
};

}  // namespace

std::unique_ptr<Backend> make_portable_backend(const BackendInfo& info) {
  return std::make_unique<PortableCudaBackend>(info);
}

}  // namespace nvdet::cuda
