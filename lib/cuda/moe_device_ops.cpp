// op moe on the device, for every CUDA flavor but cuda-portable: the router GEMM (the flavor's
// own), the routing and sorted layout (kernels/moe_route.cu), the gather, the experts' GEMMs,
// SwiGLU and the combine, all enqueued on the stream with no host step between them, so
// `nvdet bench` times the device work.
//  - cuda-invariant: each stage's experts in one grouped launch of the invariant GEMM over the
//    experts' stacked weights; the combine in ascending top-k rank;
//  - cublas and the cuBLASLt flavors: one cuBLASLt GEMM per expert on its slice of the grouped
//    layout; the combine in ascending expert (the expert loop's order);
//  - cuda-vendor-policy: its fused plan (lib/ops/fused_moe_plan.h), each stage's experts in one
//    grouped launch of the invariant GEMM (the fused kernel's tile loop) per K part where the
//    plan splits K; the plan's combine.
// cuBLASLt takes each expert's row count from the host, and the fused plan follows the counts, so
// those calls route once when they are prepared and read the layout back (the launch routes
// again, to the same result).
//
// The bits are those of the host-driven pipeline (lib/backend/moe_pipeline.h) with the same
// GEMMs: the router GEMM is the same call; the routing row function is the host's; a grouped
// launch gives each row its per-expert call's bits; SwiGLU and the combines are the pipeline's
// arithmetic (the portable exp, products and sums each rounded, the experts' down outputs in
// fp32). tests/gpu_moe_test.cpp compares them, notes included.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include "kernels/decode_elementwise.cuh"
#include "kernels/gemm_invariant.cuh"
#include "kernels/moe_route_launch.cuh"
#include "lib/backend/moe_pipeline.h"
#include "lib/core/error.h"
#include "lib/cuda/cuda_ops.h"
#include "lib/cuda/elem_type.h"
#include "lib/cuda/gemm_settings.h"
#include "lib/ops/fused_moe_plan.h"

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

// The router GEMM, the routing and the gather: the front of every device MoE block. Copyable,
// so that a launch closure holds its own.
struct BlockFront {
  std::shared_ptr<PreparedCall> router;  // the flavor's own GEMM, as the host pipeline calls it
  float* logits = nullptr;
  kernels::MoeRouteOutputs route;
  const void* x_dev = nullptr;
  void* grouped_in = nullptr;
  int64_t rows = 0, hidden = 0, experts = 0, k = 0, routed = 0;
  size_t e = 0;
  bool norm = true;

  cudaError_t launch(cudaStream_t stream) const {
    cudaError_t st = router->launch(stream);
    if (st != cudaSuccess) return st;
    st = kernels::launch_moe_route(logits, static_cast<int>(rows), static_cast<int>(experts),
                                   static_cast<int>(k), norm, route, stream);
    if (st != cudaSuccess) return st;
    return kernels::launch_gather_rows(x_dev, route.row, routed, hidden * static_cast<int64_t>(e),
                                       grouped_in, stream);
  }
};

// What every device MoE block shares: the inputs on the device (the experts' weights stacked),
// the route's and the grouped layout's buffers (owned by m.call), the output, the front.
struct BlockSetup {
  MoeDeviceCall m;
  BlockFront front;
  DType t = DType::kBF16;
  int64_t inter = 0;
  const void *gate_up_stack = nullptr, *down_stack = nullptr;
  void *grouped_gu = nullptr, *grouped_act = nullptr, *grouped_out = nullptr, *out = nullptr;
  RunNotes router_notes;
};

std::unique_ptr<BlockSetup> setup_block(DeviceContext& ctx, CudaFlavor flavor, const MoeArgs& args,
                                        RunNotes* notes) {
  if (args.is_fp8() || args.x->dtype() == DType::kFP32) return nullptr;
  auto b = std::make_unique<BlockSetup>();
  const HostTensor& x = *args.x;
  b->t = x.dtype();
  b->front.rows = x.dim(0);
  b->front.hidden = x.dim(1);
  b->front.experts = args.router->dim(0);
  b->front.k = args.top_k;
  b->inter = args.down[0]->dim(1);
  b->front.routed = b->front.rows * b->front.k;
  b->front.e = dtype_size(b->t);
  b->front.norm = args.norm_topk_prob;
  if (b->front.experts > kernels::kGemmMaxGroups || b->front.routed >= INT32_MAX ||
      b->front.rows < 1 || b->front.routed * std::max(b->front.hidden, 2 * b->inter) >= INT32_MAX) {
    return nullptr;
  }
  std::vector<const HostTensor*> gate_up(args.gate_up.begin(), args.gate_up.end());
  std::vector<const HostTensor*> down(args.down.begin(), args.down.end());
  // Uploads first, the stacks after (never dropping the two inputs), then the inputs again: cache
  // hits, which drop nothing, so every pointer below stays valid.
  ctx.upload(x);
  ctx.upload(*args.router);
  b->gate_up_stack = stacked(ctx, gate_up, kStackedGateUp);
  b->down_stack = stacked(ctx, down, kStackedDown);
  b->front.x_dev = ctx.upload(x);
  const void* router_dev = ctx.upload(*args.router);

  PreparedCall& call = b->m.call;
  const auto own = [&call](double bytes) {
    call.owned.emplace_back(static_cast<size_t>(std::max(bytes, 1.0)));
    return call.owned.back().get();
  };
  const double routed = static_cast<double>(b->front.routed), e = static_cast<double>(b->front.e);
  b->front.logits = static_cast<float*>(own(b->front.rows * b->front.experts * 4.0));
  b->front.route.expert = static_cast<int32_t*>(own(routed * 4));
  b->front.route.weight = static_cast<float*>(own(routed * 4));
  b->front.route.offsets = static_cast<int32_t*>(own((b->front.experts + 2) * 4.0));
  b->front.route.row = static_cast<int32_t*>(own(routed * 4));
  b->front.route.position = static_cast<int32_t*>(own(routed * 4));
  b->front.route.counts = static_cast<int32_t*>(own(b->front.experts * 4.0));
  b->front.grouped_in = own(routed * b->front.hidden * e);
  b->grouped_gu = own(routed * 2 * b->inter * e);
  b->grouped_act = own(routed * b->inter * e);
  b->grouped_out = own(routed * b->front.hidden * 4);
  b->out = own(static_cast<double>(b->front.rows) * b->front.hidden * dtype_size(args.out_dtype));

  GemmOperands r;
  r.a = b->front.x_dev;
  r.w = router_dev;
  r.out = b->front.logits;
  r.m = b->front.rows;
  r.n = b->front.experts;
  r.k = b->front.hidden;
  r.dtype = b->t;
  r.out_dtype = DType::kFP32;
  r.w_uid = args.router->uid();
  b->front.router = std::make_shared<PreparedCall>(
      prepare_gemm_device(ctx, flavor, r, notes ? &b->router_notes : nullptr));

  call.output = b->out;
  call.out_dtype = args.out_dtype;
  call.out_shape = {b->front.rows, b->front.hidden};
  b->m.offsets = b->front.route.offsets;
  b->m.expert = b->front.route.expert;
  b->m.logits = b->front.logits;
  b->m.experts = b->front.experts;
  if (notes) {
    const std::string plan = gemm_plan_summary(b->router_notes);
    (*notes)["router"] = fmt::format("{} rows{}", b->front.rows, plan.empty() ? "" : "; " + plan);
  }
  return b;
}

// The host's sentence for a router logit that is not finite, from the flagged row's logits.
[[noreturn]] void refuse_router_row(const MoeDeviceCall& m, int64_t row) {
  std::vector<float> logits(static_cast<size_t>(m.experts));
  check(cudaMemcpy(logits.data(), m.logits + row * m.experts, logits.size() * 4,
                   cudaMemcpyDeviceToHost),
        "reading the router logits");
  const auto bad =
      std::find_if(logits.begin(), logits.end(), [](float v) { return !std::isfinite(v); });
  throw_runtime_error(
      fmt::format("MoE routing: router logit of row {}, expert {} is not finite ({})", row,
                  bad - logits.begin(), bad == logits.end() ? 0.0f : *bad));
}

template <class T>
std::vector<T> download(const T* src, size_t n) {
  std::vector<T> out(n);
  check(cudaMemcpy(out.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost),
        "reading the MoE route");
  return out;
}

// The route on the host, for the flavors whose GEMMs take each expert's row count from there:
// the block routed once now (the launch routes again, to the same result: the inputs are the
// call's own), its layout's offsets and each row's experts read back, and the experts a probed
// row selects. A row with a non-finite router logit is refused with the host's sentence.
struct HostRoute {
  std::vector<int32_t> offsets, expert;
  std::set<int32_t> noted;
};

HostRoute route_now(DeviceContext& ctx, const BlockSetup& b, const MoeArgs& args) {
  const BlockFront& f = b.front;
  check(f.launch(ctx.stream()), "routing the MoE block");
  ctx.synchronize();
  HostRoute r;
  r.offsets = download(f.route.offsets, f.experts + 2);
  if (r.offsets.back() != 0) refuse_router_row(b.m, r.offsets.back() - 1);
  r.expert = download(f.route.expert, static_cast<size_t>(f.routed));
  for (int64_t row : args.noted_rows) {
    for (int j = 0; j < f.k; ++j) r.noted.insert(r.expert[row * f.k + j]);
  }
  return r;
}

}  // namespace

std::optional<MoeDeviceCall> prepare_invariant_moe_device(DeviceContext& ctx, const MoeArgs& args,
                                                          RunNotes* notes) {
  std::unique_ptr<BlockSetup> b = setup_block(ctx, CudaFlavor::kInvariant, args, notes);
  if (!b) return std::nullopt;
  const BlockFront& f = b->front;
  const kernels::GemmDevice device = gemm_device(ctx);
  kernels::GemmGroupedProblem gu, dn;
  gu.a = f.grouped_in;
  gu.w = b->gate_up_stack;
  gu.out = b->grouped_gu;
  gu.group_rows = f.route.offsets;
  gu.groups = static_cast<int>(f.experts);
  gu.max_rows = static_cast<int>(f.routed);
  gu.n = static_cast<int>(2 * b->inter);
  gu.k = static_cast<int>(f.hidden);
  gu.in_type = gu.out_type = elem_type(b->t);
  dn = gu;
  dn.a = b->grouped_act;
  dn.w = b->down_stack;
  dn.out = b->grouped_out;
  dn.n = static_cast<int>(f.hidden);
  dn.k = static_cast<int>(b->inter);
  dn.out_type = kernels::ElemType::kFP32;
  if (!kernels::gemm_invariant_grouped_supported(gu, device) ||
      !kernels::gemm_invariant_grouped_supported(dn, device)) {
    return std::nullopt;
  }
  const int config = forced_wgmma_config(), ctas = forced_gemm_ctas();
  const kernels::ElemType t = elem_type(b->t), out_type = elem_type(args.out_dtype);
  void *gu_out = b->grouped_gu, *act = b->grouped_act, *y = b->grouped_out, *out = b->out;
  const int64_t inter = b->inter;
  b->m.call.launch = [f = b->front, gu, dn, device, config, ctas, t, out_type, gu_out, act, y, out,
                      inter](cudaStream_t stream) {
    cudaError_t st = f.launch(stream);
    if (st != cudaSuccess) return st;
    st = kernels::gemm_invariant_grouped_launch(gu, device, config, ctas, stream);
    if (st != cudaSuccess) return st;
    st = kernels::launch_swiglu(t, gu_out, act, f.routed, inter, stream);
    if (st != cudaSuccess) return st;
    st = kernels::gemm_invariant_grouped_launch(dn, device, config, ctas, stream);
    if (st != cudaSuccess) return st;
    return kernels::launch_moe_combine_typed(kernels::ElemType::kFP32, out_type, y,
                                             f.route.position, f.route.weight, f.rows, f.k,
                                             f.hidden, out, stream);
  };
  if (notes) {
    (*notes)["combine"] = "ascending top-k rank";
    const auto tile = [](int c) {
      const kernels::GemmWgmmaConfig& w = kernels::kGemmWgmmaConfigs[c];
      return fmt::format("{}x{}", w.tile_m, w.tile_n);
    };
    (*notes)["moe_device_steps"] = fmt::format(
        "router GEMM, routing, gather, SwiGLU and combine on the device; each stage's experts in "
        "one grouped launch of the invariant GEMM (gate_up tile {}, down tile {})",
        tile(kernels::gemm_invariant_grouped_config(gu, config)),
        tile(kernels::gemm_invariant_grouped_config(dn, config)));
  }
  return std::move(b->m);
}

std::optional<MoeDeviceCall> prepare_expert_loop_moe_device(DeviceContext& ctx, CudaFlavor flavor,
                                                            const MoeArgs& args, RunNotes* notes) {
  std::unique_ptr<BlockSetup> b = setup_block(ctx, flavor, args, notes);
  if (!b) return std::nullopt;
  const BlockFront& f = b->front;
  const HostRoute route = route_now(ctx, *b, args);
  const std::vector<int32_t>& offsets = route.offsets;
  const std::vector<int32_t>& expert = route.expert;
  const size_t routed = static_cast<size_t>(f.routed);
  const std::vector<int32_t> position = download(f.route.position, routed);
  const std::vector<float> weight = download(f.route.weight, routed);
  // The loop's combine order: each row's k outputs in ascending expert (the order in which an
  // expert loop adds each expert's weighted output into its rows), as lib/backend/moe_pipeline.h
  // orders MoeCombineOrder::kSortedLayout.
  std::vector<int32_t> slots(routed);
  std::vector<float> weights(routed);
  std::vector<int> ranks(static_cast<size_t>(f.k));
  for (int64_t r = 0; r < f.rows; ++r) {
    for (int j = 0; j < f.k; ++j) ranks[j] = j;
    std::sort(ranks.begin(), ranks.end(),
              [&](int a, int c) { return expert[r * f.k + a] < expert[r * f.k + c]; });
    for (int i = 0; i < f.k; ++i) {
      slots[r * f.k + i] = position[r * f.k + ranks[i]];
      weights[r * f.k + i] = weight[r * f.k + ranks[i]];
    }
  }
  b->m.call.owned.push_back(ctx.upload_array(slots.data(), routed * sizeof(int32_t)));
  const auto* sorted_slots = static_cast<const int32_t*>(b->m.call.owned.back().get());
  b->m.call.owned.push_back(ctx.upload_array(weights.data(), routed * sizeof(float)));
  const auto* sorted_weights = static_cast<const float*>(b->m.call.owned.back().get());

  const std::set<int32_t>& noted = route.noted;
  const size_t e = f.e;
  const int64_t hidden = f.hidden, inter = b->inter;
  std::vector<std::shared_ptr<PreparedCall>> gate_up, down;
  for (int32_t x = 0; x < f.experts; ++x) {
    const int64_t begin = offsets[x], count = offsets[x + 1] - begin;
    if (count == 0) continue;
    const bool note = notes && noted.count(x) > 0;
    RunNotes gu_notes, dn_notes;
    GemmOperands g;
    g.a = static_cast<const std::byte*>(f.grouped_in) + begin * hidden * e;
    g.w = static_cast<const std::byte*>(b->gate_up_stack) + x * 2 * inter * hidden * e;
    g.out = static_cast<std::byte*>(b->grouped_gu) + begin * 2 * inter * e;
    g.m = count;
    g.n = 2 * inter;
    g.k = hidden;
    g.dtype = g.out_dtype = b->t;
    gate_up.push_back(std::make_shared<PreparedCall>(
        prepare_gemm_device(ctx, flavor, g, note ? &gu_notes : nullptr)));
    GemmOperands d;
    d.a = static_cast<const std::byte*>(b->grouped_act) + begin * inter * e;
    d.w = static_cast<const std::byte*>(b->down_stack) + x * hidden * inter * e;
    d.out = static_cast<std::byte*>(b->grouped_out) + begin * hidden * sizeof(float);
    d.m = count;
    d.n = hidden;
    d.k = inter;
    d.dtype = b->t;
    d.out_dtype = DType::kFP32;
    down.push_back(std::make_shared<PreparedCall>(
        prepare_gemm_device(ctx, flavor, d, note ? &dn_notes : nullptr)));
    if (!note) continue;
    // The host pipeline's note for an expert a probed row selects, word for word.
    std::string text = fmt::format("{} row{}", count, count == 1 ? "" : "s");
    if (const std::string p = gemm_plan_summary(gu_notes); !p.empty()) text += "; gate_up " + p;
    if (const std::string p = gemm_plan_summary(dn_notes); !p.empty()) text += "; down " + p;
    (*notes)[fmt::format("expert {}", x)] = text;
  }
  const kernels::ElemType t = elem_type(b->t), out_type = elem_type(args.out_dtype);
  void *gu_out = b->grouped_gu, *act = b->grouped_act, *y = b->grouped_out, *out = b->out;
  b->m.call.launch = [f = b->front, gate_up, down, t, out_type, gu_out, act, y, out, inter,
                      sorted_slots, sorted_weights](cudaStream_t stream) {
    cudaError_t st = f.launch(stream);
    if (st != cudaSuccess) return st;
    for (const auto& c : gate_up) {
      if ((st = c->launch(stream)) != cudaSuccess) return st;
    }
    st = kernels::launch_swiglu(t, gu_out, act, f.routed, inter, stream);
    if (st != cudaSuccess) return st;
    for (const auto& c : down) {
      if ((st = c->launch(stream)) != cudaSuccess) return st;
    }
    return kernels::launch_moe_combine_typed(kernels::ElemType::kFP32, out_type, y, sorted_slots,
                                             sorted_weights, f.rows, f.k, f.hidden, out, stream);
  };
  if (notes) {
    (*notes)["combine"] = "sorted layout (ascending expert)";
    (*notes)["moe_device_steps"] =
        "router GEMM, routing, gather, SwiGLU and combine on the device; one cuBLASLt GEMM per "
        "expert that received rows, sized from the route read back once when the call is prepared";
  }
  return std::move(b->m);
}

namespace {

// One stage of cuda-vendor-policy's fused plan on the device, as the host pipeline's
// fused_plan_gemm computes it (cuda_backend.cpp), every expert at once: the fused kernel's tile
// loop, which walks K in one fixed order, is the invariant GEMM's grouped launch (each row the bits
// of the per-expert invariant call). Where the plan splits K, one grouped launch per K part (A's
// part copied out of the grouped layout on every launch, the stacked W's part once, here) into fp32
// parts, added by the fixed tree and rounded once. `a` is the grouped layout [routed, depth], `w`
// the experts' stacked weights [experts * n, depth]. The enqueued steps go to `steps`, buffers to
// `call`; the grouped tile's name to `tile`. False where the grouped launch does not run here.
bool plan_fused_stage(DeviceContext& ctx, PreparedCall& call,
                      std::vector<std::function<cudaError_t(cudaStream_t)>>& steps,
                      const BlockFront& f, const void* a, const void* w, void* out, int64_t n,
                      int64_t depth, DType t, DType out_dtype, int split_k, int64_t split_len,
                      std::string* tile) {
  const kernels::GemmDevice device = gemm_device(ctx);
  const int config = forced_wgmma_config(), ctas = forced_gemm_ctas();
  const int64_t parts = split_k <= 1 ? 1 : (depth + split_len - 1) / split_len;
  const int64_t len = parts == 1 ? depth : split_len;
  kernels::GemmGroupedProblem g;
  g.group_rows = f.route.offsets;
  g.groups = static_cast<int>(f.experts);
  g.max_rows = static_cast<int>(f.routed);
  g.n = static_cast<int>(n);
  g.in_type = elem_type(t);
  g.out_type = parts == 1 ? elem_type(out_dtype) : kernels::ElemType::kFP32;
  // Every part's length (the last may be shorter) must be one the grouped launch takes.
  for (int64_t k0 = 0; k0 < depth; k0 += len) {
    g.k = static_cast<int>(std::min(depth, k0 + len) - k0);
    g.a = a;  // the parts' copies are allocated with the same alignment
    g.w = w;
    g.out = out;
    if (!kernels::gemm_invariant_grouped_supported(g, device)) return false;
  }
  g.k = static_cast<int>(len);
  const kernels::GemmWgmmaConfig& c =
      kernels::kGemmWgmmaConfigs[kernels::gemm_invariant_grouped_config(g, config)];
  *tile = fmt::format("{}x{}", c.tile_m, c.tile_n);
  if (parts == 1) {
    g.a = a;
    g.w = w;
    g.out = out;
    g.k = static_cast<int>(depth);
    steps.push_back([g, device, config, ctas](cudaStream_t s) {
      return kernels::gemm_invariant_grouped_launch(g, device, config, ctas, s);
    });
    return true;
  }
  const size_t e = dtype_size(t);
  // Each part's output 256-byte aligned.
  const int64_t stride = (f.routed * n + 63) / 64 * 64;
  call.owned.emplace_back(static_cast<size_t>(parts * stride) * sizeof(float));
  auto* partial = static_cast<float*>(call.owned.back().get());
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t k0 = p * len, part_len = std::min(depth, k0 + len) - k0;
    call.owned.emplace_back(static_cast<size_t>(f.routed * part_len) * e);
    void* a_part = call.owned.back().get();
    call.owned.emplace_back(static_cast<size_t>(f.experts * n * part_len) * e);
    void* w_part = call.owned.back().get();
    check(kernels::launch_copy_columns16(static_cast<const std::byte*>(w) + k0 * e, depth,
                                         f.experts * n, part_len, w_part, ctx.stream()),
          "cutting the experts' weights along K");
    const void* a_src = static_cast<const std::byte*>(a) + k0 * e;
    const int64_t routed = f.routed;
    steps.push_back([a_src, depth, routed, part_len, a_part](cudaStream_t s) {
      return kernels::launch_copy_columns16(a_src, depth, routed, part_len, a_part, s);
    });
    kernels::GemmGroupedProblem part = g;
    part.a = a_part;
    part.w = w_part;
    part.out = partial + p * stride;
    part.k = static_cast<int>(part_len);
    steps.push_back([part, device, config, ctas](cudaStream_t s) {
      return kernels::gemm_invariant_grouped_launch(part, device, config, ctas, s);
    });
  }
  const kernels::ElemType out_type = elem_type(out_dtype);
  const int64_t elems = f.routed * n;
  steps.push_back([partial, parts, elems, stride, out_type, out](cudaStream_t s) {
    return kernels::launch_sum_k_parts(partial, static_cast<int>(parts), elems, stride, out_type,
                                       out, s);
  });
  return true;
}

}  // namespace

std::optional<MoeDeviceCall> prepare_fused_plan_moe_device(DeviceContext& ctx, const MoeArgs& args,
                                                           RunNotes* notes) {
  std::unique_ptr<BlockSetup> b = setup_block(ctx, CudaFlavor::kVendorPolicy, args, notes);
  if (!b) return std::nullopt;
  const BlockFront& f = b->front;
  // The plan follows every expert's row count.
  const HostRoute route = route_now(ctx, *b, args);
  const std::vector<int32_t>& offsets = route.offsets;
  std::vector<int32_t> counts(static_cast<size_t>(f.experts));
  for (int64_t x = 0; x < f.experts; ++x) counts[x] = offsets[x + 1] - offsets[x];
  const FusedMoePlan plan = plan_fused_moe(f.rows, static_cast<int>(f.experts),
                                           static_cast<int>(f.k), b->inter, ctx.sm_count());
  const int64_t hidden = f.hidden, inter = b->inter;
  const int gu_split = plan.split_k(counts, 2 * inter, hidden);
  const int dn_split = plan.split_k(counts, hidden, inter);
  const int64_t gu_len = plan.split_len(gu_split, hidden), dn_len = plan.split_len(dn_split, inter);

  std::vector<std::function<cudaError_t(cudaStream_t)>> gate_up, down;
  std::string gu_tile, dn_tile;
  if (!plan_fused_stage(ctx, b->m.call, gate_up, f, f.grouped_in, b->gate_up_stack, b->grouped_gu,
                        2 * inter, hidden, b->t, b->t, gu_split, gu_len, &gu_tile) ||
      !plan_fused_stage(ctx, b->m.call, down, f, b->grouped_act, b->down_stack, b->grouped_out,
                        hidden, inter, b->t, DType::kFP32, dn_split, dn_len, &dn_tile)) {
    return std::nullopt;
  }
  if (notes) {
    const RunNotes gu_notes = fused_plan_gemm_notes(gu_split, gu_len);
    const RunNotes dn_notes = fused_plan_gemm_notes(dn_split, dn_len);
    for (int32_t x : route.noted) {
      (*notes)[fmt::format("expert {}", x)] =
          moe_expert_note(counts[x], plan.padded_rows(counts[x]), gu_notes, dn_notes);
    }
  }
  const kernels::ElemType t = elem_type(b->t), out_type = elem_type(args.out_dtype);
  const kernels::FusedCombineRule rule = plan.combine == FusedMoeCombine::kFp32TreeSum
                                             ? kernels::FusedCombineRule::kTree
                                             : kernels::FusedCombineRule::kSlotOrder;
  void *gu_out = b->grouped_gu, *act = b->grouped_act, *out = b->out;
  const auto* y = static_cast<const float*>(b->grouped_out);
  b->m.call.launch = [f = b->front, gate_up, down, t, out_type, rule, gu_out, act, y, out,
                      inter](cudaStream_t stream) {
    cudaError_t st = f.launch(stream);
    if (st != cudaSuccess) return st;
    for (const auto& step : gate_up) {
      if ((st = step(stream)) != cudaSuccess) return st;
    }
    st = kernels::launch_swiglu(t, gu_out, act, f.routed, inter, stream);
    if (st != cudaSuccess) return st;
    for (const auto& step : down) {
      if ((st = step(stream)) != cudaSuccess) return st;
    }
    return kernels::launch_fused_moe_combine(t, out_type, rule, y, f.route.position, f.route.weight,
                                             f.rows, f.k, f.hidden, out, stream);
  };
  if (notes) {
    (*notes)["fused_moe"] = fused_plan_note(plan, counts, gu_split, dn_split);
    (*notes)["combine"] = fused_combine_note(plan, b->t);
    (*notes)["moe_device_steps"] = fmt::format(
        "router GEMM, routing, gather, SwiGLU and combine on the device; each stage's experts in "
        "one grouped launch of the invariant GEMM's tile loop (gate_up tile {}, down tile {}) per "
        "K part, the parts added on the device; the plan made from the route read back once when "
        "the call is prepared",
        gu_tile, dn_tile);
  }
  return std::move(b->m);
}

void describe_moe_device_run(DeviceContext& ctx, const MoeDeviceCall& m, const MoeArgs& args,
                             RunNotes* notes) {
  std::vector<int32_t> offsets(static_cast<size_t>(m.experts) + 2);
  ctx.synchronize();
  check(cudaMemcpy(offsets.data(), m.offsets, offsets.size() * 4, cudaMemcpyDeviceToHost),
        "reading the MoE layout");
  if (offsets.back() != 0) refuse_router_row(m, offsets.back() - 1);
  if (!notes || args.noted_rows.empty()) return;
  const int64_t k = args.top_k;
  for (int64_t r : args.noted_rows) {
    std::vector<int32_t> picks(static_cast<size_t>(k));
    check(cudaMemcpy(picks.data(), m.expert + r * k, picks.size() * 4, cudaMemcpyDeviceToHost),
          "reading the MoE route");
    for (int32_t e : picks) {
      const std::string key = fmt::format("expert {}", e);
      if (notes->count(key) > 0) continue;  // noted with its calls' plans when prepared
      const int32_t count = offsets[e + 1] - offsets[e];
      (*notes)[key] = fmt::format("{} row{}; grouped launch", count, count == 1 ? "" : "s");
    }
  }
}

}  // namespace nvdet::cuda
