// The MoE block on the four CPU backends: lib/backend/moe_pipeline.h fixes the steps; each flavor
// gives its GEMM and its combine order.
//
//  - cpu-reference: every GEMM accumulates in double (each output rounded once), SwiGLU and the
//    combine in double;
//  - cpu-invariant: the invariant GEMM per expert (a row's bits depend only on K, never on how
//    many rows its expert received), combine in ascending top-k rank in fp32: a row's result is
//    a function of the row alone;
//  - cpu-variant: a vendor-style fused MoE, planned by lib/ops/fused_moe_plan.h as an H200 would
//    plan it (132 SMs): the config from the tuned table's row nearest the batch's token count, the
//    blocks padded per expert (or one per token-expert pair in sparse batches), a split-K from
//    the grid where the row asks for one (so every expert's row count moves it), the routed
//    weight applied in fp32 and rounded to the dtype, and a combine whose rule follows the token
//    count. cuda-vendor-policy follows the same plan with its device GEMMs;
//  - cpu-portable: kernels/portable_ops.cuh's GEMM, combine in rank order: bitwise equal to
//    cuda-portable, which runs the same pipeline with its device GEMM.
// The router GEMM is each flavor's ordinary GEMM (cpu-variant's split-K follows the total rows).
#include "kernels/silu_mul.cuh"
#include "lib/backend/moe_pipeline.h"
#include "lib/ops/split_policies.h"
#include "lib/reference/cpu_kernels.h"

namespace nvdet::cpu {
namespace {

using Stage = MoeGemmSite::Stage;

// A flavor that runs its one GEMM at every site (router and experts alike) and combines in
// ascending top-k rank whatever the batch: cpu-reference, cpu-invariant and cpu-portable.
MoeKernels rank_order_kernels(HostTensor (*gemm)(const GemmArgs&, RunNotes*)) {
  MoeKernels k;
  k.gemm = [gemm](const GemmArgs& g, const MoeGemmSite&, RunNotes* n) { return gemm(g, n); };
  k.combine_order = [](int64_t) { return MoeCombineOrder::kRank; };
  return k;
}

}  // namespace

HostTensor reference_moe(const MoeArgs& args, RunNotes* notes) {
  MoeKernels k = rank_order_kernels(reference_gemm);
  k.in_double = true;
  return run_moe(args, k, notes);
}

HostTensor invariant_moe(const MoeArgs& args, RunNotes* notes) {
  MoeKernels k = rank_order_kernels(invariant_gemm);
  k.silu_mul = kernels::portable::silu_mul;
  return run_moe(args, k, notes);
}

HostTensor variant_moe(const MoeArgs& args, RunNotes* notes) {
  MoeKernels k;
  k.fused_plan = [](int64_t tokens, int experts, int top_k, int64_t width) {
    return plan_fused_moe(tokens, experts, top_k, width, kNotionalSmCount);
  };
  k.gemm = [](const GemmArgs& g, const MoeGemmSite& site, RunNotes* n) {
    if (site.stage == Stage::kRouter) return variant_gemm(g, n);
    // FP8 experts split into runs of whole 128-wide scale groups instead.
    if (g.is_fp8()) return variant_gemm_with_split_k(g, site.split_k, n);
    return variant_gemm_with_split_len(g, site.split_len, n);
  };
  k.silu_mul = kernels::portable::silu_mul;
  return run_moe(args, k, notes);
}

HostTensor portable_moe(const MoeArgs& args, RunNotes* notes) {
  MoeKernels k = rank_order_kernels(portable_gemm);
  k.silu_mul = kernels::portable::silu_mul;
  return run_moe(args, k, notes);
}

}  // namespace nvdet::cpu
