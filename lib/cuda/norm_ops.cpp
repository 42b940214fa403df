// RMSNorm and log-softmax for the CUDA backends.
//
// cuda-invariant: one block per row, block size from the row length only
// (kernels/rmsnorm.cu, kernels/log_softmax.cu state the reduction orders). The vendor-policy
// flavors (cuda-vendor-policy, cublas, cublaslt-nosplit) take the block size and the row split
// from lib/ops/split_policies.h with the device's real SM count, as the CPU variant does with a
// notional H200: rows < SMs split each row across blocks, and the block size changes at 64 rows.
#include <string>

#include "kernels/log_softmax.cuh"
#include "kernels/rmsnorm.cuh"
#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/ops/split_policies.h"

namespace nvdet::cuda {
namespace {

// The block size and row split of one call.
struct RowPlan {
  int threads = 0;
  int splits = 1;
};

RowPlan vendor_plan(DeviceContext& ctx, int64_t rows, int64_t row_len) {
  return {vendor_norm_block_threads(rows), vendor_norm_row_splits(rows, row_len, ctx.sm_count())};
}

void add_notes(RunNotes* notes, const char* kernel, const RowPlan& plan) {
  if (!notes) return;
  (*notes)["kernel"] = kernel;
  (*notes)["block_threads"] = std::to_string(plan.threads);
  (*notes)["row_splits"] = std::to_string(plan.splits);
}

// The output buffer of a [rows, cols] result, owned by the call.
void* add_output(PreparedCall& call, DType out_dtype, int64_t rows, int64_t cols) {
  call.out_dtype = out_dtype;
  call.out_shape = {rows, cols};
  call.owned.emplace_back(static_cast<size_t>(rows * cols) * dtype_size(out_dtype));
  call.output = call.owned.back().get();
  return call.owned.back().get();
}

void check_rows(const char* op, int64_t rows, int64_t row_len) {
  if (rows > 0x7fffffff || row_len > 0x7fffffff) {
    throw_input_error(std::string(op) +
                      ": more than 2^31 - 1 rows or columns is not supported on "
                      "the GPU");
  }
}

}  // namespace

PreparedCall prepare_rmsnorm(DeviceContext& ctx, CudaFlavor flavor, const RmsNormArgs& args,
                             RunNotes* notes) {
  check_rows("rmsnorm", args.x->dim(0), args.x->dim(1));
  ctx.upload(*args.x);
  ctx.upload(*args.weight);
  RmsNormOperands r;
  r.x = ctx.upload(*args.x);
  r.weight = ctx.upload(*args.weight);
  r.rows = args.x->dim(0);
  r.d = args.x->dim(1);
  r.dtype = args.x->dtype();
  r.out_dtype = args.out_dtype;
  r.eps = args.eps;
  return prepare_rmsnorm_device(ctx, flavor, r, notes);
}

PreparedCall prepare_rmsnorm_device(DeviceContext& ctx, CudaFlavor flavor, const RmsNormOperands& r,
                                    RunNotes* notes) {
  const int64_t rows = r.rows, d = r.d;
  check_rows("rmsnorm", rows, d);
  const DType dtype = r.dtype, out_dtype = r.out_dtype;
  const kernels::ElemType in_t = elem_type(dtype), out_t = elem_type(out_dtype);
  const float eps = r.eps;
  const void* x = r.x;
  const void* w = r.weight;
  PreparedCall call;
  void* out = r.out ? r.out : add_output(call, out_dtype, rows, d);
  if (r.out) {
    call.out_dtype = out_dtype;
    call.out_shape = {rows, d};
    call.output = out;
  }

  if (flavor == CudaFlavor::kInvariant) {
    const RowPlan plan{kernels::rmsnorm_invariant_block_threads(d, in_t), 1};
    add_notes(notes, "rmsnorm_invariant", plan);
    call.launch = [=](cudaStream_t s) {
      return kernels::launch_rmsnorm_rows(in_t, out_t, x, w, out, rows, d, eps, plan.threads, s);
    };
    return call;
  }
  const RowPlan plan = vendor_plan(ctx, rows, d);
  add_notes(notes, plan.splits > 1 ? "rmsnorm_vendor_split_rows" : "rmsnorm_vendor_rows", plan);
  if (plan.splits > 1) {
    float* ws = static_cast<float*>(
        ctx.workspace(kernels::rmsnorm_split_workspace_bytes(rows, plan.splits)));
    call.launch = [=](cudaStream_t s) {
      return kernels::launch_rmsnorm_split_rows(in_t, out_t, x, w, out, rows, d, eps, plan.splits,
                                                plan.threads, ws, s);
    };
  } else {
    call.launch = [=](cudaStream_t s) {
      return kernels::launch_rmsnorm_rows(in_t, out_t, x, w, out, rows, d, eps, plan.threads, s);
    };
  }
  return call;
}

PreparedCall prepare_log_softmax(DeviceContext& ctx, CudaFlavor flavor, const LogSoftmaxArgs& args,
                                 RunNotes* notes) {
  const int64_t rows = args.x->dim(0), v = args.x->dim(1);
  check_rows("log_softmax", rows, v);
  const DType dtype = args.x->dtype(), out_dtype = args.out_dtype;
  const kernels::ElemType in_t = elem_type(dtype), out_t = elem_type(out_dtype);
  const void* x = ctx.upload(*args.x);
  PreparedCall call;
  void* out = add_output(call, out_dtype, rows, v);

  if (flavor == CudaFlavor::kInvariant) {
    const RowPlan plan{kernels::log_softmax_invariant_block_threads(v, in_t), 1};
    const size_t stage = kernels::log_softmax_stage_bytes(in_t, out_t, v, plan.threads);
    add_notes(notes, "log_softmax_invariant", plan);
    if (notes) (*notes)["stage_bytes"] = std::to_string(stage);
    call.launch = [=](cudaStream_t s) {
      return kernels::launch_log_softmax_rows(in_t, out_t, x, out, rows, v, plan.threads, stage, s);
    };
    return call;
  }
  const RowPlan plan = vendor_plan(ctx, rows, v);
  add_notes(notes, plan.splits > 1 ? "log_softmax_vendor_split_rows" : "log_softmax_vendor_rows",
            plan);
  if (plan.splits > 1) {
    float* ws = static_cast<float*>(
        ctx.workspace(kernels::log_softmax_split_workspace_bytes(rows, plan.splits)));
    call.launch = [=](cudaStream_t s) {
      return kernels::launch_log_softmax_split_rows(in_t, out_t, x, out, rows, v, plan.splits,
                                                    plan.threads, ws, s);
    };
  } else {
    call.launch = [=](cudaStream_t s) {
      return kernels::launch_log_softmax_rows(in_t, out_t, x, out, rows, v, plan.threads, 0, s);
    };
  }
  return call;
}

}  // namespace nvdet::cuda
