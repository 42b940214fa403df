#include "lib/backend/moe_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <set>

namespace nvdet {
namespace {

// The rows of x routed to one expert, in the sorted layout's order (ascending row).
HostTensor gather_rows(const HostTensor& x, const MoeExpertRows& grouped, int expert) {
  const int64_t begin = grouped.offsets[expert], count = grouped.offsets[expert + 1] - begin;
  const int64_t w = x.dim(1);
  const size_t row_bytes = static_cast<size_t>(w) * dtype_size(x.dtype());
  HostTensor out(x.dtype(), {count, w});
  std::byte* dst = out.mutable_data();
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst + i * row_bytes, x.data() + grouped.row[begin + i] * row_bytes, row_bytes);
  }
  return out;
}

// h[r, j] = silu(gate[r, j]) * up[r, j] from gate_up [rows, 2I] (gate columns first), rounded to
// gate_up's dtype: fp32 with kernels.silu_mul, or double for the reference.
HostTensor swiglu(const HostTensor& gate_up, const MoeKernels& kernels) {
  const int64_t rows = gate_up.dim(0), inter = gate_up.dim(1) / 2;
  HostTensor out(gate_up.dtype(), {rows, inter});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < inter; ++j) {
      const float g = gate_up.get(r * 2 * inter + j), u = gate_up.get(r * 2 * inter + inter + j);
      if (kernels.in_double) {
        const double gd = g;
        out.set(r * inter + j, static_cast<float>(gd / (1.0 + std::exp(-gd)) * double{u}));
      } else {
        out.set(r * inter + j, kernels.silu_mul(g, u));
      }
    }
  }
  return out;
}

// A grouped GEMM may write its outputs in the activations' dtype: widened exactly to fp32.
HostTensor to_fp32(const HostTensor& t) {
  HostTensor out(DType::kFP32, t.shape());
  float* o = out.mutable_data_as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) o[i] = t.get(i);
  return out;
}

std::string order_name(MoeCombineOrder order) {
  return order == MoeCombineOrder::kRank ? "ascending top-k rank"
                                         : "sorted layout (ascending expert)";
}

// A fused plan's combine: each of row r's k down outputs weighted in fp32 and rounded to the
// activations' dtype (the down GEMM's epilogue), then added by the plan's rule in slot order.
void fused_combine(const FusedMoePlan& plan, const MoeRoute& route, const MoeExpertRows& grouped,
                   const std::vector<HostTensor>& y, DType act, HostTensor& out) {
  const int64_t rows = out.dim(0), hidden = out.dim(1);
  const int k = route.top_k;
  std::vector<float> products(static_cast<size_t>(k));
  std::vector<const float*> slots(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < k; ++j) {
      const int32_t e = route.expert[r * k + j];
      const int64_t slot = grouped.position[r * k + j] - grouped.offsets[e];
      slots[j] = y[e].data_as<float>() + slot * hidden;
    }
    for (int64_t c = 0; c < hidden; ++c) {
      for (int j = 0; j < k; ++j) {
        products[j] = round_to_dtype(route.weight[r * k + j] * slots[j][c], act);
      }
      out.set(r * hidden + c, fused_moe_combine(plan.combine, products.data(), k, act));
    }
  }
}

}  // namespace

std::string gemm_plan_summary(const RunNotes& gemm_notes) {
  std::string out;
  for (const char* key : {"tile", "split_k", "split_len", "algo_id", "chunk_k", "problems"}) {
    const auto it = gemm_notes.find(key);
    if (it == gemm_notes.end()) continue;
    out += (out.empty() ? "" : ", ") + std::string(key) + " " + it->second;
  }
  return out;
}

std::string moe_expert_note(int64_t rows, int64_t padded, const RunNotes& gate_up,
                            const RunNotes& down) {
  std::string text = fmt::format("{} row{}", rows, rows == 1 ? "" : "s");
  if (padded >= 0) text += fmt::format(" -> {}", padded);
  if (const std::string s = gemm_plan_summary(gate_up); !s.empty()) text += "; gate_up " + s;
  if (const std::string s = gemm_plan_summary(down); !s.empty()) text += "; down " + s;
  return text;
}

std::string fused_plan_note(const FusedMoePlan& plan, const std::vector<int32_t>& expert_rows,
                            int gate_up_split, int down_split) {
  return fmt::format("{}; split_k gate_up {}, down {} ({} blocks, {} SMs)", plan.describe(),
                     gate_up_split, down_split, plan.blocks(expert_rows), plan.num_sms);
}

std::string fused_combine_note(const FusedMoePlan& plan, DType activations) {
  return fmt::format("{}; routed weight applied in fp32 in the down epilogue, rounded to {}",
                     fused_moe_combine_name(plan.combine), dtype_name(activations));
}

RunNotes fused_plan_gemm_notes(int split_k, int64_t split_len) {
  RunNotes n;
  if (split_k <= 1) return n;
  n["split_k"] = std::to_string(split_k);
  n["split_len"] = std::to_string(split_len);
  n["split_reduce"] = "fp32 parts added by a fixed tree";
  return n;
}

HostTensor run_moe(const MoeArgs& args, const MoeKernels& kernels, RunNotes* notes) {
  const HostTensor& x = *args.x;
  const int64_t rows = x.dim(0), hidden = x.dim(1);
  const int experts = static_cast<int>(args.router->dim(0));
  const int k = args.top_k;
  const int64_t assignments = rows * k;

  // Router logits in fp32, whatever the activations' dtype (the routing reads fp32).
  RunNotes router_notes;
  HostTensor logits = kernels.gemm(GemmArgs{&x, args.router, nullptr, DType::kFP32, false},
                                   {MoeGemmSite::Stage::kRouter, -1, rows, rows, assignments},
                                   notes ? &router_notes : nullptr);
  if (logits.dtype() != DType::kFP32) logits = to_fp32(logits);
  const MoeRoute route = route_tokens(
      std::span<const float>(logits.data_as<float>(), static_cast<size_t>(rows * experts)),
      static_cast<int>(rows), experts, k, args.norm_topk_prob);
  const MoeExpertRows grouped = group_rows_by_expert(route, experts);
  // A fused plan follows the batch: its config from the token count, its split-K from the grid
  // that every expert's row count makes.
  const int64_t width = args.is_fp8() ? args.fp8_down[0]->cols : args.down[0]->dim(1);
  std::optional<FusedMoePlan> plan;
  std::vector<int32_t> counts(experts);
  for (int e = 0; e < experts; ++e) counts[e] = grouped.offsets[e + 1] - grouped.offsets[e];
  if (kernels.fused_plan) plan = kernels.fused_plan(rows, experts, k, width);
  const auto stage_split = [&](MoeGemmSite& site, int64_t n, int64_t depth) {
    if (!plan) return;
    site.split_k = plan->split_k(counts, n, depth);
    site.split_len = plan->split_len(site.split_k, depth);
  };

  std::set<int32_t> noted;
  for (int64_t r : args.noted_rows) {
    for (int j = 0; j < k; ++j) noted.insert(route.expert[r * k + j]);
  }

  // Each stage over every expert that received rows, in ascending expert order.
  std::vector<int32_t> active;
  for (int e = 0; e < experts; ++e) {
    if (grouped.offsets[e + 1] > grouped.offsets[e]) active.push_back(e);
  }
  const size_t n = active.size();
  std::vector<RunNotes> gu_notes(n), down_notes(n);
  std::vector<RunNotes*> gu_note_ptrs(n, nullptr), down_note_ptrs(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    if (notes && noted.count(active[i]) > 0) {
      gu_note_ptrs[i] = &gu_notes[i];
      down_note_ptrs[i] = &down_notes[i];
    }
  }
  const auto stage = [&](MoeGemmSite::Stage st, const std::vector<GemmArgs>& calls,
                         const std::vector<RunNotes*>& note_ptrs) {
    std::vector<MoeGemmSite> sites;
    for (size_t i = 0; i < n; ++i) {
      const int32_t e = active[i];
      MoeGemmSite site{st, e, counts[e], rows, assignments};
      if (st == MoeGemmSite::Stage::kGateUp) stage_split(site, 2 * width, hidden);
      else stage_split(site, hidden, width);
      sites.push_back(site);
    }
    if (kernels.gemm_group) return kernels.gemm_group(calls, sites, note_ptrs);
    std::vector<HostTensor> outs;
    for (size_t i = 0; i < n; ++i) outs.push_back(kernels.gemm(calls[i], sites[i], note_ptrs[i]));
    return outs;
  };
  std::vector<HostTensor> xe(n);
  std::vector<GemmArgs> calls(n);
  // FP8 experts: each stage's activations are quantised as one input of all its (token, top-k)
  // rows, as a fused MoE kernel quantises its whole input buffer: with dynamic_tensor every
  // expert's GEMM takes that one stage-wide scale (fp8_stage_scheme), noted for the stage.
  const auto stage_scheme = [&](const std::vector<const HostTensor*>& inputs, const char* name) {
    const Fp8Scheme scheme = fp8_stage_scheme(args.fp8, inputs);
    if (notes && scheme.stage_scale > 0)
      (*notes)[std::string(name) + " act_scale"] = fp8_stage_note(scheme, inputs);
    return scheme;
  };
  const auto expert_call = [&](const HostTensor& input, size_t i, bool down, DType out,
                               const Fp8Scheme& scheme) {
    const int32_t e = active[i];
    if (!args.is_fp8())
      return GemmArgs{&input, (down ? args.down : args.gate_up)[e], nullptr, out, false};
    return GemmArgs{
        &input, nullptr, nullptr, out, false, (down ? args.fp8_down : args.fp8_gate_up)[e], scheme};
  };
  for (size_t i = 0; i < n; ++i) xe[i] = gather_rows(x, grouped, active[i]);
  const Fp8Scheme gate_up_scheme = args.is_fp8() ? stage_scheme({&x}, "gate_up") : args.fp8;
  for (size_t i = 0; i < n; ++i) calls[i] = expert_call(xe[i], i, false, x.dtype(), gate_up_scheme);
  const std::vector<HostTensor> gu = stage(MoeGemmSite::Stage::kGateUp, calls, gu_note_ptrs);
  std::vector<HostTensor> h(n);
  std::vector<const HostTensor*> h_parts;
  for (size_t i = 0; i < n; ++i) {
    h[i] = swiglu(gu[i], kernels);
    h_parts.push_back(&h[i]);
  }
  const Fp8Scheme down_scheme = args.is_fp8() ? stage_scheme(h_parts, "down") : args.fp8;
  for (size_t i = 0; i < n; ++i) calls[i] = expert_call(h[i], i, true, DType::kFP32, down_scheme);
  // y[e]: expert e's down-projection output in fp32, one row per entry of its sorted-layout range.
  std::vector<HostTensor> y(experts);
  std::vector<HostTensor> down = stage(MoeGemmSite::Stage::kDown, calls, down_note_ptrs);
  for (size_t i = 0; i < n; ++i) {
    const int32_t e = active[i];
    y[e] = down[i].dtype() == DType::kFP32 ? std::move(down[i]) : to_fp32(down[i]);
    if (gu_note_ptrs[i] == nullptr) continue;
    const int64_t count = grouped.offsets[e + 1] - grouped.offsets[e];
    (*notes)[fmt::format("expert {}", e)] =
        moe_expert_note(count, plan ? plan->padded_rows(count) : -1, gu_notes[i], down_notes[i]);
  }

  HostTensor out(args.out_dtype, {rows, hidden});
  if (plan) {
    fused_combine(*plan, route, grouped, y, x.dtype(), out);
    if (notes) {
      MoeGemmSite gu_site, down_site;
      stage_split(gu_site, 2 * width, hidden);
      stage_split(down_site, hidden, width);
      (*notes)["fused_moe"] = fused_plan_note(*plan, counts, gu_site.split_k, down_site.split_k);
      (*notes)["combine"] = fused_combine_note(*plan, x.dtype());
      const std::string router_plan = gemm_plan_summary(router_notes);
      (*notes)["router"] =
          fmt::format("{} rows{}", rows, router_plan.empty() ? "" : "; " + router_plan);
    }
    return out;
  }
  const MoeCombineOrder order =
      kernels.combine_order ? kernels.combine_order(rows) : MoeCombineOrder::kRank;
  std::vector<int> ranks(k);
  std::vector<float> acc(hidden);
  std::vector<double> acc_d(hidden);
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < k; ++j) ranks[j] = j;
    if (order == MoeCombineOrder::kSortedLayout) {
      std::sort(ranks.begin(), ranks.end(),
                [&](int a, int b) { return route.expert[r * k + a] < route.expert[r * k + b]; });
    }
    std::fill(acc.begin(), acc.end(), 0.0f);
    std::fill(acc_d.begin(), acc_d.end(), 0.0);
    for (int j : ranks) {
      const int32_t e = route.expert[r * k + j];
      const float w = route.weight[r * k + j];
      // Row r's rank-j output within y[e] (the sorted layout lists each expert's rows ascending).
      const int64_t slot = grouped.position[r * k + j] - grouped.offsets[e];
      const float* ye = y[e].data_as<float>() + slot * hidden;
      for (int64_t c = 0; c < hidden; ++c) {
        if (kernels.in_double) {
          acc_d[c] += double{w} * double{ye[c]};
        } else {
          const float product = w * ye[c];
          acc[c] = acc[c] + product;
        }
      }
    }
    for (int64_t c = 0; c < hidden; ++c) {
      out.set(r * hidden + c, kernels.in_double ? static_cast<float>(acc_d[c]) : acc[c]);
    }
  }
  if (notes) {
    const std::string plan = gemm_plan_summary(router_notes);
    (*notes)["router"] = fmt::format("{} rows{}", rows, plan.empty() ? "" : "; " + plan);
    (*notes)["combine"] = order_name(order);
  }
  return out;
}

}  // namespace nvdet
