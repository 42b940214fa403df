// cuda-invariant's MoE block on the device (op moe): the router GEMM, the routing and sorted
// layout (kernels/moe_route.cu), the gather, each stage's experts in one grouped launch of the
// invariant GEMM over the experts' stacked weights, SwiGLU and the rank-order combine, all
// enqueued on the stream with no host step between them, so `nvdet bench` times the device work.
//
// The bits are those of the host-driven pipeline (lib/backend/moe_pipeline.h) with the same
// GEMM: the router GEMM is the same call; the routing row function is the host's; a grouped
// launch gives each row its per-expert call's bits; SwiGLU and the combine are the pipeline's
// arithmetic (the portable exp, products and sums each rounded, in ascending rank, the experts'
// down outputs in fp32). tests/gpu_moe_test.cpp compares the two.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/decode_elementwise.cuh"
#include "kernels/gemm_invariant.cuh"
#include "kernels/moe_route_launch.cuh"
#include "lib/backend/moe_pipeline.h"
#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/cuda/gemm_settings.h"

namespace nvdet::cuda {
namespace {

// DeviceContext::derived's purposes for the experts' stacked weights.
constexpr int kStackedGateUp = 2;
constexpr int kStackedDown = 3;

// One key for a list of tensors (their uids, FNV-1a): a stack is found again only for the same
// tensors in the same state.
uint64_t stack_key(const std::vector<const HostTensor*>& tensors) {
  uint64_t h = 1469598103934665603ull;
  for (const HostTensor* t : tensors) {
    uint64_t u = t->uid();
    for (int b = 0; b < 8; ++b, u >>= 8) h = (h ^ (u & 0xffu)) * 1099511628211ull;
  }
  return h;
}

const void* stacked(DeviceContext& ctx, const std::vector<const HostTensor*>& tensors,
                    int purpose) {
  size_t bytes = 0;
  for (const HostTensor* t : tensors) bytes += t->nbytes();
  return ctx.derived(stack_key(tensors), purpose, bytes, [&](void* dst, cudaStream_t stream) {
    size_t at = 0;
    for (const HostTensor* t : tensors) {
      const cudaError_t st = cudaMemcpyAsync(static_cast<std::byte*>(dst) + at, t->data(),
                                             t->nbytes(), cudaMemcpyHostToDevice, stream);
      if (st != cudaSuccess) return st;
      at += t->nbytes();
    }
    return cudaStreamSynchronize(stream);
  });
}

kernels::GemmDevice gemm_device(const DeviceContext& ctx) {
  kernels::GemmDevice d;
  d.cc_major = ctx.props().major;
  d.cc_minor = ctx.props().minor;
  d.sm_count = ctx.sm_count();
  return d;
}

}  // namespace

std::optional<MoeDeviceCall> prepare_invariant_moe_device(DeviceContext& ctx, const MoeArgs& args,
                                                          RunNotes* notes) {
  if (args.is_fp8()) return std::nullopt;
  const HostTensor& x = *args.x;
  const DType t = x.dtype();
  if (t == DType::kFP32) return std::nullopt;
  const int64_t rows = x.dim(0), hidden = x.dim(1);
  const int64_t experts = args.router->dim(0), k = args.top_k;
  const int64_t inter = args.down[0]->dim(1), routed = rows * k;
  if (experts > kernels::kGemmMaxGroups || routed >= INT32_MAX || rows < 1 ||
      routed * std::max(hidden, 2 * inter) >= INT32_MAX) {
    return std::nullopt;
  }
  const kernels::GemmDevice device = gemm_device(ctx);
  const size_t e = dtype_size(t);

  std::vector<const HostTensor*> gate_up(args.gate_up.begin(), args.gate_up.end());
  std::vector<const HostTensor*> down(args.down.begin(), args.down.end());
  // Uploads first, the stacks after (never dropping the two inputs), then the inputs again: cache
  // hits, which drop nothing, so every pointer below stays valid.
  ctx.upload(x);
  ctx.upload(*args.router);
  const void* gate_up_stack = stacked(ctx, gate_up, kStackedGateUp);
  const void* down_stack = stacked(ctx, down, kStackedDown);
  const void* x_dev = ctx.upload(x);
  const void* router_dev = ctx.upload(*args.router);

  kernels::GemmGroupedProblem gu, dn;
  gu.w = gate_up_stack;
  gu.groups = static_cast<int>(experts);
  gu.max_rows = static_cast<int>(routed);
  gu.n = static_cast<int>(2 * inter);
  gu.k = static_cast<int>(hidden);
  gu.in_type = gu.out_type = elem_type(t);
  dn = gu;
  dn.w = down_stack;
  dn.n = static_cast<int>(hidden);
  dn.k = static_cast<int>(inter);
  dn.out_type = kernels::ElemType::kFP32;

  MoeDeviceCall m;
  PreparedCall& call = m.call;
  const auto own = [&call](double bytes) {
    call.owned.emplace_back(static_cast<size_t>(std::max(bytes, 1.0)));
    return call.owned.back().get();
  };
  auto* logits = static_cast<float*>(own(rows * experts * 4.0));
  kernels::MoeRouteOutputs route;
  route.expert = static_cast<int32_t*>(own(routed * 4.0));
  route.weight = static_cast<float*>(own(routed * 4.0));
  route.offsets = static_cast<int32_t*>(own((experts + 2) * 4.0));
  route.row = static_cast<int32_t*>(own(routed * 4.0));
  route.position = static_cast<int32_t*>(own(routed * 4.0));
  route.counts = static_cast<int32_t*>(own(experts * 4.0));
  void* grouped_in = own(static_cast<double>(routed) * hidden * e);
  void* grouped_gu = own(static_cast<double>(routed) * 2 * inter * e);
  void* grouped_act = own(static_cast<double>(routed) * inter * e);
  void* grouped_out = own(static_cast<double>(routed) * hidden * 4);
  void* out = own(static_cast<double>(rows) * hidden * dtype_size(args.out_dtype));
  gu.a = grouped_in;
  gu.out = grouped_gu;
  gu.group_rows = route.offsets;
  dn.a = grouped_act;
  dn.out = grouped_out;
  dn.group_rows = route.offsets;
  if (!kernels::gemm_invariant_grouped_supported(gu, device) ||
      !kernels::gemm_invariant_grouped_supported(dn, device)) {
    return std::nullopt;
  }

  GemmOperands r;
  r.a = x_dev;
  r.w = router_dev;
  r.out = logits;
  r.m = rows;
  r.n = experts;
  r.k = hidden;
  r.dtype = t;
  r.out_dtype = DType::kFP32;
  r.w_uid = args.router->uid();
  RunNotes router_notes;
  auto router = std::make_shared<PreparedCall>(
      prepare_gemm_device(ctx, CudaFlavor::kInvariant, r, notes ? &router_notes : nullptr));

  const int config = forced_wgmma_config(), ctas = forced_gemm_ctas();
  const bool norm = args.norm_topk_prob;
  const DType out_dtype = args.out_dtype;
  call.launch = [=](cudaStream_t stream) {
    cudaError_t st = router->launch(stream);
    if (st != cudaSuccess) return st;
    st = kernels::launch_moe_route(logits, static_cast<int>(rows), static_cast<int>(experts),
                                   static_cast<int>(k), norm, route, stream);
    if (st != cudaSuccess) return st;
    st = kernels::launch_gather_rows(x_dev, route.row, routed, hidden * static_cast<int64_t>(e),
                                     grouped_in, stream);
    if (st != cudaSuccess) return st;
    st = kernels::gemm_invariant_grouped_launch(gu, device, config, ctas, stream);
    if (st != cudaSuccess) return st;
    st = kernels::launch_swiglu(elem_type(t), grouped_gu, grouped_act, routed, inter, stream);
    if (st != cudaSuccess) return st;
    st = kernels::gemm_invariant_grouped_launch(dn, device, config, ctas, stream);
    if (st != cudaSuccess) return st;
    return kernels::launch_moe_combine_typed(kernels::ElemType::kFP32, elem_type(out_dtype),
                                             grouped_out, route.position, route.weight, rows, k,
                                             hidden, out, stream);
  };
  call.output = out;
  call.out_dtype = out_dtype;
  call.out_shape = {rows, hidden};
  m.offsets = route.offsets;
  m.expert = route.expert;
  m.logits = logits;
  m.experts = experts;
  if (notes) {
    const std::string plan = gemm_plan_summary(router_notes);
    (*notes)["router"] = fmt::format("{} rows{}", rows, plan.empty() ? "" : "; " + plan);
    (*notes)["combine"] = "ascending top-k rank";
    const auto tile = [](int config) {
      const kernels::GemmWgmmaConfig& c = kernels::kGemmWgmmaConfigs[config];
      return fmt::format("{}x{}", c.tile_m, c.tile_n);
    };
    (*notes)["moe_device_steps"] = fmt::format(
        "router GEMM, routing, gather, SwiGLU and combine on the device; each stage's experts in "
        "one grouped launch of the invariant GEMM (gate_up tile {}, down tile {})",
        tile(kernels::gemm_invariant_grouped_config(gu, config)),
        tile(kernels::gemm_invariant_grouped_config(dn, config)));
  }
  return m;
}

void describe_moe_device_run(DeviceContext& ctx, const MoeDeviceCall& m, const MoeArgs& args,
                             RunNotes* notes) {
  std::vector<int32_t> offsets(static_cast<size_t>(m.experts) + 2);
  ctx.synchronize();
  check(cudaMemcpy(offsets.data(), m.offsets, offsets.size() * 4, cudaMemcpyDeviceToHost),
        "reading the MoE layout");
  if (offsets.back() != 0) {
    // The host routing's sentence, from the flagged row's logits.
    const int64_t r = offsets.back() - 1;
    std::vector<float> row(static_cast<size_t>(m.experts));
    check(cudaMemcpy(row.data(), m.logits + r * m.experts, row.size() * 4, cudaMemcpyDeviceToHost),
          "reading the router logits");
    const auto bad =
        std::find_if(row.begin(), row.end(), [](float v) { return !std::isfinite(v); });
    throw_runtime_error(
        fmt::format("MoE routing: router logit of row {}, expert {} is not finite ({})", r,
                    bad - row.begin(), bad == row.end() ? 0.0f : *bad));
  }
  if (!notes || args.noted_rows.empty()) return;
  const int64_t k = args.top_k;
  for (int64_t r : args.noted_rows) {
    std::vector<int32_t> picks(static_cast<size_t>(k));
    check(cudaMemcpy(picks.data(), m.expert + r * k, picks.size() * 4, cudaMemcpyDeviceToHost),
          "reading the MoE route");
    for (int32_t e : picks) {
      const int32_t count = offsets[e + 1] - offsets[e];
      (*notes)[fmt::format("expert {}", e)] =
          fmt::format("{} row{}; grouped launch", count, count == 1 ? "" : "s");
    }
  }
}

}  // namespace nvdet::cuda
