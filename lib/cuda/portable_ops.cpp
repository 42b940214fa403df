// cuda-portable: every op through kernels/portable.cuh, whose outputs are bitwise equal to
// cpu-portable's (the arithmetic of both is kernels/portable_ops.cuh). Decode uses the invariant
// split size (512 KV tokens unless the sweep fixes split_size), exactly as cpu-portable does.
#include <algorithm>
#include <string>

#include "kernels/portable.cuh"
#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/ops/split_policies.h"

namespace nvdet::cuda {
namespace {

using kernels::PortableType;

PortableType portable_type(DType t) { return elem_type(t); }

void* add_output(PreparedCall& call, DType out_dtype, std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  call.out_dtype = out_dtype;
  call.out_shape = std::move(shape);
  call.owned.emplace_back(static_cast<size_t>(n) * dtype_size(out_dtype));
  call.output = call.owned.back().get();
  return call.owned.back().get();
}

void note(RunNotes* notes, const char* kernel) {
  if (!notes) return;
  (*notes)["kernel"] = kernel;
  (*notes)["path"] = "portable-fp32 (CUDA cores, IEEE fp32 ops only)";
}

void check_limit(const char* op, bool ok, const std::string& what) {
  if (!ok) throw_input_error(std::string(op) + " on cuda-portable: " + what);
}

PreparedCall prepare_gemm(DeviceContext& ctx, const GemmArgs& args, RunNotes* notes) {
  const int64_t m = args.a->dim(0), k = args.a->dim(1), n = args.w->dim(0);
  check_limit("gemm", (m + 63) / 64 <= 65535, "more than 4194240 rows is not supported");
  ctx.upload(*args.a);
  ctx.upload(*args.w);
  if (args.bias) ctx.upload(*args.bias);
  const void* a = ctx.upload(*args.a);
  const void* w = ctx.upload(*args.w);
  const void* bias = args.bias ? ctx.upload(*args.bias) : nullptr;
  PreparedCall call;
  void* out = add_output(call, args.out_dtype, {m, n});
  const PortableType in = portable_type(args.a->dtype()), ot = portable_type(args.out_dtype);
  call.launch = [=](cudaStream_t s) {
    return kernels::launch_portable_gemm(in, ot, a, w, bias, out, m, n, k, s);
  };
  note(notes, "portable_gemm_sequential_k");
  if (notes) (*notes)["split_k"] = "1";
  if (notes && args.allow_tf32) (*notes)["tf32"] = "ignored (IEEE fp32)";
  return call;
}

PreparedCall prepare_rmsnorm(DeviceContext& ctx, const RmsNormArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), d = args.x->dim(1);
  check_limit("rmsnorm", rows < (int64_t{1} << 31) && d < (int64_t{1} << 24),
              "rows must be below 2^31 and the row length below 2^24");
  ctx.upload(*args.x);
  ctx.upload(*args.weight);
  const void* x = ctx.upload(*args.x);
  const void* w = ctx.upload(*args.weight);
  PreparedCall call;
  void* out = add_output(call, args.out_dtype, {rows, d});
  const PortableType in = portable_type(args.x->dtype()), ot = portable_type(args.out_dtype);
  const float eps = args.eps;
  call.launch = [=](cudaStream_t s) {
    return kernels::launch_portable_rmsnorm(in, ot, x, w, out, rows, d, eps, s);
  };
  note(notes, "portable_rmsnorm_32_lane_tree");
  return call;
}

PreparedCall prepare_log_softmax(DeviceContext& ctx, const LogSoftmaxArgs& args, RunNotes* notes) {
  const int64_t rows = args.x->dim(0), v = args.x->dim(1);
  check_limit("log_softmax", rows < (int64_t{1} << 31), "rows must be below 2^31");
  const void* x = ctx.upload(*args.x);
  PreparedCall call;
  void* out = add_output(call, args.out_dtype, {rows, v});
  const PortableType in = portable_type(args.x->dtype()), ot = portable_type(args.out_dtype);
  call.launch = [=](cudaStream_t s) {
    return kernels::launch_portable_log_softmax(in, ot, x, out, rows, v, s);
  };
  note(notes, "portable_log_softmax_32_lane_tree");
  return call;
}

// Uploads q, k, v, the page table and the KV lengths; the uploads are owned by the call.
kernels::PortableAttention attention_params(DeviceContext& ctx, PreparedCall& call,
                                            const HostTensor& q, const PagedKv& kv, int32_t heads,
                                            int32_t kv_heads, int32_t head_dim, float scale,
                                            DType out_dtype, const char* op) {
  check_limit(
      op, head_dim <= kernels::kPortableMaxHeadDim,
      "head_dim above " + std::to_string(kernels::kPortableMaxHeadDim) + " is not supported");
  ctx.upload(q);
  ctx.upload(*kv.k);
  ctx.upload(*kv.v);
  kernels::PortableAttention p;
  p.q = ctx.upload(q);
  p.k = ctx.upload(*kv.k);
  p.v = ctx.upload(*kv.v);
  p.dtype = portable_type(q.dtype());
  p.out_type = portable_type(out_dtype);
  call.owned.push_back(
      ctx.upload_array(kv.page_table.data(), kv.page_table.size() * sizeof(int32_t)));
  p.page_table = call.owned.back().as<int32_t>();
  call.owned.push_back(ctx.upload_array(kv.kv_lens.data(), kv.kv_lens.size() * sizeof(int32_t)));
  p.kv_lens = call.owned.back().as<int32_t>();
  p.max_pages_per_seq = kv.max_pages_per_seq;
  p.page_size = kv.page_size;
  p.seqs = static_cast<int32_t>(kv.kv_lens.size());
  p.rows = static_cast<int32_t>(q.dim(0));
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.head_dim = head_dim;
  p.scale = scale;
  p.out = add_output(call, out_dtype, {q.dim(0), heads, head_dim});
  return p;
}

PreparedCall prepare_decode(DeviceContext& ctx, const AttentionDecodeArgs& args, RunNotes* notes) {
  check_limit("attention_decode", args.q->dim(0) <= 65535 && args.num_heads <= 65535,
              "more than 65535 sequences or heads is not supported");
  PreparedCall call;
  kernels::PortableAttention p =
      attention_params(ctx, call, *args.q, args.kv, args.num_heads, args.num_kv_heads,
                       args.head_dim, args.scale, args.out_dtype, "attention_decode");
  const int32_t split = invariant_attention_split_size(args.splits);
  int64_t longest = 0;
  for (int32_t len : args.kv.kv_lens) longest = std::max<int64_t>(longest, len);
  const auto max_splits = static_cast<int32_t>(std::max<int64_t>(1, (longest + split - 1) / split));
  float* ws =
      static_cast<float*>(ctx.workspace(kernels::portable_decode_workspace_bytes(p, max_splits)));
  call.launch = [=](cudaStream_t s) {
    return kernels::launch_portable_attention_decode(p, split, max_splits, ws, s);
  };
  note(notes, "portable_split_kv_decode");
  if (notes) {
    (*notes)["split_size"] = std::to_string(split);
    (*notes)["tile"] = "64";
  }
  return call;
}

PreparedCall prepare_prefill(DeviceContext& ctx, const AttentionPrefillArgs& args,
                             RunNotes* notes) {
  check_limit("attention_prefill", args.q->dim(0) * args.num_heads < (int64_t{1} << 31),
              "tokens x heads must be below 2^31");
  PreparedCall call;
  kernels::PortableAttention p =
      attention_params(ctx, call, *args.q, args.kv, args.num_heads, args.num_kv_heads,
                       args.head_dim, args.scale, args.out_dtype, "attention_prefill");
  call.owned.push_back(
      ctx.upload_array(args.q_start.data(), args.q_start.size() * sizeof(int32_t)));
  p.q_start = call.owned.back().as<int32_t>();
  const int32_t split = invariant_attention_split_size(args.splits);
  call.launch = [=](cudaStream_t s) {
    return kernels::launch_portable_attention_prefill(p, split, s);
  };
  note(notes, "portable_prefill_decode_splits");
  if (notes) {
    (*notes)["split_size"] = std::to_string(split);
    (*notes)["tile"] = "64";
  }
  return call;
}

}  // namespace

PreparedCall prepare_portable(DeviceContext& ctx, const OpArgs& args, RunNotes* notes) {
  return std::visit(
      [&](const auto& a) -> PreparedCall {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, GemmArgs>) return prepare_gemm(ctx, a, notes);
        if constexpr (std::is_same_v<T, RmsNormArgs>) return prepare_rmsnorm(ctx, a, notes);
        if constexpr (std::is_same_v<T, LogSoftmaxArgs>) return prepare_log_softmax(ctx, a, notes);
        if constexpr (std::is_same_v<T, AttentionDecodeArgs>) return prepare_decode(ctx, a, notes);
        if constexpr (std::is_same_v<T, AttentionPrefillArgs>)
          return prepare_prefill(ctx, a, notes);
        if constexpr (std::is_same_v<T, MoeArgs>) {
          // The MoE block is a host pipeline of GEMM calls (portable_backend.cpp), never one call.
          throw_runtime_error("moe is not one prepared call");
        }
      },
      args);
}

}  // namespace nvdet::cuda
