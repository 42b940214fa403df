// Decode and prefill attention for the CUDA backends. cuda-invariant runs the tensor-core kernels
// (attention_tc_ops.h) where the device and shape allow, else the CUDA-core split-KV kernels
// (kernels/split_kv_attention.cuh) with the same split plan for decode and prefill; the
// vendor-policy flavors (cuda-vendor-policy, cublas, cublaslt-nosplit) run the CUDA-core kernels
// with the batch-dependent plans (lib/cuda/attention_plans.h), with the device's real SM count.
#include <numeric>
#include <string>
#include <vector>

#include "kernels/split_kv_attention.cuh"
#include "lib/core/error.h"
#include "lib/cuda/attention_plans.h"
#include "lib/cuda/attention_tc_ops.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/ops/split_policies.h"

namespace nvdet::cuda {
namespace {

void check_supported(const char* op, DType dtype, int32_t num_heads, int32_t num_kv_heads,
                     int32_t head_dim) {
  const int group = num_kv_heads > 0 ? num_heads / num_kv_heads : 0;
  if (!kernels::split_kv_attention_supported(elem_type(dtype), head_dim, group)) {
    throw_input_error(std::string(op) +
                      " on the GPU takes bf16 or fp16 inputs, head_dim 64, 128 "
                      "or 256 and 1 to 8 query heads per KV head; got " +
                      std::string(dtype_name(dtype)) + ", head_dim " + std::to_string(head_dim) +
                      " and " + std::to_string(group) + " query heads per KV head");
  }
}

// The host tensors of an op, uploaded (pointers taken once all three are resident).
AttentionOperands upload_operands(DeviceContext& ctx, const HostTensor& q, const PagedKv& kv) {
  ctx.upload(q);
  ctx.upload(*kv.k);
  ctx.upload(*kv.v);
  AttentionOperands o;
  o.q = ctx.upload(q);
  o.k = ctx.upload(*kv.k);
  o.v = ctx.upload(*kv.v);
  o.dtype = q.dtype();
  return o;
}

// Puts the page table and the plan on the device (through `upload`, or into buffers the call
// owns); fills the kernel parameters. The output, unless the operands give one, is owned by the
// call.
kernels::SplitKvAttentionParams prepare_params(DeviceContext& ctx, PreparedCall& call,
                                               const AttentionOperands& ops, const PagedKv& kv,
                                               int32_t num_heads, int32_t num_kv_heads,
                                               int32_t head_dim, float scale, DType out_dtype,
                                               const AttentionPlan& plan,
                                               const IndexUpload& upload) {
  const auto put = [&](const void* data, size_t bytes) -> const void* {
    if (upload) return upload(data, bytes);
    call.owned.push_back(ctx.upload_array(data, bytes));
    return call.owned.back().get();
  };
  kernels::SplitKvAttentionParams p;
  p.q = ops.q;
  p.k = ops.k;
  p.v = ops.v;
  p.dtype = elem_type(ops.dtype);
  p.out_dtype = elem_type(out_dtype);
  p.max_pages_per_seq = kv.max_pages_per_seq;
  p.page_size = kv.page_size;
  p.num_heads = num_heads;
  p.num_kv_heads = num_kv_heads;
  p.head_dim = head_dim;
  p.scale = scale;
  p.num_items = static_cast<int32_t>(plan.items.size());
  p.num_rows = static_cast<int32_t>(plan.row_item_begin.size()) - 1;

  p.page_table = static_cast<const int32_t*>(
      put(kv.page_table.data(), kv.page_table.size() * sizeof(int32_t)));
  p.items = static_cast<const kernels::AttentionWorkItem*>(
      put(plan.items.data(), plan.items.size() * sizeof(kernels::AttentionWorkItem)));
  p.row_item_begin = static_cast<const int32_t*>(
      put(plan.row_item_begin.data(), plan.row_item_begin.size() * sizeof(int32_t)));

  call.out_dtype = out_dtype;
  call.out_shape = {p.num_rows, num_heads, head_dim};
  if (ops.out) {
    p.out = ops.out;
  } else {
    call.owned.emplace_back(static_cast<size_t>(p.num_rows) * num_heads * head_dim *
                            dtype_size(out_dtype));
    p.out = call.owned.back().get();
  }
  call.output = p.out;
  p.workspace = static_cast<float*>(
      ctx.workspace(kernels::split_kv_attention_workspace_bytes(p.num_items, num_heads, head_dim)));
  return p;
}

}  // namespace

PreparedCall prepare_attention_decode(DeviceContext& ctx, CudaFlavor flavor,
                                      const AttentionDecodeArgs& args, RunNotes* notes) {
  check_supported("attention_decode", args.q->dtype(), args.num_heads, args.num_kv_heads,
                  args.head_dim);
  return prepare_attention_decode_device(ctx, flavor, args, upload_operands(ctx, *args.q, args.kv),
                                         notes);
}

PreparedCall prepare_attention_decode_device(DeviceContext& ctx, CudaFlavor flavor,
                                             const AttentionDecodeArgs& args,
                                             const AttentionOperands& ops, RunNotes* notes,
                                             const IndexUpload& upload) {
  check_supported("attention_decode", ops.dtype, args.num_heads, args.num_kv_heads, args.head_dim);
  const bool invariant = flavor == CudaFlavor::kInvariant;
  if (invariant && use_attention_tc(ops.dtype, args.num_heads, args.num_kv_heads, args.head_dim)) {
    std::vector<int32_t> q_start(args.kv.kv_lens.size() + 1);
    std::iota(q_start.begin(), q_start.end(), 0);
    return prepare_attention_tc(
        ctx,
        {ops, &args.kv, q_start, args.num_heads, args.num_kv_heads, args.head_dim, args.scale,
         invariant_attention_split_size(args.splits), args.out_dtype},
        upload, notes);
  }
  const AttentionPlan plan =
      invariant
          ? invariant_decode_plan(args.kv.kv_lens, invariant_attention_split_size(args.splits))
          : vendor_decode_plan(args.kv.kv_lens, args.num_kv_heads, ctx.sm_count(), args.splits);
  PreparedCall call;
  const kernels::SplitKvAttentionParams p =
      prepare_params(ctx, call, ops, args.kv, args.num_heads, args.num_kv_heads, args.head_dim,
                     args.scale, args.out_dtype, plan, upload);
  call.launch = [p](cudaStream_t s) { return kernels::launch_attention_decode(p, s); };
  if (notes) {
    (*notes)["kernel"] = invariant ? "split_kv_decode_invariant" : "split_kv_decode_vendor_policy";
    if (invariant) {
      (*notes)["split_size"] = std::to_string(plan.split_size);
    } else {
      if (plan.flashdecoding_num_splits > 0) {
        (*notes)["flashdecoding_num_splits"] = std::to_string(plan.flashdecoding_num_splits);
      }
      (*notes)["split_len"] = std::to_string(plan.vendor_split_len);
    }
    (*notes)["num_splits"] = std::to_string(plan.num_splits_seq0);
  }
  return call;
}

PreparedCall prepare_attention_prefill(DeviceContext& ctx, CudaFlavor flavor,
                                       const AttentionPrefillArgs& args, RunNotes* notes) {
  check_supported("attention_prefill", args.q->dtype(), args.num_heads, args.num_kv_heads,
                  args.head_dim);
  return prepare_attention_prefill_device(ctx, flavor, args, upload_operands(ctx, *args.q, args.kv),
                                          notes);
}

PreparedCall prepare_attention_prefill_device(DeviceContext& ctx, CudaFlavor flavor,
                                              const AttentionPrefillArgs& args,
                                              const AttentionOperands& ops, RunNotes* notes,
                                              const IndexUpload& upload) {
  check_supported("attention_prefill", ops.dtype, args.num_heads, args.num_kv_heads, args.head_dim);
  const bool invariant = flavor == CudaFlavor::kInvariant;
  const int split_size = invariant_attention_split_size(args.splits);
  if (invariant && use_attention_tc(ops.dtype, args.num_heads, args.num_kv_heads, args.head_dim)) {
    PreparedCall call =
        prepare_attention_tc(ctx,
                             {ops, &args.kv, args.q_start, args.num_heads, args.num_kv_heads,
                              args.head_dim, args.scale, split_size, args.out_dtype},
                             upload, notes);
    if (notes) (*notes)["kv_segments"] = "the decode plan's splits of kv_len = position + 1";
    return call;
  }
  const AttentionPlan plan =
      invariant ? invariant_prefill_plan(args.q_start, args.kv.kv_lens, split_size)
                : vendor_prefill_plan(args.q_start, args.prefix_len, args.kv.kv_lens);
  PreparedCall call;
  const kernels::SplitKvAttentionParams p =
      prepare_params(ctx, call, ops, args.kv, args.num_heads, args.num_kv_heads, args.head_dim,
                     args.scale, args.out_dtype, plan, upload);
  // The invariant plan runs on the decode kernel (tiles of 128 from each split's start), so a
  // token's prefill row is computed exactly as its decode row.
  call.launch = invariant ? std::function<cudaError_t(cudaStream_t)>([p](cudaStream_t s) {
    return kernels::launch_attention_decode(p, s);
  })
                          : [p](cudaStream_t s) { return kernels::launch_attention_prefill(p, s); };
  if (notes) {
    (*notes)["kernel"] = invariant ? "split_kv_decode_invariant" : "split_kv_prefill_vendor_policy";
    (*notes)["tile"] = invariant ? "128" : "64";
    if (invariant) {
      (*notes)["split_size"] = std::to_string(split_size);
      (*notes)["num_splits"] = std::to_string(plan.num_splits_seq0);
    }
    (*notes)["kv_segments"] = invariant ? "the decode plan's splits of kv_len = position + 1"
                                        : "[0, prefix) | [prefix, chunk start) | [chunk start, p]";
  }
  return call;
}

}  // namespace nvdet::cuda
