// cuda-invariant's K-chunk partials (Backend::gemm_k_chunk_partials), for the TP-invariant plan
// of lib/workloads/tp_gemm.h.
//
// The chunked plan of kernels/gemm_invariant.cuh (mma.sync, FFMA for fp32) computes chunk c's
// partial p_c of every element from zero with the same instruction sequence whatever the other
// chunks. A GEMM over chunk c's K columns alone is therefore ((0 + p_c)) = p_c: one launch per
// chunk, on the strided K slice of a and w (lda = ldw = K), fp32 out, no bias, forced onto the
// chunked path. On sm_90a, where cuda-invariant's own run() takes the wgmma path (one chain over
// the whole of K), these partials add up to the chunked path's bits, not to run()'s: the plan
// then holds across tp (and batch), against the chunked unsharded GEMM.
#include "kernels/gemm_invariant.cuh"
#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/cuda/gemm_settings.h"

namespace nvdet::cuda {

int64_t invariant_gemm_k_chunk(DType dtype) {
  return kernels::gemm_invariant_chunk_k(elem_type(dtype));
}

PreparedCall prepare_gemm_k_chunk_partials(DeviceContext& ctx, const GemmArgs& args,
                                           RunNotes* notes) {
  const int64_t m = args.a->dim(0), k = args.a->dim(1), n = args.w->dim(0);
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    throw_input_error("gemm: dimensions beyond 2^31 - 1 are not supported on the GPU");
  const DType in = args.a->dtype();
  const int64_t kc = invariant_gemm_k_chunk(in), chunks = (k + kc - 1) / kc;
  ctx.upload(*args.a);  // both resident before either pointer is trusted (upload may evict)
  ctx.upload(*args.w);
  const auto* a = static_cast<const std::byte*>(ctx.upload(*args.a));
  const auto* w = static_cast<const std::byte*>(ctx.upload(*args.w));

  PreparedCall call;
  call.out_dtype = DType::kFP32;
  call.out_shape = {chunks, m, n};
  call.owned.emplace_back(static_cast<size_t>(chunks * m * n) * sizeof(float));
  call.output = call.owned.back().get();
  auto* out = static_cast<float*>(const_cast<void*>(call.output));

  const kernels::GemmDevice device = gemm_device(ctx);
  const size_t elem = dtype_size(in);
  std::vector<kernels::GemmProblem> problems;
  std::vector<kernels::GemmPlan> plans;
  size_t workspace_bytes = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    kernels::GemmProblem p;
    p.a = a + c * kc * elem;
    p.w = w + c * kc * elem;
    p.out = out + c * m * n;
    p.m = static_cast<int>(m);
    p.n = static_cast<int>(n);
    p.k = static_cast<int>(std::min(kc, k - c * kc));
    p.lda = p.ldw = k;
    p.ldo = n;
    p.in_type = elem_type(in);
    p.out_type = kernels::GemmType::kFP32;
    plans.push_back(kernels::gemm_invariant_plan(p, device, kernels::GemmSchedule::kAuto,
                                                 kernels::GemmPath::kMmaSync));
    workspace_bytes = std::max(workspace_bytes, plans.back().workspace_bytes);
    problems.push_back(p);
  }
  void* workspace = workspace_bytes ? ctx.workspace(workspace_bytes) : nullptr;
  if (notes) {
    (*notes)["kernel"] = kernels::gemm_path_name(plans.front().path);
    (*notes)["chunk_k"] = std::to_string(kc);
    (*notes)["chunks"] = std::to_string(chunks);
    (*notes)["k_order"] = "one launch per K chunk (fp32 partials)";
  }
  call.launch = [problems, plans, workspace, workspace_bytes](cudaStream_t stream) {
    for (size_t i = 0; i < problems.size(); ++i) {
      const cudaError_t e =
          kernels::gemm_invariant_launch(problems[i], plans[i], workspace, workspace_bytes, stream);
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  };
  return call;
}

}  // namespace nvdet::cuda
