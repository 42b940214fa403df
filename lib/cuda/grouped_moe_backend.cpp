// cublas-grouped: the MoE block with cuBLAS's grouped GEMM, cublasGemmGroupedBatchedEx (the vendor
// call for many GEMMs of different shapes in one launch, as grouped-GEMM MoE layers use it). Every
// GEMM of the block goes through it: the router as a group of one problem, then every active
// expert's gate_up in one call and every active expert's down in one call, one group of one
// problem per expert. cuBLAS chooses its kernels for the whole call from all the problems' shapes,
// so an expert's rows may be computed differently when the other experts' row counts change.
//
// A, B and C share the activations' dtype (fp32 compute), the grouped API's plain type
// combination: the router logits and the down outputs come back in that dtype and are widened
// exactly to fp32 for the host steps. Routing, gather, SwiGLU and the combine (ascending expert,
// the sorted token layout's order) run on the host between the calls (lib/backend/moe_pipeline.h).
#include <functional>
#include <memory>

#include "kernels/silu_mul.cuh"
#include "lib/backend/host_timer.h"
#include "lib/backend/moe_pipeline.h"
#include "lib/core/error.h"
#include "lib/cuda/cuda_factories.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/cuda/kernel_paths.h"

namespace nvdet::cuda {
namespace {

class GroupedMoeBackend final : public Backend {
 public:
  explicit GroupedMoeBackend(BackendInfo info) : info_(std::move(info)) {}

  const BackendInfo& info() const override { return info_; }

  HostTensor run(const OpArgs& args, RunNotes* notes) override {
    validate_op_args(args);
    const auto* moe = std::get_if<MoeArgs>(&args);
    if (moe == nullptr) {
      throw_input_error("backend '" + info_.name + "' computes moe only, not " +
                        std::string(op_name(op_kind(args))));
    }
    HostTensor out = run_moe(*moe, kernels(), notes);
    if (notes) {
      (*notes)["kernel"] = "cublasGemmGroupedBatchedEx";
      (*notes)["moe_host_steps"] = "routing, gather, SwiGLU and combine on the host";
    }
    return out;
  }

  std::optional<Timing> time(const OpArgs& args, const TimingOptions& opts) override {
    validate_op_args(args);
    const auto* moe = std::get_if<MoeArgs>(&args);
    if (moe == nullptr) return std::nullopt;
    std::function<void()> flush;
    if (opts.flush_l2) {
      flush = [this] {
        ctx_.flush_l2();
        ctx_.synchronize();
      };
    }
    return time_host_driven([&] { run_moe(*moe, kernels(), nullptr); }, opts, flush);
  }

  std::optional<double> copy_bandwidth_gbps(const TimingOptions& opts) override {
    return measure_copy_bandwidth_gbps(ctx_, opts);
  }

 private:
  MoeKernels kernels() {
    MoeKernels k;
    k.gemm = [this](const GemmArgs& g, const MoeGemmSite&, RunNotes* n) {
      return std::move(grouped({g}, {n}).front());
    };
    k.gemm_group = [this](const std::vector<GemmArgs>& calls, const std::vector<MoeGemmSite>&,
                          const std::vector<RunNotes*>& notes) { return grouped(calls, notes); };
    k.silu_mul = kernels::portable::silu_mul;
    k.combine_order = [](int64_t) { return MoeCombineOrder::kSortedLayout; };
    return k;
  }

  // out_i[m_i, n_i] = a_i[m_i, k_i] · w_i[n_i, k_i]^T for every call, in one grouped launch. In
  // cuBLAS's column-major terms each problem is C_i (n x m) = W_i^T (n x k) · A_i (k x m).
  std::vector<HostTensor> grouped(const std::vector<GemmArgs>& calls,
                                  const std::vector<RunNotes*>& notes) {
    const int count = static_cast<int>(calls.size());
    const DType t = calls.front().a->dtype();
    // Weights through the uid cache: all uploaded first, then their pointers taken, then checked
    // again (upload() may evict, and a group needs every expert resident at once).
    for (const GemmArgs& g : calls) ctx_.upload(*g.w);
    std::vector<const void*> w_ptr(count);
    for (int i = 0; i < count; ++i) w_ptr[i] = ctx_.upload(*calls[i].w);
    for (int i = 0; i < count; ++i) {
      if (ctx_.upload(*calls[i].w) != w_ptr[i]) {
        throw_runtime_error(
            "cublas-grouped: the experts' weights do not fit in the device "
            "tensor cache at once");
      }
    }
    std::vector<DeviceBuffer> a_buf, c_buf;
    std::vector<const void*> a_ptr(count);
    std::vector<void*> c_ptr(count);
    std::vector<cublasOperation_t> trans_a(count, CUBLAS_OP_T), trans_b(count, CUBLAS_OP_N);
    std::vector<int> m(count), n(count), k(count), lda(count), ldb(count), ldc(count);
    std::vector<int> group_size(count, 1);
    std::vector<float> alpha(count, 1.0f), beta(count, 0.0f);
    for (int i = 0; i < count; ++i) {
      const GemmArgs& g = calls[i];
      if (g.a->dtype() != t) throw_input_error("cublas-grouped: one group mixes dtypes");
      a_buf.push_back(ctx_.upload_array(g.a->data(), g.a->nbytes()));
      a_ptr[i] = a_buf.back().get();
      m[i] = static_cast<int>(g.w->dim(0));  // cuBLAS m: the output columns
      n[i] = static_cast<int>(g.a->dim(0));  // cuBLAS n: the rows
      k[i] = static_cast<int>(g.a->dim(1));
      lda[i] = ldb[i] = k[i];
      ldc[i] = m[i];
      c_buf.emplace_back(static_cast<size_t>(m[i]) * n[i] * dtype_size(t));
      c_ptr[i] = c_buf.back().get();
    }
    // The pointer arrays live on the device; shapes, scalars and group sizes on the host.
    const DeviceBuffer a_array = ctx_.upload_array(a_ptr.data(), a_ptr.size() * sizeof(void*));
    const DeviceBuffer w_array = ctx_.upload_array(w_ptr.data(), w_ptr.size() * sizeof(void*));
    const DeviceBuffer c_array = ctx_.upload_array(c_ptr.data(), c_ptr.size() * sizeof(void*));
    const cudaDataType_t type = cuda_data_type(t);
    check(cublasGemmGroupedBatchedEx(ctx_.cublas(), trans_a.data(), trans_b.data(), m.data(),
                                     n.data(), k.data(), alpha.data(),
                                     w_array.as<const void* const>(), type, lda.data(),
                                     a_array.as<const void* const>(), type, ldb.data(), beta.data(),
                                     c_array.as<void* const>(), type, ldc.data(), count,
                                     group_size.data(), CUBLAS_COMPUTE_32F),
          "cublasGemmGroupedBatchedEx");
    std::vector<HostTensor> out;
    for (int i = 0; i < count; ++i) {
      out.push_back(ctx_.download(c_ptr[i], t, {n[i], m[i]}));
      if (notes[i]) (*notes[i])["problems"] = std::to_string(count);
    }
    return out;
  }

  BackendInfo info_;
  DeviceContext ctx_;
};

}  // namespace

std::unique_ptr<Backend> make_grouped_moe_backend(const BackendInfo& info) {
  return std::make_unique<GroupedMoeBackend>(info);
}

}  // namespace nvdet::cuda
